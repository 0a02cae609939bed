"""Writing a file the user named: one rule for every command that writes one (issue 27.16).

The parent folders are made, and any failure of the operating system (a folder given
where a file is expected, no permission, a full disk, a name too long) becomes an
:class:`~ragmeter.errors.OutputError`, exit 2, naming the path, never a traceback.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_output(folder / "a" / "out.txt", "hi", kind="export")
>>> write_output(folder, "hi", kind="export")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ragmeter.errors.OutputError: export .../...: cannot write it: it is a folder; name a file
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ragmeter.errors import OutputError, located

__all__ = ["output_error", "output_errors", "write_output", "writing"]


def output_error(path: Path | str, exc: OSError, *, kind: str) -> OutputError:
    """The error a failed write of ``path`` becomes: what went wrong, said plainly."""
    target = Path(path)
    if isinstance(exc, IsADirectoryError) or target.is_dir():
        reason = "it is a folder; name a file"
    elif exc.errno in (errno.EEXIST, errno.ENOTDIR) and any(p.is_file() for p in target.parents):
        reason = "a part of its folder is a file"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        reason = "permission denied; choose a folder you can write to"
    elif exc.errno == errno.ENOSPC:
        reason = "the disk is full"
    elif exc.errno == errno.ENAMETOOLONG:
        reason = "the name is too long"
    else:
        reason = exc.strerror or str(exc) or type(exc).__name__
    return OutputError(located(kind, path, None, f"cannot write it: {reason}"))


@contextmanager
def output_errors(path: Path | str, *, kind: str) -> Iterator[None]:
    """Turn an ``OSError`` about ``path`` (itself, one of its folders, or a temporary file
    written beside it to replace it) into ``OutputError``; any other error passes through,
    so a failure to read an input is never blamed on the output."""
    target = Path(path)
    try:
        yield
    except OSError as exc:
        if not _about(exc.filename, target):
            raise
        raise output_error(target, exc, kind=kind) from None


def _about(name: object, target: Path) -> bool:
    if not isinstance(name, str | bytes):
        return False
    found = Path(os.fsdecode(name))
    return (
        found == target
        or found in target.parents
        or (found.parent == target.parent and found.name.startswith(f".{target.name}."))
    )


def writing(path: Path | str, write: Callable[[Path], None], *, kind: str) -> None:
    """Run ``write(path)`` after making its folder; an ``OSError`` becomes ``OutputError``."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write(target)
    except OSError as exc:
        raise output_error(target, exc, kind=kind) from None


def write_output(path: Path | str, text: str, *, kind: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, making its folder; failures name the path."""
    writing(path, lambda target: _write_text(target, text), kind=kind)


def _write_text(target: Path, text: str) -> None:
    target.write_text(text, encoding="utf-8")
