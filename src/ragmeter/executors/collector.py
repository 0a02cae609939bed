"""The garbage collector while a command loads its modules (issue 29.2/29.3).

A ``ragmeter`` command loads some 600 modules that live until its process exits. The cyclic
collector walks them over and over while they load (about 0.1 s of the 0.75 s an
``eval --json`` of a run file takes) and again in every full pass afterwards (a cold BM25
eval's index build). The command's process entry calls :func:`own_process`; from then on
``with loading():`` pauses the collector while modules load and freezes what is alive after
(``gc.freeze``), so later passes skip it. Anywhere else — a library, a test runner invoking
the CLI in its own process, a collector already paused — ``loading()`` does nothing.

>>> with loading():
...     import json
>>> import gc; gc.isenabled()
True
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["frozen_elsewhere", "loading", "own_process", "paused"]

# Whether this process runs one command and exits, and whether loading() froze objects.
_state = {"own_process": False, "frozen": False}


def own_process() -> None:
    """Say that this process runs one command and then exits (the CLI's entry point)."""
    _state["own_process"] = True


@contextmanager
def loading() -> Iterator[None]:
    """Modules load with the collector paused; what is alive after is frozen out of its passes."""
    if not _state["own_process"] or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        _state["frozen"] = True
        gc.enable()


@contextmanager
def paused() -> Iterator[None]:
    """No garbage collection inside: for work of ragmeter's own that makes many containers
    and no reference cycles (a gold set, a run's judgments, its final scoring), where the
    collector's passes over what it builds cost more than building it (issue 29.2). A
    collector paused already stays paused."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def frozen_elsewhere() -> bool:
    """True when objects are frozen and :func:`loading` did not freeze them (the dashboard).

    A process whose command loaded its modules through :func:`loading` counts its frozen
    objects as its own: ``quiet_collector`` freezes again for a run and thaws all after.
    """
    # The flag first: counting the frozen objects walks them all (~10 ms after a command loads).
    return not _state["frozen"] and gc.get_freeze_count() != 0
