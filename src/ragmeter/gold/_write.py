"""How gold files are written: one writer at a time, atomically, keeping the file's mode.

- ``locked(path)``: an exclusive lock (``flock`` on the file's folder, which a rewrite never
  replaces) held while a writer reads, changes and rewrites the file. Without it two review
  decisions made at the same moment each rewrote the file they had read, and one was lost:
  17 of 20 concurrent decisions (issue 27.2). Readers need no lock: they see the old file or
  the new one.
- ``write_atomically(path, text)``: a temporary file in the same folder, flushed to disk,
  then ``os.replace``; an existing file's permission bits are kept (a temporary file is
  created 0600, and ``apply-edits --in-place`` left a 0644 gold file 0600, issue 27.10), a
  new file gets the usual 0666 less the umask.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "g.yaml"
>>> with locked(path):
...     write_atomically(path, "- id: q1\\n")
>>> path.read_text()
'- id: q1\\n'
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["locked", "write_atomically"]

# Where flock is missing (Windows), writers of one process still take turns.
_FALLBACK = threading.Lock()


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the write lock of ``path``'s folder (created if missing) until the block ends."""
    folder = Path(path).absolute().parent
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        with _FALLBACK:
            yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # its own open file: threads of one process wait too
        yield
    finally:
        os.close(fd)  # releases the lock


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one ``os.replace``, keeping its permission bits."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # 0o666 here is narrowed by the umask, as for any new file.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
