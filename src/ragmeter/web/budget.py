"""What one client of ``ragmeter ingest serve`` may send: a rate budget per client address.

Two token buckets per client address (issue 27.1), both refilled continuously:

- **bytes**: request bodies, charged when a body has been read, before it is decoded
  (decoding is the costly part of a hostile body);
- **rows**: store rows a request would write (queries, feedback, answers; at least 1 per
  request), charged after decoding, before anything is queued. One request may write at
  most ``MAX_REQUEST_ROWS`` rows (413 past that), whatever the budget.

A request the budget cannot pay for is answered 429 with ``Retry-After`` (the seconds until
it could be paid) and writes nothing. Defaults: ``ROWS_PER_S`` rows and ``BYTES_PER_S``
bytes a second, with bursts of ``BURST_S`` seconds' worth. Behind a proxy every client has
the proxy's address and shares one budget: raise the rates (``ingest serve
--max-rows-per-s``/``--max-bytes-per-s``) or give 0 to turn a budget off.

>>> budget = Budget(rows_per_s=10, bytes_per_s=0, now=lambda: 0.0)
>>> budget.charge("10.0.0.1", rows=100), budget.charge("10.0.0.1", rows=1)
(0.0, 0.1)
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["BURST_S", "BYTES_PER_S", "MAX_CLIENTS", "MAX_REQUEST_ROWS", "ROWS_PER_S", "Budget"]

#: Rows a client may have written per second, sustained.
ROWS_PER_S = 5_000
#: Request body bytes a client may send per second, sustained.
BYTES_PER_S = 2_000_000
#: A client that was idle may send this many seconds' worth at once.
BURST_S = 10
#: Most store rows one request may write (queries, feedback, answers); more is 413. An
#: exporter's batch of 512 retriever spans writes at most 512 x 11 (``feedback._joiner``).
MAX_REQUEST_ROWS = 20_000
#: Client addresses remembered (least recently seen forgotten first; a forgotten one
#: starts again with a full budget).
MAX_CLIENTS = 10_000


class Budget:
    """Per-client token buckets for rows and bytes (see module doc); thread-safe.

    A rate of 0 turns that budget off.
    """

    def __init__(
        self,
        *,
        rows_per_s: float = ROWS_PER_S,
        bytes_per_s: float = BYTES_PER_S,
        burst_s: float = BURST_S,
        max_request_rows: int = MAX_REQUEST_ROWS,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_request_rows = max_request_rows
        self.rates = {"rows": float(rows_per_s), "bytes": float(bytes_per_s)}
        self._burst_s = burst_s
        self._now = now
        self._lock = threading.Lock()
        # (client, kind) -> (tokens, when they were counted)
        self._buckets: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()

    def charge(self, client: str, *, rows: int = 0, bytes: int = 0) -> float:
        """Take ``rows`` and ``bytes`` from ``client``'s budget: 0.0 when paid, else the
        seconds until it could be (nothing is taken then)."""
        with self._lock:
            now = self._now()
            wanted = {"rows": rows, "bytes": bytes}
            levels: dict[str, float] = {}
            wait = 0.0
            for kind, amount in wanted.items():
                rate = self.rates[kind]
                if rate <= 0 or amount <= 0:
                    continue
                capacity = rate * self._burst_s
                tokens, then = self._buckets.get((client, kind), (capacity, now))
                tokens = min(capacity, tokens + (now - then) * rate)
                levels[kind] = tokens
                # A request bigger than the burst is paid for from a full bucket, going negative.
                need = min(amount, capacity)
                if tokens < need:
                    wait = max(wait, (need - tokens) / rate)
            for kind, tokens in levels.items():
                key = (client, kind)
                self._buckets[key] = (tokens - wanted[kind] if not wait else tokens, now)
                self._buckets.move_to_end(key)
            while len(self._buckets) > 2 * MAX_CLIENTS:
                self._buckets.popitem(last=False)
            return wait
