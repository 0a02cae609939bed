"""The one config of every chunker, and the pieces they share to build chunks."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ragmeter.documents import Chunk, Document
from ragmeter.errors import ConfigError

if TYPE_CHECKING:
    pass

__all__ = [
    "DEFAULT_OVERLAP",
    "KINDS",
    "MAX_AUTO_MIN_SIZE",
    "MIN_SIZE",
    "UNITS",
    "Chunker",
    "ChunkerConfig",
    "index_text",
    "make_chunks",
]

#: Chunker kinds, and the version of each algorithm: bump it when a chunker's output
#: changes, so caches keyed by ``ChunkerConfig.key()`` are not reused.
KINDS: dict[str, int] = {"markdown": 2, "paragraph": 1, "fixed": 1, "sentence": 1, "none": 1}

#: Units a size can be counted in; only ``fixed`` counts whitespace tokens.
UNITS = ("chars", "tokens")

#: Smallest ``size`` per unit.
MIN_SIZE = {"chars": 20, "tokens": 2}

#: Upper bound of the automatic ``overlap``.
DEFAULT_OVERLAP = 100

#: Upper bound of the automatic ``min_size`` (sections shorter than this are merged).
MAX_AUTO_MIN_SIZE = 200

Chunker = Callable[[Document], list[Chunk]]


@dataclass(frozen=True)
class ChunkerConfig:
    """How to chunk: ``kind``, ``size`` and ``overlap`` in characters (``unit="chars"``).

    ``overlap`` defaults to ``min(100, size // 10)``; it may be at most ``size // 2``.
    ``unit="tokens"`` (``fixed`` only) counts whitespace-separated tokens instead, so
    ``ChunkerConfig("fixed", size=200, overlap=20, unit="tokens")`` is 200-word windows.

    ``heading_prefix`` (markdown only): retrievers index each chunk with its heading path
    (``"Install > From PyPI"``) in front; the chunk text and span stay the document's.

    ``min_size`` (markdown only): sections shorter than this (a heading alone, say)
    are merged with the next section; ``None`` picks ``min(200, size // 8)``.

    >>> ChunkerConfig(kind="markdown", size=1000, overlap=100).key()
    'markdown(size=1000,overlap=100,min_size=125)@v2'
    >>> ChunkerConfig(kind="none").key()
    'none@v1'
    """

    kind: str = "markdown"
    size: int = 1000
    overlap: int = None  # type: ignore[assignment]  # resolved in __post_init__
    min_size: int | None = None
    unit: str = "chars"
    heading_prefix: bool = False

    def __post_init__(self) -> None:
        if self.overlap is None:
            # Frozen, so set through object: the default scales with size (10%, <= 100).
            auto = min(DEFAULT_OVERLAP, self.size // 10) if isinstance(self.size, int) else 0
            object.__setattr__(self, "overlap", auto)
        if self.kind not in KINDS:
            raise ConfigError(
                f"chunker: unknown kind {self.kind!r}; choose one of {', '.join(KINDS)}"
            )
        if self.unit not in UNITS:
            raise ConfigError(
                f"chunker: unknown unit {self.unit!r}; choose one of {', '.join(UNITS)}"
            )
        if self.unit == "tokens" and self.kind != "fixed":
            raise ConfigError(
                f"chunker: unit 'tokens' needs kind 'fixed' ({self.kind!r} counts characters)"
            )
        if not isinstance(self.heading_prefix, bool):
            raise ConfigError(
                f"chunker: heading_prefix must be true or false, got {self.heading_prefix!r}"
            )
        least = MIN_SIZE[self.unit]
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < least:
            unit = "characters" if self.unit == "chars" else "tokens"
            raise ConfigError(
                f"chunker: size must be an integer >= {least} {unit}, got {self.size!r}"
            )
        if (
            isinstance(self.overlap, bool)
            or not isinstance(self.overlap, int)
            or not 0 <= self.overlap <= self.size // 2
        ):
            raise ConfigError(
                f"chunker: overlap must be an integer from 0 to size/2 ({self.size // 2}), "
                f"got {self.overlap!r}"
            )
        if self.min_size is not None and (
            isinstance(self.min_size, bool)
            or not isinstance(self.min_size, int)
            or not 0 <= self.min_size <= self.size
        ):
            raise ConfigError(
                f"chunker: min_size must be an integer from 0 to size ({self.size}), "
                f"got {self.min_size!r}"
            )

    @property
    def resolved_min_size(self) -> int:
        """``min_size``, with ``None`` resolved to its automatic value."""
        if self.min_size is not None:
            return self.min_size
        return min(MAX_AUTO_MIN_SIZE, self.size // 8)

    def key(self) -> str:
        """A short stable string naming this config and the chunker's version (cache keys)."""
        version = KINDS[self.kind]
        if self.kind == "none":
            return f"none@v{version}"
        params: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        params.pop("kind")
        params["min_size"] = self.resolved_min_size
        # Options at their defaults stay out, so keys written before they existed still match.
        if self.unit == "chars":
            params.pop("unit")
        if not self.heading_prefix:
            params.pop("heading_prefix")
        inner = ",".join(f"{k}={v}" for k, v in params.items())
        return f"{self.kind}({inner})@v{version}"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChunkerConfig:
        """Build a config from plain data (a stored run config, a pipeline file section);
        unknown keys are a ConfigError naming the allowed ones. ``None`` values mean default.

        >>> ChunkerConfig.from_dict({"kind": "paragraph", "size": 500}).overlap
        50
        """
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise ConfigError(
                f"chunker: unknown key {', '.join(map(repr, unknown))}; "
                f"allowed: {', '.join(allowed)}"
            )
        return cls(**{k: v for k, v in data.items() if v is not None})

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data (for stored run configs).

        >>> ChunkerConfig(kind="paragraph", size=500, overlap=50).to_dict()["size"]
        500
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}


def make_chunks(
    document: Document,
    spans: Sequence[tuple[int, int, Sequence[str]]],
    *,
    heading_prefix: bool = False,
) -> list[Chunk]:
    """Turn ``(start, end, heading_path)`` spans of a document into numbered chunks.

    With ``heading_prefix``, ``metadata["prefix"]`` holds the heading path joined by " > ".

    >>> [c.text for c in make_chunks(Document(id="d", text="ab cd"), [(0, 2, []), (3, 5, [])])]
    ['ab', 'cd']
    """
    text = document.text
    out: list[Chunk] = []
    for n, (start, end, path) in enumerate(spans):
        metadata: dict[str, Any] = {"heading_path": list(path), "title": document.title}
        if heading_prefix and path:
            metadata["prefix"] = " > ".join(path)
        out.append(
            Chunk(
                id=f"{document.id}#{n}",
                doc_id=document.id,
                text=text[start:end],
                start=start,
                end=end,
                metadata=metadata,
            )
        )
    return out


def index_text(chunk: Chunk, title: str | None = None) -> str:
    """What a retriever indexes for ``chunk``: title, heading-path prefix (when the chunker
    added one and it is not just the title), then the text, one per line.

    ``title`` defaults to ``chunk.metadata["title"]``.

    >>> c = Chunk("a#0", "a", "pip install uv", 0, 14, {"title": "Install", "prefix": "Install > PyPI"})
    >>> index_text(c)
    'Install\\nInstall > PyPI\\npip install uv'
    """
    if title is None:
        title = str(chunk.metadata.get("title", "") or "")
    prefix = str(chunk.metadata.get("prefix", "") or "")
    parts = [p for p in (title, prefix if prefix != title else "") if p]
    parts.append(chunk.text)
    return "\n".join(parts)
