"""Data made safe to print in a terminal: no rich markup, no control characters, bounded.

Everything the CLI prints that came from a file, a retriever or the store (ids, names,
notes, tags, questions, chunk text, error messages) goes through ``safe``:

- rich markup is escaped, so ``--note "uses [/] brackets"`` prints as typed instead of
  failing with ``MarkupError``;
- control characters (ANSI escape sequences, carriage returns, bidi overrides, lone
  surrogates) are shown as Python escapes (``\\x1b``), so data cannot recolour, move the
  cursor, retitle the terminal or crash the encoder;
- a value longer than ``MAX_DISPLAY_CHARS`` is cut, so a 1 MB id costs no time to print
  (``--json`` still gives the whole value).

>>> safe("uses [/] brackets")
'uses \\\\[/] brackets'
>>> safe("\\x1b[31mred\\x1b[0m")
'\\\\x1b[31mred\\\\x1b[0m'
>>> safe("x" * 1_000_000, limit=5)
'xxxxx… (1,000,000 chars)'
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_DISPLAY_CHARS", "safe"]

#: Longest value printed whole; longer ones are cut (``--json`` has them in full).
MAX_DISPLAY_CHARS = 500
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


@functools.cache
def _escape() -> Callable[[str], str]:
    """rich's markup escape, imported on the first print: ``--json`` needs no rich (issue 29.2)."""
    from rich.markup import escape

    return escape


def safe(value: Any, limit: int = MAX_DISPLAY_CHARS) -> str:
    """``value`` as text to print with rich: markup escaped, control characters shown, cut."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text):,} chars)"
    return _escape()(_CONTROL.sub(_visible, text))
