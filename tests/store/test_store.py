"""The run store on real SQLite files and in memory (issue 3, item 5; issue 9, item 1)."""

from __future__ import annotations

import math
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ragmeter.documents import Hit
from ragmeter.errors import RunNotFoundError, StoreError
from ragmeter.run import QuestionResult, RunInfo
from ragmeter.store import DEFAULT_STORE_URL, Store


def make_gold(digest: str = "gold-1", name: str = "faq") -> SimpleNamespace:
    records = [{"id": "q1", "question": "How long?"}, {"id": "q2", "question": "Where?"}]
    return SimpleNamespace(hash=digest, name=name, to_records=lambda: records)


def new_run(store: Store, name: str | None = "baseline", **overrides: Any) -> RunInfo:
    fields: dict[str, Any] = {
        "name": name,
        "gold_hash": store.save_gold(make_gold()),
        "retriever": "bm25",
        "config": {"chunker": "markdown", "size": 800},
        "k": 10,
        "level": "doc",
        "commit": "abc123",
    }
    fields.update(overrides)
    return store.create_run(**fields)


def result(item_id: str, n_hits: int = 3, **fields: Any) -> QuestionResult:
    hits = tuple(
        Hit(id=f"{item_id}-doc{j}.md#{j}", doc=f"{item_id}-doc{j}.md", score=10.0 - j, text="x")
        for j in range(n_hits)
    )
    return QuestionResult(item_id=item_id, hits=hits, latency_ms=1.5, **fields)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The same behaviour from an in-memory store, a real SQLite file and real PostgreSQL."""
    if request.param == "memory":
        opened = Store.memory()
    elif request.param == "sqlite":
        opened = Store.open(tmp_path / "r.db")
    else:
        opened = Store.open(request.getfixturevalue("postgres_url"))
    with opened:
        yield opened


# -- opening -------------------------------------------------------------------------


def test_open_path_creates_folders_and_uses_wal(tmp_path: Path) -> None:
    """Issue 3: a path opens a SQLite file, creating its folder, in WAL mode."""
    path = tmp_path / "deep" / "er" / "ragmeter.db"
    with Store.open(path) as store:
        assert store.url == f"sqlite:///{path}"
        new_run(store)
    assert path.exists()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_open_sqlite_url_relative_to_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 3: the default URL is relative to the working directory, folder created."""
    monkeypatch.chdir(tmp_path)
    assert DEFAULT_STORE_URL == "sqlite:///.ragmeter/ragmeter.db"
    with Store.open(DEFAULT_STORE_URL) as store:
        new_run(store)
    assert (tmp_path / ".ragmeter" / "ragmeter.db").is_file()


def test_connection_pragmas_are_traced(tmp_path: Path) -> None:
    """Issue 3: every connection gets busy_timeout, foreign keys and WAL."""
    seen: list[str] = []
    with Store.open(tmp_path / "r.db", tracer=lambda sql, params: seen.append(sql)) as store:
        store.list_runs()
    assert "PRAGMA foreign_keys = ON" in seen
    assert "PRAGMA journal_mode = WAL" in seen
    assert any(sql.startswith("PRAGMA busy_timeout") for sql in seen)


def test_tracer_sees_every_statement_with_params(store_url: str) -> None:
    """Issue 3, 9: tracer=print style, as in sqlite-utils: (sql, params) for each statement."""
    seen: list[tuple[str, Any]] = []
    with Store.open(store_url, tracer=lambda sql, params: seen.append((sql, params))) as s:
        run = new_run(s)
        seen.clear()
        s.add_results(run.id, [result("q1")])
        s.get_run("baseline")
    statements = [sql for sql, _ in seen]
    if store_url.startswith("sqlite"):
        assert "BEGIN IMMEDIATE" in statements  # writes take the write lock up front
    inserts = [(sql, p) for sql, p in seen if sql.startswith("INSERT INTO results")]
    assert len(inserts) == 1 and "q1" in str(inserts[0][1])
    assert any("FROM runs" in sql and "runs.name" in sql for sql in statements)


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    """Issue 3: a file that is not SQLite gives a StoreError naming the store."""
    path = tmp_path / "notes.db"
    path.write_text("this is not a database\n" * 100)
    with pytest.raises(StoreError, match="notes.db"):
        Store.open(path)


