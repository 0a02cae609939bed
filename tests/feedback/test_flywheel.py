"""Issue 7: flywheel export — failed queries collapse into candidates, most frequent first."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragmeter.cli.flywheel import flywheel
from ragmeter.errors import InputError
from ragmeter.feedback._textsim import normalise
from ragmeter.feedback.flywheel import export_candidates, parse_duration
from ragmeter.feedback.querylog import LogRecord, QueryLogger, query_row
from ragmeter.gold.files import load_gold
from ragmeter.store import Store

HITS = [{"id": "index.md#0", "doc": "index.md", "text": "uv is fast"},
        {"id": "cache.md#1", "doc": "cache.md", "text": "uv cache clean"}]  # fmt: skip


def fill(store: Store) -> None:
    with QueryLogger(store) as log:
        for text, up in [
            ("how to clear the cache", False), ("How to clear the cache?", False),
            ("how to clear cache", False), ("pin python version", False),
            ("what is uv", True), ("how to clear the cache", None), ("publish a package", None),
        ]:  # fmt: skip
            qid = log.log(text, HITS)
            if up is not None:
                log.feedback(qid, thumbs_up=up, comment=None if up else "not helpful")


def test_thumbs_down_collapse_most_frequent_first(store: Store) -> None:
    """Issue 7: repeated and near-duplicate failures become one candidate with a count."""
    fill(store)
    items = export_candidates(store)
    # Phrasings logged in the same millisecond tie; which one leads is then alphabetical.
    assert [(normalise(i.question), i.metadata["count"]) for i in items] == [
        ("how to clear the cache", 3),
        ("pin python version", 1),
    ]
    top = items[0]
    assert sorted([top.question, *top.metadata["variants"]]) == [
        "How to clear the cache?",
        "how to clear cache",
        "how to clear the cache",
    ]
    assert top.status == "candidate" and top.source == "log" and top.relevant == ()
    assert [h["id"] for h in top.metadata["retrieved"]] == ["index.md#0", "cache.md#1"]
    assert top.metadata["comments"] == ["not helpful"]
    assert top.id.startswith("log-") and top.tags == ("flywheel",)


def test_judge_low_relevance_and_negative_only(store: Store) -> None:
    """Issue 7: with a grader, queries whose hits it grades low are candidates too."""
    fill(store)
    seen: list[str] = []

    def grader(query: str, hits: Sequence[dict[str, Any]]) -> list[int]:
        seen.append(query)
        return [3 if "publish" in query else 0 for _ in hits]

    items = export_candidates(store, grader=grader)
    reasons = {normalise(i.question): i.metadata["reasons"] for i in items}
    assert reasons["how to clear the cache"] == {"thumbs_down": 3, "low_relevance": 1}
    assert "publish a package" not in reasons and "what is uv" in reasons
    negative = export_candidates(store, grader=grader, negative_only=True)
    assert [normalise(i.question) for i in negative] == [
        "how to clear the cache",
        "pin python version",
    ]


def test_since_window(store: Store) -> None:
    """Issue 7: --since keeps only queries logged within the window."""
    old = datetime.now(UTC) - timedelta(days=10)
    rows = [query_row(LogRecord(query="old failure", created=old))]
    store.add_query_log(rows, [{"query_id": rows[0]["id"], "created": rows[0]["created"],
                               "thumbs_up": 0, "comment": None}])  # fmt: skip
    fill(store)
    assert "old failure" in [i.question for i in export_candidates(store)]
    recent = export_candidates(store, since=parse_duration("7d"))
    assert "old failure" not in [i.question for i in recent]
    assert parse_duration("12h") == timedelta(hours=12)
    with pytest.raises(InputError, match="not like 30m"):
        parse_duration("a week")


def test_export_and_import_cli(tmp_path: Path) -> None:
    """Issue 7: `flywheel import` then `flywheel export --since 7d --negative-only`."""
    db = tmp_path / "s.db"
    log = tmp_path / "log.jsonl"
    log.write_text('{"query": "reset password", "hits": [], "thumbs_up": false}\n'
                   '{"query": "Reset password!", "hits": []}\n')  # fmt: skip
    runner = CliRunner()
    imported = runner.invoke(flywheel, ["import", str(log), "--store", str(db)])
    assert imported.exit_code == 0 and "imported 2 queries and 1 feedback rows" in imported.output
    out = tmp_path / "c.yaml"
    args = ["export", "--since", "7d", "--negative-only", "--out", str(out), "--store", str(db)]
    exported = runner.invoke(flywheel, args)
    assert exported.exit_code == 0, exported.output
    assert "1 candidates (1 failed queries)" in exported.output
    assert [i.question for i in load_gold(out)] == ["reset password"]


def test_flywheel_import_reads_with_the_strict_reader(tmp_path: Path, store: Store) -> None:
    """Issue 19.10: the query-log import drops a BOM and refuses duplicate keys with the line."""
    from ragmeter.errors import InputError
    from ragmeter.feedback.querylog import import_jsonl

    good = tmp_path / "log.jsonl"
    good.write_bytes(b'\xef\xbb\xbf{"query": "how do I clear the cache"}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "a"}\n{"query": "b", "query": "c"}\n', encoding="utf-8")
    assert import_jsonl(good, store) == (1, 0, 0)
    with pytest.raises(InputError, match=r"bad.jsonl line 2: .*query"):
        import_jsonl(bad, store)
    assert store.query_log_counts() == (1, 0)
