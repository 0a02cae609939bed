"""Log production queries and user feedback into the store, without slowing the caller.

``QueryLogger.log()`` shapes one row and puts it on a queue; a background thread
writes queued rows in batches (one transaction each), so the request path never
waits for the database. ``flush()`` waits until everything queued so far is
written; ``close()`` flushes and stops the thread (also run at interpreter exit).

>>> from ragmeter.store import Store
>>> with QueryLogger(store=Store.memory()) as logger:
...     qid = logger.log("how do I install?", [{"id": "install.md#0", "doc": "install.md"}])
...     logger.feedback(qid, thumbs_up=False, comment="wrong page")
...     logger.flush(); logger.store.query_log_counts()
(1, 1)

The same records, one JSON object a line, can be imported in bulk with
``import_jsonl`` (``ragmeter flywheel import``): a line with ``query`` is a logged
query (optionally with ``thumbs_up``/``comment`` feedback inline), a line with
``query_id`` and ``thumbs_up`` but no ``query`` is feedback on an earlier line.
"""

from __future__ import annotations

import atexit
import json
import math
import queue
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragmeter.errors import InputError, StoreError, located

__all__ = [
    "FeedbackRecord",
    "HitRecord",
    "LogRecord",
    "QueryLogger",
    "Submission",
    "import_jsonl",
    "parse_body",
    "validation_message",
]

#: Rows written per transaction at most.
BATCH_SIZE = 500
#: How long the writer waits for more rows before writing a partial batch (seconds).
FLUSH_INTERVAL_S = 0.2
#: Rows that may wait in memory, counted in rows (a request of 1,000 rows counts 1,000);
#: past this, log() waits for the writer (back-pressure) and submit() refuses.
MAX_PENDING = 100_000
#: Longest query, comment and hit text kept (characters); longer input is refused.
MAX_TEXT = 10_000
#: Most hits one logged query may carry.
MAX_HITS = 200


class HitRecord(BaseModel):
    """One retrieved item as a service reports it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1, max_length=1000)
    doc: str | None = Field(default=None, max_length=1000)
    score: float | None = Field(default=None, allow_inf_nan=False)
    text: str | None = Field(default=None, max_length=MAX_TEXT)


class LogRecord(BaseModel):
    """One logged query: what was asked and what came back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str = Field(min_length=1, max_length=MAX_TEXT)
    hits: list[HitRecord] = Field(default_factory=list, max_length=MAX_HITS)
    latency_ms: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    user: str | None = Field(default=None, max_length=1000)
    meta: dict[str, Any] | None = None
    # Only for bulk import: keep the service's own id and time.
    id: str | None = Field(default=None, min_length=1, max_length=200)
    created: datetime | None = None
    thumbs_up: bool | None = None
    comment: str | None = Field(default=None, max_length=MAX_TEXT)


