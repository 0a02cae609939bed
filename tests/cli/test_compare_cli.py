"""``ragmeter diff`` and ``ragmeter gate`` through Click's CliRunner (issue 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from _runs import NEWLY_MISSED, sneaky_store
from ragmeter.cli import main


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(sneaky_store(tmp_path_factory.mktemp("cli") / "r.db"))


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_diff_prints_metrics_flags_flips_and_health(db: str) -> None:
    """Issue 5: the terminal diff shows the table, the flagged cluster, flips and health."""
    code, out, _ = invoke("diff", "baseline", "sneaky", "--store", db)
    assert code == 0
    assert out.startswith("diff: A = run 1 baseline → B = run 3 sneaky (200 questions)\n")
    assert "Holm-adjusted across the tags" in out
    assert "flagged: " in out and "colloquial" in out
    assert "newly missed: 8 questions (hit@10)" in out
    assert "newly found: 18 questions (hit@10, first 15)" in out
    assert NEWLY_MISSED[0] in out
    assert "B health: precision@5 0.14 (max 0.20) good" in out
    hit5 = next(line for line in out.splitlines() if "│ hit@5 " in line)
    assert "0.650" in hit5 and "0.700" in hit5 and "+0.050" in hit5


def test_diff_json_and_metric_selection(db: str) -> None:
    """Issue 5: --json is machine-readable and -m restricts the metrics."""
    code, out, _ = invoke("diff", "1", "3", "-m", "hit@5", "-m", "MRR", "--json", "--store", db)
    assert code == 0
    data = json.loads(out)
    assert [m["metric"] for m in data["metrics"]] == ["hit@5", "mrr"]
    assert data["metrics"][0]["delta"] == pytest.approx(0.05)
    assert data["correction"] == "holm"
    assert any(f["tag"] == "colloquial" for f in data["flagged"])


def test_diff_markdown(db: str) -> None:
    """Issue 5: --markdown prints the report."""
    code, out, _ = invoke("diff", "baseline", "same", "--markdown", "--store", db)
    assert code == 0
    assert out.startswith("### ragmeter diff: run 1 baseline → run 2 same\n")
    assert "| hit@5 | 0.650 | 0.650 | +0.000 | [+0.000, +0.000] | 1.000 |" in out


def test_gate_fails_with_exit_1_and_names_the_cluster(db: str, tmp_path: Path) -> None:
    """Issue 5: the sneaky candidate fails (exit 1) with one reason per failing cluster."""
    report = tmp_path / "gate.md"
    code, out, _ = invoke(
        "gate", "--baseline", "baseline", "--candidate", "sneaky", "--max-drop", "hit@5=0.02",
        "--markdown", str(report), "--max-flips", "3", "--store", db,
    )  # fmt: skip
    assert code == 1
    lines = out.splitlines()
    assert (
        lines[0] == "gate FAILED: candidate run 3 sneaky vs baseline run 1 baseline (200 questions)"
    )
    assert lines[1].startswith('  ✗ cluster "colloquial": hit@5 dropped by 0.200 (0.750 -> 0.550')
    assert "rules: hit@5 may drop at most 0.02; no tag may drop more than 0.1" in out
    assert len(lines) <= 25  # one screen
    md = report.read_text(encoding="utf-8")
    assert md.startswith("## ragmeter gate ❌ failed")
    assert "### Flagged clusters" in md and "| colloquial | hit@5 |" in md
    assert "… and 5 more" in md


def test_gate_passes_identical_runs_with_exit_0(db: str) -> None:
    """Issue 5: identical runs pass."""
    code, out, _ = invoke(
        "gate", "--baseline", "baseline", "--candidate", "same", "--max-drop", "hit@5=0",
        "--min", "hit@5=0.6", "--store", db,
    )  # fmt: skip
    assert code == 0
    assert out.startswith("gate passed: candidate run 2 same vs baseline run 1 baseline")
    assert "  hit@5: 0.650 -> 0.650 (+0.000, CI [+0.000, +0.000], p 1.000)" in out


def test_gate_json(db: str) -> None:
    """Issue 5: gate --json carries the verdict, reasons and the diff; exit code still 1."""
    code, out, _ = invoke(
        "gate", "--baseline", "baseline", "--candidate", "sneaky", "--json", "--store", db
    )
    assert code == 1
    data = json.loads(out)
    assert data["gate"]["passed"] is False
    assert data["gate"]["failed_tags"][0]["tag"] == "colloquial"
    assert data["diff"]["b"]["name"] == "sneaky"


def test_gate_uniform_improvement_passes_with_significance(db: str) -> None:
    """Issue 5: a uniform improvement passes, even requiring significance."""
    code, _, _ = invoke(
        "gate", "--baseline", "baseline", "--candidate", "uniform", "--max-drop", "hit@5=0",
        "--require-significance", "--store", db,
    )  # fmt: skip
    assert code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gate", "--baseline", "baseline", "--candidate", "nope"], 'no run "nope"'),
        (["gate", "--baseline", "1", "--candidate", "2", "--max-drop", "hit@5"], "METRIC=NUMBER"),
        (["gate", "--baseline", "1", "--candidate", "2", "--min", "bogus@5=1"], "bogus@5"),
        (["gate", "--baseline", "1", "--candidate", "2", "--min", "recall@100=0.1"], "recall@100"),
        (["diff", "1", "2", "-m", "recall@100"], 'no metric "recall@100"'),
        (["gate", "--candidate", "2"], "Missing option '--baseline'"),
    ],
    ids=["unknown-run", "no-value", "unknown-metric", "absent-metric", "diff-absent", "usage"],
)
def test_bad_input_exits_2_with_a_message(db: str, args: list[str], message: str) -> None:
    """Issue 5: bad input is exit 2 with a one-line message, never a traceback."""
    code, out, err = invoke(*args, "--store", db)
    assert code == 2
    assert message in err
    assert "Traceback" not in out + err


def test_markdown_file_that_cannot_be_written_is_exit_2(db: str, tmp_path: Path) -> None:
    """Issues 5 and 27.16: --markdown under a path that cannot be a folder is an input error
    naming the path; a folder that is only missing is made (one writer for every output)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    target = blocker / "gate.md"
    code, _, err = invoke(
        "gate", "--baseline", "1", "--candidate", "2", "--markdown", str(target), "--store", db
    )
    assert code == 2 and "cannot write" in err and str(target) in err
    made = tmp_path / "missing" / "gate.md"
    invoke("gate", "--baseline", "1", "--candidate", "2", "--markdown", str(made), "--store", db)
    assert made.read_text(encoding="utf-8").strip()


