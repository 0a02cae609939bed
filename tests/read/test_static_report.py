"""Issue 15.4: `ragmeter report` writes one self-contained static HTML file about a run."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from _web_fixtures import EVIL_ANSWER, EVIL_QUESTION, build_generated, build_small
from ragmeter.cli import main
from ragmeter.compare._html import esc
from ragmeter.compare.diff import diff_runs
from ragmeter.evaluation.evaluate import evaluate
from ragmeter.evaluation.report import build_report
from ragmeter.gold.goldset import GoldSet
from ragmeter.read import read_run
from ragmeter.read.static_report import static_report
from ragmeter.store import Store


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "runs.db"
    with Store.open(path) as store:
        build_small(store)  # runs 1 (base), 2 (better)
        build_generated(store)  # run 3: generator + lexical judge
    return path


@pytest.fixture
def store(store_path: Path) -> Iterator[Store]:
    with Store.open(store_path, read_only=True) as opened:
        yield opened


def test_report_holds_the_run_its_misses_and_the_diff(store: Store) -> None:
    """Issue 15.4: summary, metrics, misses by tag with blame, each miss with its chunks'
    text, the judge's faithful, and against a baseline the deltas and flips."""
    html = static_report(store, 3, against=1).html
    run = build_report(store, 3)
    diff = diff_runs(store, 1, 3)
    assert "<h1>Run 3 · generated</h1>" in html
    for name, value in run.metrics.items():
        assert f"{esc(name)}<b>{value:.3f}</b>" in html
    assert html.count('<details class="miss">') == len(run.misses)
    assert "nothing useful here" in html  # the chunk text stored with the run
    assert "blame: retrieval" in html and "faithful 0.833 (uncalibrated: no labels)" in html
    assert "Against run 1 · base" in html and "95% interval" in html
    for flip in [*diff.newly_missed, *diff.newly_found]:
        assert f"<code>{flip.id}</code>" in html
    # Issue 26: billing lost one of its four questions: no evidence, so not flagged; its
    # row carries the interval diff and gate show and says it cannot detect a drop alone.
    assert "⚠ flagged" not in html and "none alone" in html and "detectable" in html


def test_report_loads_nothing_and_keeps_data_as_text(store: Store) -> None:
    """Issue 15.4: no external asset, no link, no fetch; a CSP forbids requests; HTML in a
    answer is escaped, never markup."""
    html = static_report(store, 1).html
    assert not re.search(r"<[^>]*\b(?:src|href|action)\s*=", html)  # no tag links out
    assert "fetch(" not in html and "XMLHttpRequest" not in html and "@import" not in html
    assert "default-src 'none'" in html and "connect-src 'none'" in html
    # q00's question is full of HTML but it is always found; the misses answer with HTML.
    assert EVIL_QUESTION not in html
    assert EVIL_ANSWER not in html and esc(EVIL_ANSWER) in html
    assert html.count("<script>") == 1


def test_a_big_run_is_cut_and_says_so(store: Store) -> None:
    """Issue 15.4: past max_misses the misses (and the failed answers, issue 25.1) are
    counted, not spelled out, and the file says how many it left out."""
    misses = len(build_report(store, 1).misses)
    failed = len(read_run(store, 1).failed_answers)
    cut = static_report(store, 1, max_misses=2)
    assert cut.html.count('<details class="miss">') == 2
    assert cut.html.count('<details class="miss failed">') == min(failed, 2)
    note = f"{misses - 2} of {misses} misses not shown"
    notes = (note, f"{failed - 2} of {failed} failed answers not shown") if failed > 2 else (note,)
    assert cut.left_out == notes and f"This report is cut: {note}." in cut.html


def test_cli_writes_the_file_and_refuses_an_unknown_run(store_path: Path, tmp_path: Path) -> None:
    """Issue 15.4: the command writes the file and reports its size; an unknown baseline is
    an input error (exit 2) and writes nothing."""
    out = tmp_path / "out" / "report.html"
    args = [
        "report",
        "2",
        "--against",
        "base",
        "--html",
        str(out),
        "--store",
        str(store_path),
        "--json",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["run"] == 2 and summary["against"] == 1
    assert summary["bytes"] == len(out.read_bytes())
    missing = tmp_path / "missing.html"
    args = ["report", "2", "--against", "nope", "--html", str(missing), "--store", str(store_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and not missing.exists()


def test_quotes_are_marked_at_the_runs_min_overlap() -> None:
    """The static report marks a gold quote in a chunk where the coverage rule counted it at
    the run's stored ``min_overlap``, as the dashboard does (it used 0.5 whatever the run's).

    The chunk ends with the quote's first 32 of 58 characters (0.55 of the shorter): covered
    at 0.5, not at 0.6. Counted here from the two strings, not typed."""
    quote = "the refund window is thirty days from the date of purchase"
    text = "Shipping is free for members. Note that the refund window is thirty days"
    shared = "the refund window is thirty days"
    assert text.endswith(shared) and quote.startswith(shared)
    share = len(shared) / min(len(quote), len(text))
    assert 0.5 < share < 0.6
    gold = GoldSet.from_records(
        [{"id": "q1", "question": "refunds?", "relevant": [{"doc": "a.md", "quote": quote}],
          "answer_contains": ["42"]}]
    )  # fmt: skip

    def search(question: str, k: int) -> list[dict[str, Any]]:
        return [{"doc": "a.md", "text": text}]

    marked = f"<mark>{esc(shared)}</mark>"
    with Store.memory() as store:  # the answer fails: the report spells the question out
        for name, min_overlap in (("loose", 0.5), ("strict", 0.6)):
            evaluate(gold, search, store=store, name=name, commit="", k=1, level="passage",
                     min_overlap=min_overlap, generator=lambda q, chunks: "no idea")  # fmt: skip
        loose, strict = static_report(store, "loose").html, static_report(store, "strict").html
        assert [read_run(store, n).metrics["hit@1"] for n in ("loose", "strict")] == [1.0, 0.0]
    assert marked in loose and esc(text) in loose.replace(marked, esc(shared))
    assert marked not in strict and esc(text) in strict