class FeedbackRecord(BaseModel):
    """A thumbs up or down on a logged query."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str = Field(min_length=1, max_length=200)
    thumbs_up: bool
    comment: str | None = Field(default=None, max_length=MAX_TEXT)
    created: datetime | None = None


def validation_message(error: ValidationError) -> tuple[str, list[str]]:
    """One sentence naming the first bad field, and every bad field's dotted name.

    >>> try:
    ...     FeedbackRecord.model_validate({"query_id": "q"})
    ... except ValidationError as e:
    ...     validation_message(e)
    ('thumbs_up: Field required', ['thumbs_up'])
    """
    names = [".".join(str(p) for p in e["loc"]) or "body" for e in error.errors()]
    first = error.errors()[0]
    return f"{names[0]}: {first['msg']}", list(dict.fromkeys(names))


def parse_body(body: bytes, what: str = "valid JSON") -> Any:
    """A request body's JSON; ``InputError`` (``body: not {what} (...)``) when it is not
    JSON, or when it nests deeper than ``MAX_NESTING_DEPTH`` (a deep body raised
    RecursionError, issue 27.12).

    >>> parse_body(b"[" * 5000 + b"]" * 5000)
    Traceback (most recent call last):
    ...
    ragmeter.errors.InputError: body: nested more than 64 levels deep
    """
    from ragmeter.formats.text import MAX_NESTING_DEPTH, nested_too_deep

    too_deep = f"body: nested more than {MAX_NESTING_DEPTH} levels deep"
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"body: not {what} ({error})") from None
    except RecursionError:
        raise InputError(too_deep) from None
    if nested_too_deep(data):
        raise InputError(too_deep)
    return data


def _iso(moment: datetime | None = None) -> str:
    moment = moment or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _hit_dict(hit: Any) -> dict[str, Any]:
    """A hit (Hit, dict, or object with id/doc/score/text) as a JSON-ready dict."""

    def get(key: str) -> Any:
        return hit.get(key) if isinstance(hit, Mapping) else getattr(hit, key, None)

    hit_id = get("id") or get("doc")
    if hit_id is None:
        raise InputError(f"hit {hit!r} has neither id nor doc")
    out: dict[str, Any] = {"id": str(hit_id), "doc": str(get("doc") or hit_id)}
    score = get("score")
    if score is not None:
        out["score"] = float(score)
        if not math.isfinite(out["score"]):
            raise InputError(f"hit {hit_id!r}: score must be a finite number, got {score!r}")
    text = get("text")
    if text:
        out["text"] = str(text)[:MAX_TEXT]
    return out


def query_row(record: LogRecord, query_id: str | None = None) -> dict[str, Any]:
    """The store row for a validated log record."""
    return {
        "id": record.id or query_id or uuid.uuid4().hex,
        "created": _iso(record.created),
        "query": record.query,
        "hits": json.dumps([_hit_dict(h.model_dump()) for h in record.hits]),
        "latency_ms": record.latency_ms,
        "user": record.user,
        "meta": json.dumps(record.meta) if record.meta else None,
    }


def feedback_row(record: FeedbackRecord) -> dict[str, Any]:
    """The store row for a validated feedback record."""
    return {
        "query_id": record.query_id,
        "created": _iso(record.created),
        "thumbs_up": int(record.thumbs_up),
        "comment": record.comment,
    }


class Submission:
    """Rows handed to the writer, which a waiting request may withdraw before they are written.

    ``withdraw()`` is True when the rows will not be written (the writer had not started on
    them), False when the writer already is writing them (wait for ``on_written`` then).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "queued"

    def withdraw(self) -> bool:
        with self._lock:
            if self._state == "queued":
                self._state = "withdrawn"
            return self._state == "withdrawn"

    def start(self) -> bool:
        """The writer's side: False when withdrawn, else the rows are now being written."""
        with self._lock:
            if self._state == "queued":
                self._state = "writing"
            return self._state == "writing"


