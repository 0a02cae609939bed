"""One async session per event loop, closed inside the loop that opened it.

An ``httpx.AsyncClient`` or an ``openai.AsyncOpenAI`` belongs to the event loop that
opened its connections, and ragmeter's callers run many short loops (each
``asyncio.run``, each batch on a Ray worker). :class:`LoopSession` opens the session
on first use in a loop and keeps it for that loop. It is closed by :meth:`aclose`, by
:meth:`close` from sync code once the loop is idle, or, when nobody calls either, by
``asyncio.run`` itself: it finalizes pending async generators before closing its loop,
and a keeper generator's ``finally`` closes the session there.

>>> import asyncio
>>> closed = []
>>> async def shut(value):
...     closed.append(value)
>>> session = LoopSession(lambda: object(), shut)
>>> async def twice():
...     return (await session.get()) is (await session.get())
>>> asyncio.run(twice()), len(closed), session.value
(True, 1, None)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["LoopSession"]

T = TypeVar("T")


class LoopSession(Generic[T]):
    """``open_()`` once per event loop; ``close(value)`` is awaited in that loop."""

    def __init__(self, open_: Callable[[], T], close: Callable[[T], Awaitable[None]]) -> None:
        self._open = open_
        self._close = close
        self.value: T | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._keeper: AsyncGenerator[None, None] | None = None

    async def get(self) -> T:
        """The running loop's session, opened now if this loop has none yet."""
        loop = asyncio.get_running_loop()
        if self.value is None or self.loop is not loop:
            value = self._open()
            self.value, self.loop = value, loop
            self._keeper = self._keep(value)
            await self._keeper.__anext__()
            return value
        return self.value

    async def aclose(self) -> None:
        """Close the session; call it in the loop that uses it."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            await keeper.aclose()  # runs the keeper's finally: closes the session

    def close(self) -> None:
        """From sync code: close the session if its loop is idle; forget it if the loop is gone."""
        loop = self.loop
        if self._keeper is not None and loop is not None and not loop.is_closed():
            if not loop.is_running():
                loop.run_until_complete(self.aclose())
        elif loop is None or loop.is_closed():
            # Its loop is gone (asyncio.run already closed the session through _keep).
            self._keeper = None
            self.value = self.loop = None

    async def _keep(self, value: T) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self.value is value:
                self.value = self.loop = None
            await self._close(value)
