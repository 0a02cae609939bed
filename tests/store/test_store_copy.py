"""Copying history from a SQLite file into PostgreSQL (issue 9, item 1)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import insert, select

from ragmeter.cli import _LazyGroup
from ragmeter.cli.store import store as store_group
from ragmeter.documents import Hit
from ragmeter.errors import StoreError
from ragmeter.run import QuestionResult
from ragmeter.store import Store, schema
from ragmeter.store._engine import make_engine, to_url


class Gold:
    hash, name = "gold-1", "faq"

    def to_records(self) -> list[dict[str, Any]]:
        return [{"id": "q1", "question": "How long?"}, {"id": "q2", "question": "Where?"}]


def fill(path: Path) -> Store:
    """A SQLite store with two runs, a deleted third, results, metrics and logged queries."""
    store = Store.open(path)
    gold = store.save_gold(Gold())
    ids = []
    for name in ("baseline", "hybrid", "dropped"):
        run = store.create_run(
            name=name, gold_hash=gold, retriever="bm25", config={"n": 1}, k=5, level="doc",
            commit="abc",
        )  # fmt: skip
        hits = (Hit(id="a.md#1", doc="a.md", score=2.5, start=0, end=9), Hit(id="b.md", doc="b.md"))
        store.add_results(
            run.id,
            [
                QuestionResult(item_id="q1", hits=hits, latency_ms=1.25, extra={"grades": [1]}),
                QuestionResult(item_id="q2", error="TimeoutError: 30 s"),
            ],
        )
        per_query = {"mrr": {"q1": 1.0, "q2": 0.0}, "faithful": {"q2": math.nan}}
        store.set_metrics(run.id, {"mrr": 0.5, "p50": math.nan}, per_query)
        store.finish_run(run.id, "complete", n_questions=2, n_errors=1)
        ids.append(run.id)
    store.delete_run(ids[-1])  # its id must not come back in the copy
    if "query_log" in schema.metadata.tables:
        engine = make_engine(to_url(str(path)), None)
        with engine.begin() as conn:
            conn.execute(
                insert(schema.metadata.tables["query_log"]),
                [{"id": "abc", "created": "2026-01-01T00:00:00.000Z", "query": "refunds?",
                  "hits": "[]", "latency_ms": 3.0, "user": None, "meta": None}],
            )  # fmt: skip
        engine.dispose()
    return store


def dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every schema table, in primary-key order."""
    engine = make_engine(to_url(url), None)
    out = {}
    with engine.connect() as conn:
        for table in schema.metadata.sorted_tables:
            if table is schema.migrations_table:
                continue
            query = select(table).order_by(*table.primary_key.columns)
            out[table.name] = [tuple(row) for row in conn.execute(query)]
    engine.dispose()
    return out


def test_copy_keeps_every_row_and_id(store_url: str, tmp_path: Path) -> None:
    """Issue 9: `Store.copy_to` moves all history, ids unchanged, to SQLite or PostgreSQL."""
    source = fill(tmp_path / "old.db")
    with Store.open(store_url) as dest:
        copied = source.copy_to(dest)
        assert copied["runs"] == 2 and copied["results"] == 4 and copied["gold_sets"] == 1
        # One row per run and metric (issue 29.2): the blobs copy byte for byte (dump below).
        assert copied["metric_columns"] == 4 and copied["run_metrics"] == 4
        assert [(r.id, r.name, r.metrics["mrr"]) for r in dest.list_runs()] == [
            (1, "baseline", 0.5),
            (2, "hybrid", 0.5),
        ]
        assert math.isnan(dest.get_run(1).metrics["p50"])
        assert list(dest.results(2)) == list(source.results(2))
        # The copy goes on where the source left off: run 3 was deleted, the next is 4.
        run = dest.create_run(
            name="next", gold_hash="gold-1", retriever="x", config={}, k=5, level="doc",
            commit=None,
        )  # fmt: skip
        assert run.id == 4
        dest.add_results(run.id, [QuestionResult(item_id="q1")])
        # And back from the destination (PostgreSQL's BYTEA into SQLite's BLOB).
        with Store.open(tmp_path / "back.db") as back:
            dest.copy_to(back)
            for store in (dest, back):
                values = store.question_metrics(2)
                assert values["mrr"] == {"q1": 1.0, "q2": 0.0} and list(values["faithful"]) == [
                    "q2"
                ]
                assert math.isnan(values["faithful"]["q2"])
    expected = dump(source.url)
    source.close()
    got = dump(store_url)
    for table, rows in expected.items():
        if table == "runs":
            assert got[table][:-1] == rows
        elif table == "results":
            assert got[table][:-1] == rows and got[table][-1][0] > rows[-1][0]
        else:
            assert got[table] == rows, table


def test_copy_refuses_a_store_with_rows(store_url: str, tmp_path: Path) -> None:
    """Issue 9: copying into a store in use would clash on run ids: refused, nothing written."""
    source = fill(tmp_path / "old.db")
    with Store.open(store_url) as dest:
        dest.save_gold(Gold())
        with pytest.raises(StoreError, match=r"is not empty \(it has rows in gold_sets\)"):
            source.copy_to(dest)
        assert dest.list_runs() == []
        with pytest.raises(StoreError, match="onto itself"):
            source.copy_to(source)
    source.close()


def cli() -> _LazyGroup:
    # The same error handling as `ragmeter`, with just the `store` group.
    return _LazyGroup(name="ragmeter", commands={"store": store_group})


def test_store_copy_cli(postgres_url: str, tmp_path: Path) -> None:
    """Issue 9: `ragmeter store copy SRC DST` copies a SQLite file into PostgreSQL."""
    fill(tmp_path / "old.db").close()
    result = CliRunner().invoke(cli(), ["store", "copy", str(tmp_path / "old.db"), postgres_url])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    per_table = {line.split()[0]: int(line.split()[1].replace(",", "")) for line in lines[1:]}
    assert set(per_table) == set(schema.metadata.tables) - {"_migrations"}
    total = sum(per_table.values())
    assert lines[0] == (
        f"Copied {total} rows from sqlite:///{tmp_path / 'old.db'} to "
        f"{postgres_url.replace('postgresql://', 'postgresql+psycopg://')}:"
    )
    assert "  runs                        2" in lines
    assert "  results                     4" in lines
    with Store.open(postgres_url) as dest:
        assert [r.name for r in dest.list_runs()] == ["baseline", "hybrid"]

    again = CliRunner().invoke(cli(), ["store", "copy", str(tmp_path / "old.db"), postgres_url])
    assert again.exit_code == 2
    assert "is not empty" in again.output and again.output.startswith("Error: store ")

    missing = CliRunner().invoke(cli(), ["store", "copy", str(tmp_path / "nope.db"), postgres_url])
    assert (missing.exit_code, missing.output) == (
        2,
        f"Error: store {tmp_path / 'nope.db'} does not exist\n",
    )
