"""``retrieve`` and ``sweep`` score passages with ``--min-overlap`` too, as ``eval`` does (issue 24).

They used to judge every chunk at the default share 0.5 whatever the user had chosen for
``eval``, so ``retrieve`` could mark a chunk relevant that the user's runs count as a miss.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests._project import write_project

from ragmeter.cli import main
from ragmeter.evaluation.job import EvalJob
from ragmeter.evaluation.sweep import run_sweep
from ragmeter.store import Store

# The chunk "Unrelated words before it here. alpha bravo charlie delta" holds 22 of the
# quote's 33 letters (0.67 of the shorter): it covers the quote at share 0.5, not at 0.7
# (counted by plain search in tests/evaluation/test_resume_settings.py).
QUOTE = "alpha bravo charlie delta echo foxtrot"
DOC = (
    "# A\n\nUnrelated words before it here. alpha bravo charlie delta\n\n"
    "echo foxtrot, and then more words that follow on.\n"
)
GOLD = [{"id": "q", "question": "alpha bravo charlie delta?",
         "relevant": [{"doc": "a.md", "quote": QUOTE}]}]  # fmt: skip
HEAD_ONLY = DOC.split("\n\n")[1]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return write_project(tmp_path, {"a.md": DOC, "b.md": "# B\n\nnothing here.\n"}, GOLD,
                         monkeypatch)  # fmt: skip


@pytest.mark.parametrize(("share", "grade"), [(None, 1), ("0.5", 1), ("0.7", 0)],
                         ids=["default", "half", "strict"])  # fmt: skip
def test_retrieve_marks_chunks_at_the_share_given(
    project: Path, share: str | None, grade: int
) -> None:
    """Issue 24: the chunk holding two thirds of the quote is relevant at 0.5, not at 0.7."""
    told = ["--min-overlap", share] if share else []
    result = CliRunner().invoke(main, ["retrieve", "alpha bravo charlie delta?", "--gold",
        "gold.yaml", "--corpus", "docs", "--chunker", "paragraph", "--chunk-size", "60",
        "--chunk-overlap", "0", "-k", "1", "--json", *told])  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)["rows"]
    assert (row["text"], row["grade"]) == (HEAD_ONLY, grade)


def test_sweep_stores_and_scores_with_the_share(project: Path) -> None:
    """Issue 24: every sweep run keeps the share; at 0.7 the two-thirds chunk is no hit."""
    store = Store.memory()
    hits = {}
    for share in (None, 0.7):
        job = EvalJob(gold="gold.yaml", corpus="docs", k=1, min_overlap=share)
        result = run_sweep(job, {"retriever": "bm25", "chunker": {"kind": "paragraph",
                           "overlap": 0}}, {"chunker.size": [60]}, store=store,
                           metric="hit@1", name_prefix=f"s{share}")  # fmt: skip
        (row,) = result.rows
        hits[share] = row.metrics["hit@1"]
        assert store.get_run(row.run_id).config.get("min_overlap") == share
    assert hits == {None: 1.0, 0.7: 0.0}


def test_sweep_cli_takes_min_overlap(project: Path) -> None:
    """Issue 24: ``ragmeter sweep --min-overlap`` reaches the runs."""
    Path("grid.yaml").write_text(
        "base:\n  retriever: bm25\n  chunker: {kind: paragraph, size: 60, overlap: 0}\n"
        "grid:\n  chunker.size: [60]\n"
    )
    result = CliRunner().invoke(main, ["sweep", "grid.yaml", "--gold", "gold.yaml", "--corpus",
                                       "docs", "-k", "1", "--metric", "hit@1",
                                       "--min-overlap", "0.7", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)["runs"]
    assert row["metrics"]["hit@1"] == 0.0
    with Store.open(project / "runs.db") as store:
        assert store.get_run(row["run_id"]).config["min_overlap"] == 0.7
