"""The one reader of text and JSONL files: encodings, line numbers, strict bounded JSON.

Every file ragmeter reads as text goes through here, so each one behaves the same:

- a UTF-8 byte-order mark is dropped; a byte that is not UTF-8 is an error naming
  its line and column (or, for corpus documents, an opt-in cp1252/latin-1 fallback);
- lines are split on ``"\\n"`` only (a ``"\\r"`` before it is dropped), so a U+2028
  inside a JSON string stays inside its line, and are numbered from 1;
- JSON is parsed strictly and with bounded resources: a duplicate key, ``NaN`` or
  ``Infinity``, an integer longer than :data:`MAX_INTEGER_DIGITS` digits or nesting
  deeper than :data:`MAX_NESTING_DEPTH` is an error naming the file and line.

Errors are raised as the caller's class (``GoldSetError``, ``CorpusError``...) with
the caller's ``kind`` word, so messages read ``gold set faq.jsonl line 12: ...``.

>>> import io
>>> from ragmeter.errors import GoldSetError
>>> lines = numbered_lines('{"id": "a"}\\r\\n\\n{"id": "b"}')
>>> [(n, r["id"]) for n, r in iter_jsonl(lines, "g.jsonl", "gold set", GoldSetError)]
[(1, 'a'), (3, 'b')]
"""

from __future__ import annotations

import codecs
import gzip
import json
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, NoReturn, cast

from ragmeter.errors import located

__all__ = [
    "FALLBACK_ENCODINGS",
    "MAX_INTEGER_DIGITS",
    "MAX_NESTING_DEPTH",
    "decode_text",
    "decode_utf8",
    "iter_jsonl",
    "nested_too_deep",
    "numbered_lines",
    "open_binary",
    "parse_json",
    "read_jsonl",
    "read_lines",
    "read_toml",
    "text_problem",
]

#: Integers with more digits than this are refused (Python's own int/str limit).
MAX_INTEGER_DIGITS = 4300
#: Lists and mappings nested deeper than this are refused: no gold item, document
#: or run line needs it, and deeper input only costs memory and recursion.
MAX_NESTING_DEPTH = 64
#: Tried in order when a corpus document is not UTF-8; latin-1 maps every byte.
FALLBACK_ENCODINGS = ("cp1252", "latin-1")

# C0 controls but tab and newline, DEL, and the C1 controls (category Cc).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def decode_utf8(
    data: bytes, path: object, kind: str, error: type[Exception], first_line: int = 1
) -> str:
    """Decode file bytes as UTF-8 (a BOM is dropped), naming the line of a bad byte.

    ``first_line`` is the line number of ``data``'s first line when it is one
    line of a file read as a stream.

    >>> from ragmeter.errors import GoldSetError
    >>> decode_utf8(b"\\xef\\xbb\\xbfq1", "q.tsv", "qrels", GoldSetError)
    'q1'
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as bad:
        line = data.count(b"\n", 0, bad.start) + first_line
        column = bad.start - (data.rfind(b"\n", 0, bad.start) + 1) + 1
        message = (
            f"not UTF-8 text (byte 0x{data[bad.start]:02x} at column {column}); save it as UTF-8"
        )
        raise error(located(kind, path, line, message)) from None


def decode_text(data: bytes) -> tuple[str, str]:
    """Decode a document: UTF-8 (BOM dropped), else cp1252, else latin-1.

    Returns the text and the encoding used, so the caller can report the fallback.

    >>> decode_text("café".encode("cp1252"))
    ('café', 'cp1252')
    """
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    for encoding in FALLBACK_ENCODINGS:
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte")  # pragma: no cover


def numbered_lines(text: str, first_line: int = 1) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of ``text``, split on ``"\\n"`` only, a trailing ``"\\r"`` dropped.

    >>> list(numbered_lines("a\\r\\nb\\u2028c"))
    [(1, 'a'), (2, 'b\\u2028c')]
    """
    for number, line in enumerate(text.split("\n"), first_line):
        yield number, line[:-1] if line.endswith("\r") else line


def open_binary(path: Path, kind: str, error: type[Exception]) -> IO[bytes]:
    """Open ``path`` for reading bytes (``.gz`` decompressed); failures are ``error``."""
    try:
        if path.suffix.lower() == ".gz":
            return cast(IO[bytes], gzip.open(path, "rb"))
        return path.open("rb")
    except OSError as problem:
        raise error(located(kind, path, None, f"cannot read it: {problem.strerror}")) from None


def read_lines(path: Path, kind: str, error: type[Exception]) -> Iterator[tuple[int, str]]:
    """Stream ``(line number, line)`` of a UTF-8 file (``.gz`` too), as :func:`numbered_lines`.

    A byte that is not UTF-8 names its line and column; a truncated ``.gz`` names
    the line it stopped at.
    """
    with open_binary(path, kind, error) as handle:
        number = 0
        try:
            # Binary iteration splits on b"\n" only, as numbered_lines does.
            for number, raw in enumerate(handle, 1):  # noqa: B007 - used after the loop on error
                line = decode_utf8(raw, path, kind, error, number)
                if line.endswith("\n"):
                    line = line[:-1]
                yield number, line[:-1] if line.endswith("\r") else line
        except (OSError, EOFError) as problem:  # a truncated or corrupt .gz
            raise error(located(kind, path, number + 1, f"cannot read it: {problem}")) from None


