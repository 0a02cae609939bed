"""The structure-aware Markdown chunker (the default).

1. Sections start at ATX headings (``#`` to ``######``) outside fenced code blocks; each
   keeps its heading path (``["Install", "From PyPI"]``) in the chunk metadata.
2. A section shorter than ``min_size`` (a heading alone, a one-line intro) is merged with
   the next section of the document while the two fit in ``size``, so no chunk is just a
   heading. A short last section is merged with the one before it when they fit and share a
   heading.
3. A section longer than ``size`` is cut at blank lines, never inside a fenced code block
   or a list (its items, their indented continuation lines and the blank lines between
   them) unless the block alone is too long; pieces are packed up to ``size - overlap`` and each
   one after the first reaches back by up to ``overlap`` characters (snapped to a line or
   word start), so a chunk is never longer than ``size``.

With ``heading_prefix`` the heading path is kept in ``metadata["prefix"]`` for the
retrievers to index in front of the text.

Documents whose id ends in ``.txt``/``.rst`` (or whose metadata says ``format: txt|rst``)
are plain text and are chunked by paragraphs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragmeter.documents import Chunk, Document
from ragmeter.pipelines.chunkers._spans import Span, split_region, trim

if TYPE_CHECKING:
    from ragmeter.pipelines.chunkers._base import ChunkerConfig

__all__ = ["chunk_markdown", "list_blocks", "parse_sections"]

_PLAIN_SUFFIXES = (".txt", ".rst", ".text")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]+\S|[ \t]*$)")
_INDENTED = re.compile(r"^(?: {2,}|\t)\S")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


@dataclass(frozen=True)
class Section:
    """A span of a Markdown document under one heading path."""

    start: int
    end: int
    path: tuple[str, ...]


def chunk_markdown(document: Document, config: ChunkerConfig) -> list[Chunk]:
    """Chunk a Markdown document by its headings (see the module docstring).

    >>> from ragmeter.pipelines.chunkers._base import ChunkerConfig
    >>> doc = Document(id="a.md", text="# Install\\n\\n## From PyPI\\n\\npip install it")
    >>> [(c.text, c.metadata["heading_path"]) for c in chunk_markdown(doc, ChunkerConfig())]
    [('# Install\\n\\n## From PyPI\\n\\npip install it', ['Install', 'From PyPI'])]
    """
    from ragmeter.pipelines.chunkers._base import make_chunks
    from ragmeter.pipelines.chunkers.paragraph import chunk_paragraphs

    if _is_plain(document):
        return chunk_paragraphs(document, config)
    text = document.text
    sections, fences = parse_sections(text)
    sections = _merge_small(text, sections, config.resolved_min_size, config.size)
    spans: list[tuple[int, int, tuple[str, ...]]] = []
    blocks = [*fences, *list_blocks(text, fences)]
    for sec in sections:
        protected = [f for f in blocks if f[0] < sec.end and f[1] > sec.start]
        for s, e in split_region(text, sec.start, sec.end, config.size, config.overlap, protected):
            spans.append((s, e, sec.path))
    return make_chunks(document, spans, heading_prefix=config.heading_prefix)


def _is_plain(document: Document) -> bool:
    fmt = document.metadata.get("format") if document.metadata else None
    if fmt in ("txt", "rst", "text"):
        return True
    return document.id.lower().endswith(_PLAIN_SUFFIXES)


def parse_sections(text: str) -> tuple[list[Section], list[Span]]:
    """Split Markdown into heading sections; also return the fenced code block spans.

    >>> secs, fences = parse_sections("intro\\n# A\\n```\\n# not a heading\\n```\\n## B\\nb")
    >>> [(s.start, s.path) for s in secs]
    [(0, ()), (6, ('A',)), (34, ('A', 'B'))]
    >>> fences
    [(10, 33)]
    """
    sections: list[Section] = []
    fences: list[Span] = []
    stack: list[tuple[int, str]] = []  # (level, heading text) of the open headings
    cur_start = 0
    cur_path: tuple[str, ...] = ()
    fence: tuple[str, int] | None = None  # (marker, start offset) of the open fence
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        fm = _FENCE.match(body)
        if fence is None and fm and not (fm.group(1)[0] == "`" and "`" in fm.group(2)):
            fence = (fm.group(1), pos)
        elif fence is not None:
            marker = fm.group(1) if fm else ""
            closes = marker[:1] == fence[0][0] and len(marker) >= len(fence[0])
            if fm and closes and not fm.group(2).strip():
                fences.append((fence[1], pos + len(body)))
                fence = None
        else:
            hm = _HEADING.match(body)
            if hm:
                if pos > cur_start:
                    sections.append(Section(cur_start, pos, cur_path))
                level = len(hm.group(1))
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, (hm.group(2) or "").strip()))
                cur_start, cur_path = pos, tuple(t for _, t in stack if t)
        pos += len(line)
    if fence is not None:
        # An unclosed fence runs to the end of the document, as CommonMark says.
        fences.append((fence[1], len(text)))
    sections.append(Section(cur_start, len(text), cur_path))
    return [s for s in sections if trim(text, s.start, s.end)], fences


def list_blocks(text: str, fences: Sequence[Span] = ()) -> list[Span]:
    """The spans of Markdown lists: item lines, indented continuation lines, and blank lines
    between them when the list goes on after (loose lists). Lines inside ``fences`` that
    are not indented end a list.

    >>> list_blocks("Intro\\n\\n- a\\n  more\\n\\n- b\\n\\nAfter")
    [(7, 22)]
    """
    blocks: list[Span] = []
    start: int | None = None
    end = 0
    pending_blank = False
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        in_fence = any(s <= pos < e for s, e in fences)
        if _LIST_ITEM.match(body) and not in_fence:
            if start is None:
                start = pos
            end, pending_blank = pos + len(body), False
        elif start is not None and not body.strip():
            pending_blank = True
        elif start is not None and (_INDENTED.match(body) or (in_fence and not pending_blank)):
            end, pending_blank = pos + len(body), False
        elif start is not None:
            blocks.append((start, end))
            start, pending_blank = None, False
        pos += len(line)
    if start is not None:
        blocks.append((start, end))
    return blocks


def _merge_small(text: str, sections: list[Section], min_size: int, size: int) -> list[Section]:
    def length(s: Section) -> int:
        span = trim(text, s.start, s.end)
        return span[1] - span[0] if span else 0

    out: list[Section] = []
    for sec in sections:
        if out and length(out[-1]) < min_size and _fits(text, out[-1], sec, size):
            out[-1] = _join(out[-1], sec, child_wins=True)
        else:
            out.append(sec)
    if len(out) > 1 and length(out[-1]) < min_size and _fits(text, out[-2], out[-1], size):
        joined = _join(out[-2], out[-1], child_wins=False)
        # Only under a shared heading: a short "# Usage" must not vanish into "# Install".
        if joined.path:
            out[-2:] = [joined]
    return out


def _fits(text: str, a: Section, b: Section, size: int) -> bool:
    span = trim(text, a.start, b.end)
    return span is not None and span[1] - span[0] <= size


def _join(a: Section, b: Section, child_wins: bool) -> Section:
    """Merge two adjacent sections under their common heading path, or under ``b``'s path
    when ``child_wins`` and ``a`` is its ancestor (a heading alone + its first subsection:
    the content is the subsection's)."""
    if child_wins and b.path[: len(a.path)] == a.path:
        path = b.path
    else:
        n = 0
        while n < min(len(a.path), len(b.path)) and a.path[n] == b.path[n]:
            n += 1
        path = a.path[:n]
    return Section(a.start, b.end, path)