def test_postgres_url_without_driver_is_a_clear_error() -> None:
    """Issue 9: postgresql:// means psycopg 3; without it, say what to install.

    A fresh interpreter where ``import psycopg`` fails, as it does without the extra.
    """
    script = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from ragmeter.errors import StoreError\n"
        "from ragmeter.store import Store\n"
        "try:\n"
        "    Store.open('postgresql://user@127.0.0.1:1/ragmeter')\n"
        "except StoreError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "install ragmeter[postgres]" in done.stdout
    assert "postgresql+psycopg://user@127.0.0.1:1/ragmeter" in done.stdout


# -- gold sets and runs ----------------------------------------------------------------


def test_gold_saved_once_per_hash(store: Store) -> None:
    """Issue 3: gold sets are kept by content hash, once."""
    calls: list[int] = []
    gold = make_gold()
    records: list[dict[str, str]] = gold.to_records()

    def to_records() -> list[dict[str, str]]:
        calls.append(1)
        return records

    gold.to_records = to_records
    assert store.save_gold(gold) == "gold-1"
    assert store.save_gold(gold) == "gold-1"
    assert len(calls) == 1  # the second save did not even serialise it
    assert store.load_gold_records("gold-1") == records
    with pytest.raises(StoreError, match="gold set nope is not in the store"):
        store.load_gold_records("nope")


def test_create_run_records_everything(store: Store) -> None:
    """Issue 3: a run keeps name, note, created, commit, gold hash, retriever, config, k, level."""
    run = new_run(store, note="+ bigger chunks", level="chunk")
    assert run == store.get_run(run.id)
    assert (run.name, run.note, run.status, run.level, run.k) == (
        "baseline",
        "+ bigger chunks",
        "running",
        "chunk",
        10,
    )
    assert run.commit == "abc123" and run.gold_hash == "gold-1" and run.retriever == "bm25"
    assert run.config == {"chunker": "markdown", "size": 800}
    assert run.created.endswith("Z") and "T" in run.created
    auto = new_run(store, name=None)
    assert auto.name == f"run-{auto.id}"


def test_create_run_needs_saved_gold_and_a_level(store: Store) -> None:
    """Issue 3: resume rebuilds the gold set from the store, so it must be there."""
    with pytest.raises(StoreError, match="save_gold"):
        store.create_run(
            name="x",
            gold_hash="missing",
            retriever="bm25",
            config={},
            k=5,
            level="doc",
            commit=None,
        )
    with pytest.raises(ValueError, match="level"):
        new_run(store, level="sentence")


def test_get_run_by_id_name_latest(store: Store) -> None:
    """Issue 3: RUN = id | name | latest; a name means its newest run."""
    first = new_run(store, name="baseline")
    other = new_run(store, name="hybrid")
    again = new_run(store, name="baseline")
    assert store.get_run(first.id).id == first.id
    assert store.get_run(str(other.id)).id == other.id
    assert store.get_run("baseline").id == again.id
    assert store.get_run("hybrid").id == other.id
    assert store.get_run("latest").id == again.id


def test_get_run_not_found_lists_newest_five(store: Store) -> None:
    """Issue 3: a missing run names what is there, newest first."""
    with pytest.raises(RunNotFoundError, match="has no runs yet"):
        store.get_run("latest")
    for n in range(7):
        new_run(store, name=f"variant-{n}")
    with pytest.raises(RunNotFoundError) as caught:
        store.get_run("varient-3")
    message = str(caught.value)
    assert message.startswith('no run "varient-3" in the store')
    assert all(f"variant-{n}" in message for n in range(2, 7))
    assert "variant-1" not in message and "variant-0" not in message
    assert message.index("variant-6") < message.index("variant-2")
    with pytest.raises(RunNotFoundError, match='no run "99"'):
        store.get_run(99)


def test_finish_and_update_run(store: Store) -> None:
    """Issue 3: a run ends complete, interrupted or failed, with its counts."""
    run = new_run(store)
    done = store.finish_run(run.id, "interrupted", n_questions=40, n_errors=3)
    assert (done.status, done.n_questions, done.n_errors) == ("interrupted", 40, 3)
    changed = store.update_run(run.id, note="resumed", config={"size": 400}, status="running")
    assert (changed.note, changed.config, changed.status) == ("resumed", {"size": 400}, "running")
    assert store.get_run(run.id) == changed
    with pytest.raises(ValueError, match="status"):
        store.finish_run(run.id, "running", n_questions=1, n_errors=0)
    with pytest.raises(ValueError, match="status"):
        store.update_run(run.id, status="done")
    with pytest.raises(TypeError, match="gold_hash"):
        store.update_run(run.id, gold_hash="other")
    with pytest.raises(RunNotFoundError):
        store.update_run(12345, note="x")


