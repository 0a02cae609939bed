"""The one HTTP policy every caller shares: retries, ``Retry-After``, backoff, bounded bodies.

Three parts of ragmeter talk HTTP: the HTTP retriever (``retrievers/http.py``), the
HTTP generator (``evaluation/generation.py``) and the judge's model client
(``judge/client.py``, through the ``openai`` package). They retry the same failures
(429, 5xx, timeouts, connection errors) with the same limits, wait the same way
(exponential backoff with jitter, or the server's ``Retry-After`` up to a cap) and
read bodies the same way: as a stream, decompressed here, never more than
``max_bytes`` after decompression and never past a deadline.

>>> policy = RetryPolicy(retries=2, backoff=0.5, jitter=0.0)
>>> [policy.delay(attempt) for attempt in range(3)]
[0.5, 1.0, 2.0]
>>> policy.delay(0, retry_after=7.0)
7.0
>>> parse_retry_after({"retry-after": "120"})
60.0
"""

from __future__ import annotations

import email.utils
import random
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "ACCEPT_ENCODING",
    "BACKOFF_FIRST_S",
    "BACKOFF_JITTER",
    "BACKOFF_MAX_S",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_RETRIES",
    "RETRY_AFTER_MAX_S",
    "BodyTooLarge",
    "DeadlineExceeded",
    "RetryPolicy",
    "Retryable",
    "aread_body",
    "parse_retry_after",
    "read_body",
]