class QueryLogger:
    """Log queries and feedback to a store from a request path; writes happen in batches.

    ``store`` is a store URL or path (opened and closed by the logger) or an open
    ``Store`` (left open). Thread-safe: one logger serves a whole process.
    """

    def __init__(
        self,
        store: Any,
        *,
        batch_size: int = BATCH_SIZE,
        flush_interval: float = FLUSH_INTERVAL_S,
        max_pending: int = MAX_PENDING,
    ) -> None:
        from ragmeter.store import Store

        self._owns_store = not isinstance(store, Store)
        self.store: Any = Store.open(store) if self._owns_store else store
        self._batch_size = batch_size
        self._interval = flush_interval
        self._queue: queue.Queue[Any] = queue.Queue()
        # Rows queued and not yet written: the bound (issue 27.1 counted queued requests).
        self._max_pending = max_pending
        self._pending = 0
        self._room = threading.Condition()
        self._error: BaseException | None = None
        self._closed = False
        self._wake = threading.Event()  # set by flush()/close() to write at once
        self._thread = threading.Thread(target=self._run, name="ragmeter-querylog", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # -- the caller's side -------------------------------------------------------------

    def log(
        self,
        query: str,
        hits: Sequence[Any] = (),
        latency_ms: float | None = None,
        user: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> str:
        """Queue one query with what was retrieved; returns its id at once.

        ``hits`` are ``Hit`` objects or dicts with ``id``/``doc`` (and optional
        ``score``, ``text``: text helps the reviewer later). ``meta`` must be JSON.

        >>> from ragmeter.store import Store
        >>> logger = QueryLogger(Store.memory()); len(logger.log("q", [])); logger.close()
        32
        """
        self._check_open()
        if not isinstance(query, str) or not query.strip():
            raise InputError("log(): query must be a non-empty string")
        if latency_ms is not None and not (math.isfinite(latency_ms) and latency_ms >= 0):
            raise InputError(f"log(): latency_ms must be a finite number >= 0, got {latency_ms!r}")
        row = {
            "id": uuid.uuid4().hex,
            "created": _iso(),
            "query": query[:MAX_TEXT],
            "hits": json.dumps([_hit_dict(h) for h in hits]),
            "latency_ms": None if latency_ms is None else float(latency_ms),
            "user": user,
            "meta": json.dumps(dict(meta), default=str) if meta else None,
        }
        self._put(("q", row), 1)
        return str(row["id"])

    def feedback(self, query_id: str, thumbs_up: bool, comment: str | None = None) -> None:
        """Queue a thumbs up/down (and an optional comment) on a logged query.

        ``logger.feedback(qid, thumbs_up=False, comment="outdated answer")``
        """
        self._check_open()
        row = {
            "query_id": str(query_id),
            "created": _iso(),
            "thumbs_up": int(bool(thumbs_up)),
            "comment": comment,
        }
        self._put(("f", row), 1)

    def submit(
        self,
        queries: Sequence[Mapping[str, Any]],
        feedback: Sequence[Mapping[str, Any]] = (),
        *,
        answers: Mapping[str, str] | None = None,
        on_written: Callable[[BaseException | None, int], None] | None = None,
    ) -> Submission:
        """Queue store rows built by ``query_row``/``feedback_row``, written in one batch.

        With ``on_written``, the writer calls it from its thread once these rows are
        committed (``None``, and how many of ``queries`` were skipped because their id
        was already stored) or their write failed (the error, 0), and writes at once
        instead of waiting for more rows; when ``MAX_PENDING`` rows would be waiting it
        raises ``StoreError`` rather than blocking (the ingest endpoint answers 503).
        ``answers`` (query id -> answer) are set on queries already stored, in the same
        transaction. The returned :class:`Submission` can be withdrawn while it waits.
        """
        self._check_open()
        rows = len(queries) + len(feedback) + len(answers or {})
        ticket = Submission()
        item = ("rows", (list(queries), list(feedback), on_written, dict(answers or {}), ticket))
        self._put(item, rows, block=on_written is None)
        return ticket

    def _put(self, item: tuple[str, Any], rows: int, *, block: bool = True) -> None:
        with self._room:
            # One submission bigger than the bound is let through alone, never forever refused.
            while self._pending and self._pending + rows > self._max_pending:
                if not block:
                    raise StoreError(
                        f"query log: {self._pending} rows already wait to be written "
                        f"(at most {self._max_pending})"
                    )
                self._room.wait()
            self._pending += rows
        self._queue.put((*item, rows))

    def _release(self, rows: int) -> None:
        with self._room:
            self._pending -= rows
            self._room.notify_all()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything queued so far is written; raise if a write failed."""
        done = threading.Event()
        self._queue.put(("flush", done, 0))
        self._wake.set()
        if not done.wait(timeout):
            raise StoreError(f"query log: rows not written within {timeout} s")
        self._raise_pending()

    def close(self) -> None:
        """Flush, stop the writer thread and close the store if the logger opened it."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._queue.put(("stop", None, 0))
        self._wake.set()
        self._thread.join()
        if self._owns_store:
            self.store.close()
        self._raise_pending()

    def __enter__(self) -> QueryLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("this QueryLogger is closed")
        self._raise_pending()

    def _raise_pending(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise StoreError(f"query log: writing to {self.store.url} failed: {error}") from error

    # -- the writer thread -------------------------------------------------------------

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            # Let rows accumulate for one interval rather than waking per row: a writer
            # that wakes often competes with the request threads for the GIL.
            acknowledged = first[0] == "rows" and first[1][2] is not None
            if first[0] not in ("flush", "stop") and not acknowledged:
                self._wake.wait(self._interval)
            self._wake.clear()
            batch = [first]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            # Transactions of about ``batch_size`` rows; one submission is never split.
            group: list[tuple[str, Any, int]] = []
            rows = 0
            for item in batch:
                if group and rows + item[2] > self._batch_size:
                    stop = self._write(group) or stop
                    group, rows = [], 0
                group.append(item)
                rows += item[2]
            if group:
                stop = self._write(group) or stop

    def _write(self, batch: list[tuple[str, Any, int]]) -> bool:
        queries: list[dict[str, Any]] = []
        feedback: list[dict[str, Any]] = []
        answers: dict[str, str] = {}
        waiting: list[threading.Event] = []
        # Each acknowledged submit and the span of ``queries`` its rows occupy.
        callbacks: list[tuple[Callable[[BaseException | None, int], None], int, int]] = []
        unacknowledged = False
        stop = False
        for kind, value, _ in batch:
            if kind == "rows" and not value[4].start():
                continue  # its request gave up waiting and answered 503: write nothing
            if kind == "q":
                queries.append(value)
                unacknowledged = True
            elif kind == "f":
                feedback.append(value)
                unacknowledged = True
            elif kind == "rows":
                start = len(queries)
                queries.extend(value[0])
                feedback.extend(value[1])
                answers.update(value[3])
                if value[2] is None:
                    unacknowledged = True
                else:
                    callbacks.append((value[2], start, len(queries)))
            elif kind == "flush":
                waiting.append(value)
            else:
                stop = True
        failure: BaseException | None = None
        skipped: tuple[int, ...] = ()
        try:
            if queries or feedback or answers:
                skipped = self.store.add_query_log(queries, feedback, answers=answers).skipped
        except BaseException as error:  # keep the thread alive; report on the next call
            failure = error
            if unacknowledged:  # callers with on_written hear of it there, once
                self._error = error
        self._release(sum(item[2] for item in batch))
        for callback, start, end in callbacks:
            callback(failure, sum(start <= position < end for position in skipped))
        for event in waiting:
            event.set()
        return stop


def import_jsonl(path: str | Path, store: Any) -> tuple[int, int, int]:
    """Import logged queries and feedback from a JSONL file in one transaction.

    Every line is validated first; a bad line is an ``InputError`` naming the
    file, line and field, and then nothing is written. A query whose ``id`` is
    already stored (the file imported twice) is skipped, not updated. Returns
    (queries written, feedback rows written, queries skipped as already stored).

    >>> import_jsonl("queries.jsonl", Store.open("runs.db"))  # doctest: +SKIP
    (1200, 85, 0)
    """
    from ragmeter.formats.text import read_jsonl

    path = Path(path)
    queries: list[dict[str, Any]] = []
    feedback: list[dict[str, Any]] = []
    # The shared reader: BOM dropped, duplicate keys, NaN, huge integers and deep nesting
    # refused with the line (issue 19.10, 19.11).
    for number, data in read_jsonl(path, "query log", InputError):
        for row_kind, row in _import_rows(data, path, number):
            (queries if row_kind == "q" else feedback).append(row)
    written = store.add_query_log(queries, feedback)
    return written.queries, written.feedback, written.duplicates


def _import_rows(data: dict[str, Any], path: Path, number: int) -> Iterable[tuple[str, Any]]:
    try:
        if "query" not in data:
            yield "f", feedback_row(FeedbackRecord.model_validate(data))
            return
        record = LogRecord.model_validate(data)
    except ValidationError as error:
        message, _ = validation_message(error)
        raise InputError(located("query log", path, number, message)) from None
    row = query_row(record)
    yield "q", row
    if record.thumbs_up is not None:
        fb = FeedbackRecord(
            query_id=row["id"],
            thumbs_up=record.thumbs_up,
            comment=record.comment,
            created=record.created,
        )
        yield "f", feedback_row(fb)
