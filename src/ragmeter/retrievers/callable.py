"""Adapters for Python retrievers: a function, or an object with ``.retrieve``.

``CallableRetriever`` wraps ``fn(question, k) -> hits`` (sync or ``async def``);
``ObjectRetriever`` wraps an object that has ``retrieve(question, k)`` (such as
a built-in pipeline) so it looks like every other adapter.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ragmeter.documents import Hit
from ragmeter.errors import RetrieverError
from ragmeter.retrievers.base import RetrievalOutput, coerce_output
from ragmeter.retrievers.ids import DocIdentity, Notes

__all__ = ["CallableRetriever", "ObjectRetriever", "is_async_callable"]


def is_async_callable(fn: object) -> bool:
    """True for ``async def`` functions, partials of them and objects with ``async __call__``.

    >>> async def search(question, k): return []
    >>> is_async_callable(search), is_async_callable(len)
    (True, False)
    """
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - we want the bound method itself
    return call is not None and inspect.iscoroutinefunction(call)


class CallableRetriever:
    """A Python function ``(question, k) -> hits`` as a retriever.

    Hits may be anything :func:`~ragmeter.retrievers.coerce_hits` accepts; a
    ``{"hits": [...], "answer": "..."}`` mapping also keeps the answer.
    ``timeout`` bounds async functions (sync ones run in the caller's thread,
    where only the caller can stop waiting). ``identity`` says where a hit's
    document id lives (``--doc-field``) and which folders paths are relative to;
    :attr:`notes` holds what it said once (see :class:`~ragmeter.retrievers.ids.Notes`).

    >>> r = CallableRetriever(lambda q, k: ["a.md", "b.md"][:k], spec="demo")
    >>> [hit.doc for hit in r.retrieve("anything", 1)]
    ['a.md']
    """

    def __init__(
        self,
        fn: Callable[[str, int], Any],
        *,
        spec: str | None = None,
        timeout: float | None = None,
        config: Mapping[str, Any] | None = None,
        identity: DocIdentity | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"{fn!r} is not callable")
        self.fn = fn
        self.identity = identity or DocIdentity()
        self.notes: Notes = self.identity.notes
        self.spec = spec or _qualname(fn)
        self.is_async = is_async_callable(fn)
        self.timeout = timeout
        self.config: Mapping[str, Any] = dict(
            config or {"type": "callable", "function": self.spec, "async": self.is_async}
        )

    def __repr__(self) -> str:
        return f"CallableRetriever({self.spec!r}, is_async={self.is_async})"

    def retrieve_full(self, question: str, k: int) -> RetrievalOutput:
        """Call the function and keep an answer it returned beside the hits."""
        raw = self._call(question, k)
        if type(raw) is list:  # hits alone, the common answer: not a coroutine
            return coerce_output(raw, source=self.spec, identity=self.identity)
        if inspect.iscoroutine(raw):
            # An async function called from sync code: fine in a worker thread
            # (no loop there); inside a running loop the caller must use aretrieve.
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                raw = asyncio.run(self._bounded(raw))
            else:
                raw.close()
                raise RetrieverError(
                    f"{self.spec} is async: call aretrieve() from inside an event loop"
                ) from None
        return coerce_output(raw, source=self.spec, identity=self.identity)

    def retrieve(self, question: str, k: int) -> list[Hit]:
        """Return the function's hits for ``question``."""
        return self.retrieve_full(question, k).hits

    async def aretrieve_full(self, question: str, k: int) -> RetrievalOutput:
        """Async twin of :meth:`retrieve_full`; a sync function runs in a thread."""
        if not self.is_async:
            return await asyncio.to_thread(self.retrieve_full, question, k)
        raw = self._call(question, k)
        if inspect.isawaitable(raw):
            raw = await self._bounded(raw)
        return coerce_output(raw, source=self.spec, identity=self.identity)

    async def aretrieve(self, question: str, k: int) -> list[Hit]:
        """Async twin of :meth:`retrieve`."""
        return (await self.aretrieve_full(question, k)).hits

    def _call(self, question: str, k: int) -> Any:
        try:
            return self.fn(question, k)
        except RetrieverError:
            raise
        except Exception as exc:
            raise _raised(self.spec, exc) from exc

    async def _bounded(self, awaitable: Any) -> Any:
        try:
            if self.timeout is None:
                return await awaitable
            return await asyncio.wait_for(awaitable, self.timeout)
        except TimeoutError:
            raise RetrieverError(f"timed out after {self.timeout:g} s: {self.spec}") from None
        except RetrieverError:
            raise
        except Exception as exc:
            raise _raised(self.spec, exc) from exc

    def close(self) -> None:
        """Nothing to release: the function belongs to the caller."""

    async def aclose(self) -> None:
        """Nothing to release."""


