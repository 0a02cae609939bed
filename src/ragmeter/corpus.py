"""Load a corpus: a folder of Markdown/text files, a JSONL of documents, or a BEIR folder.

A corpus is the set of documents a reference pipeline indexes. Three shapes are read:

- a folder of ``.md``/``.markdown``/``.txt``/``.rst`` files: the document id is the
  POSIX path relative to the folder (``guides/install.md``), the title is the YAML
  front matter ``title:``, else the first Markdown heading, else the file stem;
- a ``.jsonl`` or ``.jsonl.gz`` file, one document per line:
  ``{"id" | "_id", "text", "title"?, "metadata"?}``;
- a BEIR folder (it holds ``corpus.jsonl`` or ``corpus.jsonl.gz``).

Real document dumps are messy, so a file that is not UTF-8 is decoded as cp1252
(then latin-1, which never fails) and documents with no text are skipped; both are
counted and summarised in ``Corpus.warnings`` (one line each) for the CLI to print.
Nothing here warns through :mod:`warnings`: the caller decides how to show them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ragmeter.documents import Document
from ragmeter.errors import CorpusError, located
from ragmeter.formats.beir import read_beir_corpus
from ragmeter.formats.text import decode_text, read_jsonl, text_problem

__all__ = ["TEXT_SUFFIXES", "Corpus", "load_corpus"]

#: File suffixes a corpus folder is scanned for (case-insensitive).
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".rst")

#: How many file names a warning line lists before "and N more".
_MAX_NAMES_IN_WARNING = 10

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_MATTER_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}[ \t]*$")


@dataclass(frozen=True)
class Corpus:
    """The documents of a corpus, in a stable order, with what loading had to forgive.

    >>> c = Corpus.from_documents([Document(id="a", text="Alpha."), Document(id="b", text="")])
    >>> len(c), c["a"].text, c.n_empty
    (1, 'Alpha.', 1)
    """

    documents: Mapping[str, Document]
    content_hash: str
    source: str = ""
    n_fallback_decoded: int = 0
    n_empty: int = 0
    warnings: tuple[str, ...] = field(default=())

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        source: str = "",
        fallback_decoded: Iterable[str] = (),
        bad_names: Iterable[str] = (),
    ) -> Corpus:
        """Build a corpus from documents: skip (and count) empty ones, reject duplicate ids.

        ``fallback_decoded`` names the files that were not UTF-8, and ``bad_names``
        the files skipped because their names are not text, for the warning lines.

        >>> Corpus.from_documents([Document(id="x", text="hi")]).content_hash[:8]
        '05a9acba'
        """
        docs: dict[str, Document] = {}
        empty: list[str] = []
        for doc in documents:
            if doc.id in docs:
                raise CorpusError(
                    located(
                        "corpus", source or "<memory>", None, f"duplicate document id {doc.id!r}"
                    )
                )
            if not doc.text.strip():
                empty.append(doc.id)
                continue
            docs[doc.id] = doc
        decoded = list(fallback_decoded)
        notes: list[str] = []
        if decoded:
            notes.append(
                f"{_plural(len(decoded), 'file')} {_were(len(decoded))} not UTF-8 and "
                f"{_were(len(decoded))} decoded as cp1252 (latin-1 where cp1252 failed): "
                f"{_names(decoded)}"
            )
        skipped = list(bad_names)
        if skipped:
            notes.append(
                f"{_plural(len(skipped), 'file')} {_were(len(skipped))} skipped because the "
                f"name is not valid UTF-8 text or holds a control character: {_names(skipped)}"
            )
        if empty:
            notes.append(
                f"{_plural(len(empty), 'document')} with no text {_were(len(empty))} skipped: "
                f"{_names(empty)}"
            )
        return cls(
            documents=MappingProxyType(docs),
            content_hash=_content_hash(docs.values()),
            source=source,
            n_fallback_decoded=len(decoded),
            n_empty=len(empty),
            warnings=tuple(notes),
        )

    @property
    def path(self) -> str:
        """Where the corpus was read from ('' for an in-memory corpus)."""
        return self.source

    def __len__(self) -> int:
        return len(self.documents)

    def __getitem__(self, doc_id: str) -> Document:
        return self.documents[doc_id]

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.documents

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents.values())


def load_corpus(path: str | Path, *, follow_symlinks: bool = False) -> Corpus:
    """Read a corpus folder, JSONL file or BEIR folder (see the module docstring).

    Raises :class:`~ragmeter.errors.CorpusError` when the path is missing, holds no
    documents, or a JSONL line is malformed (the message names file, line and field).
    A folder's files must resolve inside it: a symbolic link that leaves the folder
    is refused unless ``follow_symlinks=True``; devices, pipes and files under
    /proc, /sys and /dev are always refused. Files whose names are not valid UTF-8
    are skipped and named in ``Corpus.warnings``.

    >>> corpus = load_corpus("docs/")            # doctest: +SKIP
    >>> corpus["guides/install.md"].title        # doctest: +SKIP
    'Installing uv'
    """
    p = Path(path)
    if not p.exists():
        raise CorpusError(f"corpus {p}: no such file or directory")
    if p.is_dir():
        beir = _beir_corpus_file(p)
        if beir is not None:
            corpus = Corpus.from_documents(read_beir_corpus(p), source=str(p))
        else:
            corpus = _load_folder(p, follow_symlinks)
    elif _is_jsonl(p):
        corpus = Corpus.from_documents(_read_jsonl(p), source=str(p))
    else:
        raise CorpusError(
            f"corpus {p}: not a folder, .jsonl or .jsonl.gz file; "
            "pass a folder of Markdown/text files, a JSONL of documents or a BEIR folder"
        )
    if len(corpus) == 0:
        why = f" ({corpus.n_empty} had no text)" if corpus.n_empty else ""
        raise CorpusError(f"corpus {p}: no documents{why}")
    return corpus


# --- folders of files --------------------------------------------------------------------


#: Pseudo-filesystems whose "files" are process or kernel state, never documents.
_PSEUDO_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))


def _load_folder(folder: Path, follow_symlinks: bool) -> Corpus:
    files, bad_names = _text_files(folder, follow_symlinks)
    if not files:
        raise CorpusError(
            f"corpus {folder}: no documents (no {'/'.join(TEXT_SUFFIXES)} files, "
            "and no corpus.jsonl[.gz] of a BEIR folder)"
        )
    fallback: list[str] = []
    docs: list[Document] = []
    for doc_id, f in files:
        try:
            raw = f.read_bytes()
        except OSError as exc:
            raise CorpusError(located("corpus", f, None, f"cannot read: {exc.strerror}")) from exc
        text, encoding = decode_text(raw)
        if encoding != "utf-8":
            fallback.append(doc_id)
        # One newline convention, so quotes typed in a gold set match on any platform.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        suffix = f.suffix.lower()
        fmt = "markdown" if suffix in (".md", ".markdown") else suffix.lstrip(".")
        docs.append(
            Document(
                id=doc_id,
                text=text,
                title=_title(text, fmt) or f.stem,
                metadata={"path": doc_id, "format": fmt},
            )
        )
    return Corpus.from_documents(
        docs, source=str(folder), fallback_decoded=fallback, bad_names=bad_names
    )


def _text_files(folder: Path, follow_symlinks: bool) -> tuple[list[tuple[str, Path]], list[str]]:
    """``(doc id, path)`` of the documents under ``folder`` sorted by id, and unusable names.

    Hidden files and folders (.git, .venv, .DS_Store) are never documents. Folder
    links are followed only with ``follow_symlinks`` (each real folder once, so a
    link cycle ends); see :func:`_check_file` for what a file must be.
    """
    root = folder.resolve()
    found: list[tuple[str, Path]] = []
    bad_names: list[str] = []
    visited: set[Path] = {root}
    for current, dirs, names in os.walk(folder, followlinks=follow_symlinks):
        here = Path(current)
        kept = []
        for name in sorted(dirs):
            real = (here / name).resolve()
            if not name.startswith(".") and real not in visited:
                visited.add(real)
                kept.append(name)
        dirs[:] = kept
        for name in names:
            f = here / name
            if name.startswith(".") or f.suffix.lower() not in TEXT_SUFFIXES:
                continue
            doc_id = f.relative_to(folder).as_posix()
            if text_problem(doc_id) is not None:
                # Undecodable bytes in a name would become a surrogate in the id, and
                # break every printer and the store later (issue 19.11): skip, and say so.
                bad_names.append(repr(os.fsencode(doc_id))[1:])
                continue
            if _check_file(f, root, follow_symlinks):
                found.append((doc_id, f))
    found.sort(key=lambda entry: entry[0])
    return found, bad_names


def _check_file(f: Path, root: Path, follow_symlinks: bool) -> bool:
    """True for a regular file to read, False for a folder named like a file; else refuse.

    A link out of the folder indexed ``../outside.md`` and ``/proc/self/environ``
    (the environment, API keys included) into the store (issue 19.5): links must
    stay inside the folder unless ``follow_symlinks``; devices, FIFOs, sockets and
    anything under /proc, /sys or /dev are refused even then.
    """
    try:
        mode = f.stat().st_mode
    except OSError as exc:
        why = "a broken symbolic link" if f.is_symlink() else f"cannot read: {exc.strerror}"
        raise CorpusError(located("corpus", f, None, why)) from None
    if stat.S_ISDIR(mode):
        return False
    real = f.resolve()
    if any(real.is_relative_to(pseudo) for pseudo in _PSEUDO_ROOTS) or not stat.S_ISREG(mode):
        kind = "a link to " + str(real) if f.is_symlink() else "not a regular file"
        message = f"{kind}; devices, pipes and /proc, /sys, /dev files are never indexed"
        raise CorpusError(located("corpus", f, None, message))
    if not follow_symlinks and not real.is_relative_to(root):
        message = (
            f"a link to {real}, outside the corpus folder; "
            "pass --follow-symlinks (follow_symlinks=True) to index it"
        )
        raise CorpusError(located("corpus", f, None, message))
    return True


def _title(text: str, fmt: str) -> str:
    """The title a reader would see: front matter ``title:``, first heading, or ''."""
    m = _FRONT_MATTER.match(text)
    if m:
        t = _FRONT_MATTER_TITLE.search(m.group(1))
        if t:
            return t.group(1).strip().strip("\"'")
    lines = text.split("\n")
    if fmt == "rst":
        for i in range(len(lines) - 1):
            line = lines[i].strip()
            if line and _RST_UNDERLINE.match(lines[i + 1]) and not _RST_UNDERLINE.match(line):
                return line
        return ""
    if fmt != "markdown":
        return ""
    fence: str | None = None
    for line in lines:
        fm = _FENCE.match(line)
        if fm:
            marker = fm.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is None:
            hm = _ATX_HEADING.match(line)
            if hm and (hm.group(1) or "").strip():
                return (hm.group(1) or "").strip()
    return ""


# --- JSONL and BEIR ----------------------------------------------------------------------


def _is_jsonl(p: Path) -> bool:
    name = p.name.lower()
    return name.endswith(".jsonl") or name.endswith(".jsonl.gz")


def _beir_corpus_file(folder: Path) -> Path | None:
    for name in ("corpus.jsonl", "corpus.jsonl.gz"):
        if (folder / name).is_file():
            return folder / name
    return None


def _read_jsonl(p: Path) -> Iterator[Document]:
    """Yield the documents of a JSONL file; errors name the file, line and field."""
    for lineno, obj in read_jsonl(p, "corpus", CorpusError):
        yield _jsonl_document(p, lineno, obj)


def _jsonl_document(p: Path, lineno: int, obj: dict[str, Any]) -> Document:
    def fail(message: str) -> CorpusError:
        return CorpusError(located("corpus", p, lineno, message))

    if "id" in obj:
        raw_id = obj["id"]
        id_field = "id"
    elif "_id" in obj:
        raw_id = obj["_id"]
        id_field = "_id"
    else:
        raise fail('missing "id" (or "_id")')
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise fail(f'"{id_field}" must be a string, got {type(raw_id).__name__}')
    doc_id = str(raw_id)
    if not doc_id.strip():
        raise fail(f'"{id_field}" is empty')
    problem = text_problem(doc_id)
    if problem is not None:
        raise fail(f'"{id_field}" {problem}')
    if "text" not in obj:
        raise fail('missing "text"')
    text = obj["text"]
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise fail(f'"text" must be a string, got {type(text).__name__}')
    title = obj.get("title")
    if title is None:
        title = ""
    if not isinstance(title, str):
        raise fail(f'"title" must be a string, got {type(title).__name__}')
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise fail(f'"metadata" must be an object, got {type(metadata).__name__}')
    for name, value in (("text", text), ("title", title)):
        problem = text_problem(value, controls=False)
        if problem is not None:
            raise fail(f'"{name}" {problem}')
    return Document(id=doc_id, text=text, title=title, metadata=metadata)


# --- helpers -----------------------------------------------------------------------------


def _content_hash(docs: Iterable[Document]) -> str:
    h = hashlib.sha256()
    for d in docs:
        # JSON framing keeps (id, title, text) unambiguous whatever the strings contain.
        h.update(json.dumps([d.id, d.title, d.text], ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _were(n: int) -> str:
    return "was" if n == 1 else "were"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_NAMES_IN_WARNING])
    more = len(names) - _MAX_NAMES_IN_WARNING
    return f"{shown} and {more} more" if more > 0 else shown
