"""Pickling for objects that hold locks, clients or C objects next to their real state.

The Ray executor ships a retriever (and a generator) to its workers with cloudpickle.
Most of what ragmeter's retrievers hold is plain data (chunks, numpy index arrays,
settings, credentials the worker needs), but a few attributes only make sense in the
process that made them: a ``threading.Lock``, an HTTP client and its open sockets, an
object bound to an event loop, a Cython stemmer. :class:`Transient` leaves those out
of the pickle and rebuilds them when the copy is unpickled.

>>> import threading
>>> class Counter(Transient):
...     _TRANSIENT = {"_lock": new_lock, "_client": unset}
...     def __init__(self):
...         self.n, self._lock, self._client = 0, threading.Lock(), object()
>>> state = Counter().__getstate__()   # what pickle stores
>>> state
{'n': 0}
>>> copy = Counter.__new__(Counter)
>>> copy.__setstate__(state)           # what unpickling does
>>> copy.n, copy._client, copy._lock.locked()
(0, None, False)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

__all__ = ["Transient", "new_lock", "transient_names", "unset"]

Rebuild = Callable[[Any], object]


def new_lock(_owner: object) -> threading.Lock:
    """Rebuild a lock as a fresh, unlocked one (a held lock never travels)."""
    return threading.Lock()


def unset(_owner: object) -> None:
    """Rebuild an attribute as ``None``: its owner creates it again on first use."""
    return None


def transient_names(cls: type) -> dict[str, Rebuild]:
    """Every transient attribute of ``cls`` with its rebuild function, base classes first.

    >>> class A(Transient):
    ...     _TRANSIENT = {"_lock": new_lock}
    >>> class B(A):
    ...     _TRANSIENT = {"_client": unset}
    >>> sorted(transient_names(B))
    ['_client', '_lock']
    """
    merged: dict[str, Rebuild] = {}
    for klass in reversed(cls.__mro__):
        merged.update(vars(klass).get("_TRANSIENT", {}))
    return merged


class Transient:
    """Pickle ``__dict__`` minus the attributes named in ``_TRANSIENT``; rebuild them after.

    ``_TRANSIENT`` maps an attribute name to a function of the unpickled object that
    returns its new value (:func:`new_lock`, :func:`unset`, or the class's own, e.g. a
    stemmer built again from its language). Rebuild functions run after every other
    attribute is restored, in the order they are declared, so they may read the state.
    Subclasses add names of their own; the names of base classes still apply.
    """

    _TRANSIENT: ClassVar[Mapping[str, Rebuild]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in transient_names(type(self)):
            state.pop(name, None)
        return state

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__dict__.update(state)
        for name, rebuild in transient_names(type(self)).items():
            setattr(self, name, rebuild(self))