#: Retries of one request after a 429, 5xx, timeout or connection error.
DEFAULT_RETRIES = 3
#: First backoff (seconds); each later one doubles, up to ``BACKOFF_MAX_S``.
BACKOFF_FIRST_S = 0.2
BACKOFF_MAX_S = 20.0
#: Each backoff is scaled by a random factor in ``1 ± BACKOFF_JITTER``, so the
#: retries of many concurrent questions spread apart instead of arriving together.
BACKOFF_JITTER = 0.25
#: A server's ``Retry-After`` is honoured up to this many seconds.
RETRY_AFTER_MAX_S = 60.0
#: Largest response body read (after decompression), in bytes.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
#: The encodings we can decode within a bound; sent as ``Accept-Encoding``.
ACCEPT_ENCODING = "gzip, deflate"
# Decompressed bytes produced per step, so a bomb never inflates far past the limit.
_INFLATE_STEP = 256 * 1024
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class Retryable(Exception):
    """A failure worth another attempt.

    ``message`` is what the user sees, ``detail`` an optional tail (e.g. the start of
    the response body), ``wait`` the server's ``Retry-After`` in seconds, if it sent one.
    """

    def __init__(self, message: str, *, detail: str = "", wait: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.wait = wait


class BodyTooLarge(Exception):
    """A response body over the size limit (after decompression); never retried."""


class DeadlineExceeded(Exception):
    """A response that did not finish within its deadline (a trickled body)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times to retry and how long to wait before each retry.

    ``delay(attempt)`` is ``backoff * 2**attempt`` (capped at ``backoff_max``, times a
    jitter factor), or the server's ``Retry-After`` capped at ``retry_after_max``.

    >>> RetryPolicy(backoff=1.0, backoff_max=3.0, jitter=0.0).delay(5)
    3.0
    """

    retries: int = DEFAULT_RETRIES
    backoff: float = BACKOFF_FIRST_S
    backoff_max: float = BACKOFF_MAX_S
    retry_after_max: float = RETRY_AFTER_MAX_S
    jitter: float = BACKOFF_JITTER

    def delay(
        self,
        attempt: int,
        retry_after: float | None = None,
        *,
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_max)
        base = min(self.backoff * 2**attempt, self.backoff_max)
        if self.jitter:
            base *= uniform(1.0 - self.jitter, 1.0 + self.jitter)
        return float(base)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a server asked us to wait (``Retry-After-Ms``, or ``Retry-After`` in
    seconds or as an HTTP date), capped at ``RETRY_AFTER_MAX_S``; ``None`` if absent.

    >>> parse_retry_after({"retry-after-ms": "250"})
    0.25
    >>> parse_retry_after({"retry-after": "Thu, 01 Jan 1970 00:00:00 GMT"})
    0.0
    >>> parse_retry_after({"retry-after": "soon"}) is None
    True
    """
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return min(max(float(millis) / 1000.0, 0.0), RETRY_AFTER_MAX_S)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return min(max(seconds, 0.0), RETRY_AFTER_MAX_S)


class _Body:
    """Collects a body's decoded bytes within a size limit and a deadline."""

    def __init__(
        self, headers: Mapping[str, str], *, max_bytes: int, deadline: float | None, truncate: bool
    ) -> None:
        encoding = (headers.get("content-encoding") or "identity").strip().lower()
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.truncate = truncate
        self.parts: list[bytes] = []
        self.size = 0
        self.full = False
        if encoding in ("", "identity"):
            self.inflater: Any = None
        elif encoding in _WBITS:
            self.inflater = zlib.decompressobj(_WBITS[encoding])
        else:
            raise BodyTooLarge(f"unsupported Content-Encoding {encoding!r}")
        declared = headers.get("content-length") or ""
        plain = self.inflater is None and not truncate
        if plain and declared.isdigit() and int(declared) > max_bytes:
            raise BodyTooLarge(self._too_large(f"declares {int(declared):,} bytes, over"))

    def _too_large(self, what: str) -> str:
        return f"response body {what} the {self.max_bytes:,}-byte limit"

    def feed(self, raw: bytes) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise DeadlineExceeded("the response did not finish before its deadline")
        if self.inflater is None:
            self._keep(raw)
            return
        data = raw
        while data and not self.full:
            try:
                piece = self.inflater.decompress(data, _INFLATE_STEP)
            except zlib.error as error:
                raise BodyTooLarge(f"response body does not decompress: {error}") from None
            self._keep(piece)
            data = self.inflater.unconsumed_tail

    def _keep(self, piece: bytes) -> None:
        room = self.max_bytes - self.size
        if len(piece) > room:
            if not self.truncate:
                raise BodyTooLarge(self._too_large("is over"))
            piece = piece[:room]
            self.full = True
        self.parts.append(piece)
        self.size += len(piece)

    def value(self) -> bytes:
        return b"".join(self.parts)


def read_body(
    response: Any, *, max_bytes: int, deadline: float | None = None, truncate: bool = False
) -> bytes:
    """Read a streamed ``httpx.Response`` body: decompressed here, at most ``max_bytes``.

    ``deadline`` is a ``time.monotonic()`` instant the body must be done by. Raises
    :class:`BodyTooLarge` (or, with ``truncate=True``, returns the first ``max_bytes``
    bytes, e.g. for an error message) and :class:`DeadlineExceeded`.
    """
    if response.is_stream_consumed:  # an in-memory response (e.g. a MockTransport's)
        return _in_memory(response.content, max_bytes=max_bytes, truncate=truncate)
    body = _Body(response.headers, max_bytes=max_bytes, deadline=deadline, truncate=truncate)
    chunks: Iterator[bytes] = response.iter_raw()
    for raw in chunks:
        body.feed(raw)
        if body.full:
            break
    return body.value()


async def aread_body(
    response: Any, *, max_bytes: int, deadline: float | None = None, truncate: bool = False
) -> bytes:
    """Async twin of :func:`read_body`."""
    if response.is_stream_consumed:
        return _in_memory(response.content, max_bytes=max_bytes, truncate=truncate)
    body = _Body(response.headers, max_bytes=max_bytes, deadline=deadline, truncate=truncate)
    chunks: AsyncIterator[bytes] = response.aiter_raw()
    async for raw in chunks:
        body.feed(raw)
        if body.full:
            break
    return body.value()


def _in_memory(content: bytes, *, max_bytes: int, truncate: bool) -> bytes:
    if len(content) > max_bytes and not truncate:
        raise BodyTooLarge(f"response body is over the {max_bytes:,}-byte limit")
    return content[:max_bytes]