def test_list_runs_oldest_first_with_means(store: Store) -> None:
    """Issue 3: `ragmeter runs` reads runs oldest first, metric means filled in."""
    assert store.list_runs() == []
    a = new_run(store, name="a")
    b = new_run(store, name="b")
    store.set_metrics(a.id, {"hit@5": 0.5, "mrr": 0.25}, {})
    runs = store.list_runs()
    assert [r.name for r in runs] == ["a", "b"]
    assert runs[0].metrics == {"hit@5": 0.5, "mrr": 0.25}
    assert runs[1].metrics == {} and runs[1].id == b.id


def test_delete_run_removes_its_rows(store: Store) -> None:
    """Issue 3: deleting a run deletes its results and metrics, not other runs'."""
    keep, drop = new_run(store, name="keep"), new_run(store, name="drop")
    for run in (keep, drop):
        store.add_results(run.id, [result("q1"), result("q2")])
        store.set_metrics(run.id, {"mrr": 1.0}, {"mrr": {"q1": 1.0, "q2": 1.0}})
    store.delete_run(drop.id)
    with pytest.raises(RunNotFoundError):
        store.get_run(drop.id)
    with pytest.raises(RunNotFoundError):
        list(store.results(drop.id))
    assert store.question_metrics(drop.id) == {}
    assert store.completed_items(drop.id) == set()
    assert store.completed_items(keep.id) == {"q1", "q2"}
    assert store.question_metrics(keep.id) == {"mrr": {"q1": 1.0, "q2": 1.0}}
    with pytest.raises(RunNotFoundError):
        store.delete_run(drop.id)
    assert new_run(store, name="next").id > drop.id  # ids users typed never come back


# -- results ---------------------------------------------------------------------------


def test_results_round_trip_without_chunk_text(store: Store) -> None:
    """Issue 3: rankings keep id, doc, score and span; the chunk text is not stored."""
    run = new_run(store)
    hit = Hit(id="faq.md#4", doc="faq.md", score=12.5, text="long text", start=10, end=90)
    rows = [
        QuestionResult(item_id="q1", hits=(hit, Hit(id="a.md", doc="a.md")), latency_ms=3.25),
        QuestionResult(item_id="q2", error="TimeoutError: 30 s", latency_ms=None),
        QuestionResult(item_id="q3", answer="30 days", extra={"tokens": 12, "tags": ["a"]}),
    ]
    store.add_results(run.id, rows)
    back = list(store.results(run.id))
    assert [r.item_id for r in back] == ["q1", "q2", "q3"]
    # The references get_run accepts work here too (a name used to read nothing).
    assert list(store.results(run.name)) == list(store.results("latest")) == back
    assert back[0].hits == (
        Hit(id="faq.md#4", doc="faq.md", score=12.5, start=10, end=90),
        Hit(id="a.md", doc="a.md"),
    )
    assert back[0].latency_ms == 3.25 and back[0].error is None
    assert back[1] == rows[1]
    assert back[2] == rows[2]


def test_readding_an_item_replaces_it(store: Store) -> None:
    """Issue 3: resume re-runs in-flight questions; their new row replaces the old one."""
    run = new_run(store)
    store.add_results(run.id, [result("q1"), result("q2"), result("q3")])
    store.add_results(run.id, [result("q2", n_hits=1), result("q4", error="boom", n_hits=0)])
    store.add_results(run.id, [result("q5", n_hits=1), result("q5", n_hits=2)])  # last wins
    back = list(store.results(run.id))
    assert [r.item_id for r in back] == ["q1", "q3", "q2", "q4", "q5"]
    assert len(back[2].hits) == 1 and len(back[4].hits) == 2


def test_completed_items_for_resume(store: Store) -> None:
    """Issue 3: resume skips finished questions; errors can be retried."""
    run = new_run(store)
    other = new_run(store, name="other")
    store.add_results(run.id, [result("q1"), result("q2", error="HTTP 500", n_hits=0)])
    store.add_results(other.id, [result("q9")])
    assert store.completed_items(run.id) == {"q1", "q2"}
    assert store.completed_items(run.id, include_errors=False) == {"q1"}
    store.add_results(run.id, [result("q2")])  # retried and succeeded
    assert store.completed_items(run.id, include_errors=False) == {"q1", "q2"}


def test_results_are_read_in_pages_in_order(store: Store) -> None:
    """Issue 9: results stream back page by page, in insertion order, none lost."""
    run = new_run(store)
    ids = [f"item-{n:05d}" for n in range(4_500, 0, -1)]  # not in sort order
    for start in range(0, len(ids), 1_000):
        store.add_results(run.id, [result(i, n_hits=1) for i in ids[start : start + 1_000]])
    assert [r.item_id for r in store.results(run.id)] == ids


