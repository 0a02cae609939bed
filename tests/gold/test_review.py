"""Issue 7: reviewing candidates (one atomic write per decision) and merging accepted items."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ragmeter.cli.gold import gold
from ragmeter.cli.review import review
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldItem
from ragmeter.gold.review import ReviewError, decide, merge_accepted, pending, save_items


def candidates(path: Path) -> Path:
    save_items(
        path,
        [
            GoldItem(id="syn-1", question="How do I pin Python?", status="candidate",
                     source="synthetic", relevant=[{"doc": "python.md", "quote": "pin"}]),
            GoldItem(id="syn-2", question="What is a lockfile", status="candidate",
                     source="synthetic", relevant=[{"doc": "lock.md"}]),
            GoldItem(id="log-3", question="cache too big", status="candidate", source="log",
                     metadata={"count": 4, "retrieved": [
                         {"id": "index.md#0", "doc": "index.md", "text": "uv is fast"},
                         {"id": "cache.md#2", "doc": "cache.md", "text": "uv cache clean"}]}),
        ],
    )  # fmt: skip
    return path


def test_each_decision_is_written_at_once(tmp_path: Path) -> None:
    """Issue 7: accept/edit/reject/skip each rewrite the file, which always parses."""
    path = candidates(tmp_path / "c.yaml")
    decide(path, "syn-1", "accept", reviewer="ana")
    assert load_gold(path)["syn-1"].status == "accepted"
    decide(path, "syn-2", "edit", question="What is uv.lock for?", answer_contains=["lockfile"])
    edited = load_gold(path)["syn-2"]
    assert edited.question == "What is uv.lock for?" and edited.status == "accepted"
    assert edited.metadata["review"]["original_question"] == "What is a lockfile"
    decide(path, "log-3", "skip")
    assert [i.id for i in pending(load_gold(path))] == []
    assert [i.id for i in pending(load_gold(path), include_skipped=True)] == ["log-3"]
    decide(path, "log-3", "reject")
    statuses = [i.status for i in load_gold(path)]
    assert statuses == ["accepted", "accepted", "rejected"]
    assert not list(tmp_path.glob(".*tmp"))  # no temporary file left behind
    assert load_gold(path)["syn-1"].metadata["review"]["reviewer"] == "ana"


def test_accept_needs_relevance_and_known_items(tmp_path: Path) -> None:
    """Issue 7: a flywheel item is accepted only once the relevant document is marked."""
    path = candidates(tmp_path / "c.jsonl")
    before = path.read_bytes()
    with pytest.raises(ReviewError, match="item log-3: cannot accept an item without relevance"):
        decide(path, "log-3", "accept")
    with pytest.raises(ReviewError, match="item nope: no such item"):
        decide(path, "nope", "reject")
    with pytest.raises(ReviewError, match="unknown decision"):
        decide(path, "syn-1", "maybe")
    assert path.read_bytes() == before
    item = decide(path, "log-3", "accept", relevant=["cache.md"])
    assert item.relevant[0].doc == "cache.md"


def test_merge_takes_accepted_and_refuses_clashes(tmp_path: Path) -> None:
    """Issue 7: merge adds only accepted items; an id clash writes nothing."""
    path = candidates(tmp_path / "c.yaml")
    decide(path, "syn-1", "accept")
    decide(path, "syn-2", "reject")
    into = tmp_path / "gold.yaml"
    into.write_text(yaml.safe_dump([{"id": "old", "question": "?", "relevant": ["a.md"]}]))
    result = merge_accepted(path, into)
    assert result.added == ("syn-1",) and result.left_out == 2 and result.total == 2
    merged = load_gold(into)
    assert [i.id for i in merged] == ["old", "syn-1"] and merged["syn-1"].status is None
    before = into.read_bytes()
    with pytest.raises(ReviewError, match=r"1 accepted item id\(s\) already in .*: syn-1"):
        merge_accepted(path, into)
    assert into.read_bytes() == before


def test_review_cli_writes_as_it_goes(tmp_path: Path) -> None:
    """Issue 7: `ragmeter review` — a, e, then marking a retrieved chunk, then q."""
    path = candidates(tmp_path / "c.yaml")
    keys = "a\ne\nWhat does uv.lock do?\n\n-\na\n2\n"
    result = CliRunner().invoke(review, [str(path)], input=keys)
    assert result.exit_code == 0, result.output
    assert "How do I pin Python?" in result.output and "python.md" in result.output
    assert "[2] cache.md#2" in result.output and "uv cache clean" in result.output
    done = load_gold(path)
    assert [i.status for i in done] == ["accepted"] * 3
    assert done["syn-2"].question == "What does uv.lock do?"
    assert done["log-3"].relevant[0].doc == "cache.md"
    assert "3 decision(s) saved" in result.output


def test_review_cli_quit_keeps_earlier_decisions(tmp_path: Path) -> None:
    """Issue 7: quitting (or Ctrl-C, EOF) after one decision keeps that decision."""
    path = candidates(tmp_path / "c.yaml")
    result = CliRunner().invoke(review, [str(path)], input="r\n")  # then EOF = abort
    assert result.exit_code == 0, result.output
    assert [i.status for i in load_gold(path)] == ["rejected", "candidate", "candidate"]
    said = " ".join(result.output.split())  # rich wraps the line where the path is long
    assert "1 decision(s) saved" in said and "2 still to review" in said


def test_gold_merge_cli(tmp_path: Path) -> None:
    """Issue 7: `ragmeter gold merge` prints counts; a clash exits 2 with the ids."""
    path = candidates(tmp_path / "c.yaml")
    decide(path, "syn-1", "accept")
    into = tmp_path / "gold.yaml"
    from ragmeter.cli import main

    runner = CliRunner()
    first = runner.invoke(main, ["gold", "merge", str(path), str(into)])
    assert first.exit_code == 0, first.output
    assert "merged 1 accepted item(s)" in first.output
    again = runner.invoke(main, ["gold", "merge", str(path), str(into)])
    assert again.exit_code == 2 and "syn-1" in again.output
    assert gold.commands["merge"].help