def test_ragmeter_toml_thresholds_reach_the_health_line(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 5: [health] in ragmeter.toml changes the diff's health verdict."""
    (tmp_path / "ragmeter.toml").write_text("[health]\nmrr_good = 0.3\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, _ = invoke("diff", "baseline", "sneaky", "--store", db)
    assert code == 0
    assert "mrr 0.43 good" in out
    (tmp_path / "ragmeter.toml").write_text("[health]\nmrr_good = 'x'\n", encoding="utf-8")
    code, _, err = invoke("diff", "baseline", "sneaky", "--store", db)
    assert code == 2 and "ragmeter.toml" in err


def test_gate_inconclusive_exits_0_unless_asked_and_strict_keeps_raw_thresholds(db: str) -> None:
    """Issue 26: hit@5 0.70 -> 0.65 over 200 questions (p = 0.075) is inconclusive: exit 0 with
    what the run can detect; --fail-inconclusive makes it exit 1, and --strict fails it on the
    raw threshold as the gate did before."""
    args = ["gate", "--baseline", "sneaky", "--candidate", "baseline", "--max-drop",
            "hit@5=0.02", "--no-tag-check", "--store", db]  # fmt: skip
    code, out, _ = invoke(*args)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("gate inconclusive (passing): candidate run 1 baseline")
    assert lines[1] == (
        "  ? hit@5: -0.050 on 200 questions (0.700 -> 0.650; 95% CI [-0.100, +0.000]): "
        "inconclusive (p = 0.075); this run can only detect drops >= 0.07"
    )
    assert "200 questions detect changes >= 0.07 (80% power)" in out
    code, out, _ = invoke(*args, "--fail-inconclusive")
    assert code == 1 and out.startswith("gate inconclusive (failing: --fail-inconclusive)")
    code, out, _ = invoke(*args, "--strict")
    assert code == 1 and out.startswith("gate FAILED")
    assert "  ✗ hit@5 dropped by 0.050 (0.700 -> 0.650), more than the allowed 0.02" in out
    code, out, _ = invoke(*args, "--json")
    gate = json.loads(out)["gate"]
    assert (gate["verdict"], gate["passed"]) == ("inconclusive", True)
    assert gate["verdicts"][0]["detectable"] == pytest.approx(0.07, abs=0.005)