class _Refused(Exception):
    """Raised by the JSON hooks; becomes the caller's error with file and line."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"duplicate key {json.dumps(key, ensure_ascii=False)}")
            seen.add(key)
    return out


def _integer(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INTEGER_DIGITS:
        raise _Refused(f"an integer of {digits} digits (at most {MAX_INTEGER_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text} is out of range")
    return value


def _constant(name: str) -> NoReturn:
    raise _Refused(f"{name} is not a number JSON allows")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_int=_integer, parse_float=_float, parse_constant=_constant
)


def nested_too_deep(value: Any, limit: int = MAX_NESTING_DEPTH) -> bool:
    """True when lists and mappings in ``value`` nest deeper than ``limit`` (no recursion).

    >>> nested_too_deep([[1]], 2), nested_too_deep([[[1]]], 2)
    (False, True)
    """
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def parse_json(
    text: str, path: object, kind: str, error: type[Exception], line: int | None = None
) -> Any:
    """Parse one JSON document strictly (see the module docstring); failures are ``error``.

    ``line`` is where ``text`` starts in its file (JSONL); without it a syntax
    error names the line inside ``text``.

    >>> from ragmeter.errors import CorpusError
    >>> parse_json('{"a": 1, "a": 2}', "d.jsonl", "corpus", CorpusError, 4)
    Traceback (most recent call last):
    ...
    ragmeter.errors.CorpusError: corpus d.jsonl line 4: duplicate key "a"
    """
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as problem:
        where = problem.lineno if line is None else line + problem.lineno - 1
        message = f"invalid JSON at column {problem.colno}: {problem.msg}"
        raise error(located(kind, path, where, message)) from None
    except _Refused as problem:
        raise error(located(kind, path, line, str(problem))) from None
    except RecursionError:
        message = f"nested more than {MAX_NESTING_DEPTH} levels deep"
        raise error(located(kind, path, line, message)) from None
    # Counting brackets is cheap; only text that could be too deep is walked.
    if (
        isinstance(value, dict | list)
        and text.count("[") + text.count("{") > MAX_NESTING_DEPTH
        and nested_too_deep(value)
    ):
        message = f"nested more than {MAX_NESTING_DEPTH} levels deep"
        raise error(located(kind, path, line, message))
    return value


def iter_jsonl(
    lines: Iterable[tuple[int, str]],
    path: object,
    kind: str,
    error: type[Exception],
    *,
    objects: bool = True,
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line; ``objects`` requires JSON objects."""
    for number, line in lines:
        line = line.strip()
        if not line:
            continue
        value = parse_json(line, path, kind, error, number)
        if objects and not isinstance(value, dict):
            message = f"expected a JSON object, got {type(value).__name__}"
            raise error(located(kind, path, number, message))
        yield number, value


def read_jsonl(
    path: Path, kind: str, error: type[Exception], *, objects: bool = True
) -> Iterator[tuple[int, Any]]:
    """Stream the values of a JSONL file (``.gz`` too): :func:`read_lines` + :func:`iter_jsonl`.

    >>> from ragmeter.errors import CorpusError
    >>> next(read_jsonl(Path("corpus.jsonl"), "corpus", CorpusError))  # doctest: +SKIP
    (1, {'id': 'a', 'text': 'Alpha.'})
    """
    return iter_jsonl(read_lines(path, kind, error), path, kind, error, objects=objects)


def read_toml(path: Path, kind: str, error: type[Exception]) -> dict[str, Any] | None:
    """The tables of a TOML file (BOM dropped), or None when the file does not exist.

    >>> from ragmeter.errors import ConfigError
    >>> read_toml(Path("/nonexistent/ragmeter.toml"), "config", ConfigError) is None
    True
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as problem:
        raise error(located(kind, path, None, f"cannot read: {problem}")) from None
    text = decode_utf8(raw, path, kind, error)
    import tomllib  # only with a file to parse: most commands have none (issue 29.2)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as problem:
        raise error(located(kind, path, None, f"not valid TOML: {problem}")) from None


def text_problem(value: str, *, controls: bool = True) -> str | None:
    """Why ``value`` cannot be stored and printed safely, or None.

    Lone surrogates (``"\\ud800"`` from a JSON escape) cannot be encoded at all;
    with ``controls``, control characters other than tab and newline are refused
    too (they rewrite terminals and hide in ids).

    >>> text_problem("x\\ud800y")
    'holds a lone surrogate (U+D800) at character 2'
    >>> text_problem("a\\x1b[2Jb"), text_problem("a\\tb")
    ('holds a control character (U+001B) at character 2', None)
    """
    # The common cases, answered in C: isascii() is O(1), isprintable() one scan.
    if value.isascii() if not controls else value.isprintable():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as bad:
        code = ord(value[bad.start])
        return f"holds a lone surrogate (U+{code:04X}) at character {bad.start + 1}"
    found = _CONTROL.search(value) if controls else None
    if found is None:
        return None
    return (
        f"holds a control character (U+{ord(found.group()):04X}) at character {found.start() + 1}"
    )