def test_add_results_from_threads(store: Store) -> None:
    """Issue 3: evaluate() writes from worker threads; one writer serialises them."""
    run = new_run(store)
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            for b in range(10):
                store.add_results(run.id, [result(f"w{w}-{b}-{i}") for i in range(20)])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.completed_items(run.id)) == 4 * 10 * 20


# -- metrics ---------------------------------------------------------------------------


def test_metrics_round_trip_and_replace(store: Store) -> None:
    """Issue 3: per-question metric values keyed by canonical metric string."""
    run = new_run(store)
    per = {"hit@5": {"q1": 1.0, "q2": 0.0}, "ndcg@10": {"q1": 0.63, "q2": 0.0}}
    store.set_metrics(run.id, {"hit@5": 0.5, "ndcg@10": 0.315}, per)
    assert store.question_metrics(run.id) == per
    assert store.question_metrics(run.id, ["ndcg@10"]) == {"ndcg@10": per["ndcg@10"]}
    assert store.question_metrics(run.id, ["recall@5"]) == {"recall@5": {}}
    assert store.get_run(run.id).metrics == {"hit@5": 0.5, "ndcg@10": 0.315}
    store.set_metrics(run.id, {"mrr": 1.0}, {"mrr": {"q1": 1.0}})
    assert store.question_metrics(run.id) == {"mrr": {"q1": 1.0}}
    assert store.get_run(run.id).metrics == {"mrr": 1.0}
    with pytest.raises(RunNotFoundError):
        store.set_metrics(999, {"mrr": 1.0}, {})


def test_undefined_metric_is_kept_as_nan(store: Store) -> None:
    """Issue 3: an undefined value (no latencies at all) survives as NaN, not dropped."""
    run = new_run(store)
    store.set_metrics(run.id, {"latency_p50_ms": math.nan}, {"x": {"q1": math.nan}})
    assert math.isnan(store.get_run(run.id).metrics["latency_p50_ms"])
    assert math.isnan(store.question_metrics(run.id)["x"]["q1"])


def test_metric_columns_read_as_per_question_rows_did(store: Store) -> None:
    """Issue 29.2: a run's values are stored one row per metric; every reader gives what one
    row per (metric, question) gave. The reference is that table, kept as a list of rows."""
    rng = random.Random(29)
    ids = [f"q{n}" for n in range(300)] + ["é", "B", "b", "_x", "Z9", "z10", "日本"]
    rng.shuffle(ids)
    per: dict[str, dict[str, float]] = {
        "mrr": {i: rng.choice([0.0, 1.0, 0.5, 1 / 3, math.nan]) for i in ids},
        "ndcg@10": {i: rng.random() for i in ids},
        "faithful": {i: rng.choice([math.inf, -math.inf, 0.25, math.nan]) for i in ids[::3]},
        "empty": {},
    }
    run = new_run(store)
    store.set_metrics(run.id, {m: 0.5 for m in per}, per)
    # The old table: (metric, item id, value or NULL), and what its readers made of it.
    rows = [
        (m, i, None if math.isnan(v) else v) for m, values in per.items() for i, v in values.items()
    ]
    expected: dict[str, dict[str, float]] = {}
    for metric, item_id, value in rows:
        expected.setdefault(metric, {})[item_id] = math.nan if value is None else value
    assert store.question_metrics(run.id) == expected  # NaN is math.nan itself
    assert store.question_metric_names(run.id) == sorted({m for m, _, _ in rows})
    for metric in ("mrr", "ndcg@10", "faithful", "empty"):  # ndcg@10 shares mrr's ids
        column = sorted((i, v) for m, i, v in rows if m == metric)
        assert store.metric_column(run.id, metric) == (
            [i for i, _ in column],
            [v for _, v in column],
        )
    page = ["é", ids[4], ids[3], "nope"]
    assert store.question_metrics(run.id, ["faithful", "mrr"], item_ids=page) == {
        m: {i: v for i, v in expected[m].items() if i in page} for m in ("faithful", "mrr")
    }
    assert store.question_metrics(run.id, ["empty"], item_ids=page) == {"empty": {}}
    assert store.question_metrics(run.id, ["ndcg@10"], item_ids=page) == {
        "ndcg@10": {i: v for i, v in expected["ndcg@10"].items() if i in page}
    }
    assert store.question_metrics(run.id, ["ndcg@10"]) == {"ndcg@10": expected["ndcg@10"]}