class ObjectRetriever:
    """An object with ``retrieve(question, k)`` (sync or async) as a retriever.

    Used for built-in pipelines and for objects passed to ``evaluate()``
    directly; ``spec`` and ``config`` come from the object when it has them.

    >>> class Fixed:
    ...     def retrieve(self, question, k):
    ...         return [{"id": "a.md#0", "doc": "a.md", "score": 1.0}]
    >>> ObjectRetriever(Fixed(), spec="fixed").retrieve("q", 5)[0].doc
    'a.md'
    """

    def __init__(
        self,
        obj: Any,
        *,
        spec: str | None = None,
        config: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        identity: DocIdentity | None = None,
    ) -> None:
        method = getattr(obj, "retrieve", None)
        if not callable(method):
            raise TypeError(f"{obj!r} has no retrieve(question, k) method")
        # ``retrieve_full`` (a reference pipeline's) also returns what the hits alone don't.
        full = getattr(obj, "retrieve_full", None)
        method = full if callable(full) else method
        self.obj = obj
        self.spec = spec or getattr(obj, "spec", None) or type(obj).__name__
        own_config = getattr(obj, "config", None)
        self.config: Mapping[str, Any] = dict(
            config
            if config is not None
            else own_config
            if isinstance(own_config, Mapping)
            else {"type": "object", "class": _qualname(type(obj))}
        )
        self._inner = CallableRetriever(method, spec=self.spec, timeout=timeout, identity=identity)
        self.is_async = self._inner.is_async
        self.notes = self._inner.notes
        self.identity = self._inner.identity

    def __repr__(self) -> str:
        return f"ObjectRetriever({self.spec!r})"

    def retrieve_full(self, question: str, k: int) -> RetrievalOutput:
        """Call ``obj.retrieve`` and coerce what it returns."""
        return self._inner.retrieve_full(question, k)

    def retrieve(self, question: str, k: int) -> list[Hit]:
        """Call ``obj.retrieve`` and coerce what it returns."""
        return self._inner.retrieve_full(question, k).hits

    async def aretrieve_full(self, question: str, k: int) -> RetrievalOutput:
        """Async twin of :meth:`retrieve_full`."""
        return await self._inner.aretrieve_full(question, k)

    async def aretrieve(self, question: str, k: int) -> list[Hit]:
        """Async twin of :meth:`retrieve`."""
        return (await self._inner.aretrieve_full(question, k)).hits

    def close(self) -> None:
        """Close the wrapped object if it can be closed."""
        close = getattr(self.obj, "close", None)
        if callable(close):
            close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close` (prefers the object's own ``aclose``)."""
        aclose = getattr(self.obj, "aclose", None)
        if callable(aclose):
            await aclose()
        else:
            self.close()


def _raised(spec: str, exc: Exception) -> RetrieverError:
    # Keep the exception type: "KeyError: 'x'" says far more than "'x'".
    return RetrieverError(f"{spec} raised {type(exc).__name__}: {exc}")


def _qualname(obj: object) -> str:
    module = getattr(obj, "__module__", None) or "?"
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}:{name}"
