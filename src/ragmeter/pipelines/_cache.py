"""On-disk cache directories for pipeline artefacts (BM25 indexes, embeddings).

An entry is a directory named by a hash of everything that determines its content,
including the versions of the libraries that compute it (``library_versions``), so an
upgrade rebuilds instead of serving what the old version computed. It
is built in a temporary sibling directory and renamed into place, so a reader never
sees a half-written entry and two processes building the same entry at once both
succeed (the loser discards its copy and uses the winner's).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "CACHE_DIR_ENV",
    "DEFAULT_CACHE_DIR",
    "atomic_entry",
    "cache_key",
    "discard_entry",
    "default_cache_dir",
    "library_versions",
]

#: The environment variable the CLI reads (library functions take the path explicitly).
CACHE_DIR_ENV = "RAGMETER_CACHE_DIR"
#: The cache directory, relative to the working directory, when nothing else is given.
DEFAULT_CACHE_DIR = Path(".ragmeter") / "cache"

#: The file whose presence marks a complete cache entry.
COMPLETE_MARKER = "complete.json"


def default_cache_dir(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """The cache directory: ``$RAGMETER_CACHE_DIR`` when ``environ`` is given and sets it,
    else ``.ragmeter/cache`` under ``cwd`` (default: the current directory).

    >>> default_cache_dir({"RAGMETER_CACHE_DIR": "/tmp/rc"})
    PosixPath('/tmp/rc')
    >>> default_cache_dir({}, cwd=Path("/proj"))
    PosixPath('/proj/.ragmeter/cache')
    """
    if environ is not None and environ.get(CACHE_DIR_ENV):
        return Path(environ[CACHE_DIR_ENV]).expanduser()
    return (cwd if cwd is not None else Path.cwd()) / DEFAULT_CACHE_DIR


def cache_key(*parts: object) -> str:
    """A hex digest naming a cache entry; ``parts`` are JSON-encoded, so order matters.

    >>> cache_key("abc", {"k1": 1.2}) == cache_key("abc", {"k1": 1.2})
    True
    >>> len(cache_key("x"))
    32
    """
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def library_versions(*distributions: str) -> dict[str, str | None]:
    """The installed version of each distribution (``None`` when it is not installed).

    Part of cache keys, and of each run's record: a different PyStemmer stems
    differently, so an index built with it is a different index.

    >>> library_versions("numpy")["numpy"] == importlib.metadata.version("numpy")
    True
    >>> library_versions("surely-not-installed-xyz")
    {'surely-not-installed-xyz': None}
    """
    found: dict[str, str | None] = {}
    for name in distributions:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def is_complete(entry: Path) -> bool:
    """True when ``entry`` is a finished cache entry."""
    return (entry / COMPLETE_MARKER).is_file()


def discard_entry(entry: Path) -> None:
    """Remove a (damaged) entry: renamed aside first, so readers never see it half-deleted."""
    stale = entry.with_name(f".{entry.name}.stale-{uuid.uuid4().hex[:8]}")
    try:
        entry.rename(stale)
    except OSError:
        return
    shutil.rmtree(stale, ignore_errors=True)


@contextmanager
def atomic_entry(entry: Path) -> Iterator[Path]:
    """Yield a temporary directory to fill; on success it becomes ``entry`` atomically.

    If another process finished ``entry`` first, this copy is discarded. On an
    exception the temporary directory is removed and ``entry`` is left untouched.

    >>> with atomic_entry(Path(tempfile.mkdtemp()) / "e") as tmp:  # doctest: +SKIP
    ...     (tmp / "data.json").write_text("{}")
    """
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.tmp-", dir=entry.parent))
    try:
        yield tmp
        (tmp / COMPLETE_MARKER).write_text(json.dumps({"pid": os.getpid()}), encoding="utf-8")
        if is_complete(entry):
            return  # a concurrent builder won; its entry is equivalent
        if entry.exists():
            # A leftover without the marker (a crash before rename cannot leave one, but a
            # hand-made or foreign directory can): move it aside, then take its place.
            discard_entry(entry)
        try:
            tmp.rename(entry)
        except OSError:
            if not is_complete(entry):
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
