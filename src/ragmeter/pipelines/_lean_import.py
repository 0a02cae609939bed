"""Import a library without the optional packages it would import eagerly (issue 29.3).

bm25s imports numba, scipy.sparse and tqdm at import time when they are installed, inside
``try: ... except ImportError``, although ragmeter uses none of them: it scores with
``get_scores_from_ids`` (numpy), builds the index with numpy and shows no progress bar. With
numba installed that import costs more than indexing SciFact. :func:`import_without` imports a
library while refusing those packages *to that library's own modules only*: an import made by
any other module (another thread, numpy, the user's code) is untouched, and a package already
imported is used as it is (it costs nothing more). So a process that imported bm25s before
ragmeter did keeps whatever bm25s found.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Collection, Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import FrameType, ModuleType

__all__ = ["import_without"]

_LOCK = threading.Lock()


def import_without(name: str, refused: Collection[str]) -> ModuleType:
    """Import ``name`` (a top-level package); its own modules see ``refused`` as not installed.

    ``refused`` holds top-level package names (``"numba"`` also refuses ``numba.core``).
    Returns the module; when ``name`` is already imported it is returned as it is.

    >>> mod = import_without("json", ["decimal"])
    >>> mod.__name__
    'json'
    """
    if name in sys.modules:
        return importlib.import_module(name)  # waits if another thread is importing it
    finder = _Refuse(name, frozenset(refused))
    with _LOCK:
        sys.meta_path.insert(0, finder)
        try:
            return importlib.import_module(name)
        finally:
            sys.meta_path.remove(finder)


class _Refuse(MetaPathFinder):
    """Raises ``ModuleNotFoundError`` for a refused package imported by ``importer``'s modules."""

    def __init__(self, importer: str, refused: frozenset[str]) -> None:
        self.importer = importer
        self.refused = refused

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] not in self.refused:
            return None
        caller = _importing_module(sys._getframe(1))
        if caller != self.importer and not caller.startswith(self.importer + "."):
            return None  # someone else's import: let the other finders answer
        raise ModuleNotFoundError(
            f"{fullname} is not imported for {self.importer} (ragmeter does not use it)",
            name=fullname,
        )


def _importing_module(frame: FrameType | None) -> str:
    """The ``__name__`` of the first frame outside the import machinery."""
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name != "importlib" and not name.startswith(("importlib.", "_frozen_importlib")):
            return name
        frame = frame.f_back
    return ""
