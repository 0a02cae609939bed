"""Issue 2: ``ragmeter gold check FILE [--corpus PATH] [--json]``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from _paths import SHARED
from ragmeter.cli import main

SCIFACT = SHARED / "data" / "scifact"

GOLD = """\
- id: refund-window
  question: How long do I have to request a refund?
  relevant:
    - {doc: policies/refunds.md, grade: 3}
    - {doc: faq.md, quote: "within 30 DAYS of delivery", grade: 2}
    - chunk: faq.md#4
  answer_contains: ["30 days"]
  tags: [policies, colloquial]
  source: log
- id: shipping
  question: Do you ship abroad?
  relevant: [{doc: shipping.md}]
  tags: [policies]
  source: docs
- id: greeting
  question: Hello?
  source: log
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def gold_file(tmp_path: Path) -> Path:
    path = tmp_path / "faq.yaml"
    path.write_text(GOLD, encoding="utf-8")
    return path


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "policies").mkdir(parents=True)
    (folder / "faq.md").write_text("# FAQ\n\nRefunds are accepted within 30 days\nof delivery.\n")
    (folder / "policies" / "refunds.md").write_text("# Refunds\n\nWe refund.\n")
    return folder


def test_check_prints_summary(gold_file: Path) -> None:
    """Issue 2: a valid gold set exits 0 and shows items, tags, sources, judgments, answer checks."""
    code, out, err = run("gold", "check", str(gold_file))
    assert (code, err) == (0, "")
    lines = [line.strip("│ ").split("│") for line in out.splitlines()]
    table = {cells[0].strip(): cells[1].strip() for cells in lines if len(cells) == 2}
    assert out.splitlines()[0] == f"gold set {gold_file}: OK"
    assert table == {
        "items": "3",
        "hash": table["hash"],
        "judged per question": "min 0, median 1, max 3",
        "items without judgments": "1",
        "items with only grade-0 judgments": "0",
        "items with answer checks": "1",
        "quote-anchored judgments": "1",
        "chunk-id judgments": "1",
        "items per grade": "0: 0, 1: 2, 2: 1, 3: 1",
        "sources": "log: 2, docs: 1",
        "tags": "policies: 2, colloquial: 1",
        # Issue 26: three questions cannot show a drop (an exact test needs six).
        "detectable drop": "none: too few questions (gold power)",
    }
    assert len(table["hash"]) == 12


def test_check_json(gold_file: Path) -> None:
    """Issue 2: --json prints the same summary as a JSON object."""
    code, out, _ = run("gold", "check", str(gold_file), "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["summary"]["items"] == 3
    assert payload["summary"]["tags"] == {"policies": 2, "colloquial": 1}
    assert payload["summary"]["judged_per_item"] == {"min": 0, "median": 1, "max": 3}
    assert len(payload["hash"]) == 64 and payload["warnings"] == []
    assert payload["power"]["n"] == 3 and payload["power"]["detectable"] is None


def test_gold_power_from_an_assumption_and_from_a_stored_run(tmp_path: Path) -> None:
    """Issue 26: `gold power` says what the set detects and how many questions a drop of
    --effect needs: from the assumed spread 0.5 without a run, from a stored run's
    per-question spread with one (here hit@5 = 0.5 on 40 questions, spread 0.506)."""
    import ragmeter
    from ragmeter.compare.power import questions_needed

    records = [
        {"id": f"q{i:02d}", "question": f"question {i}?", "relevant": [{"doc": f"d{i}.md"}],
         "tags": ["faq" if i < 35 else "colloquial"]}
        for i in range(40)
    ]  # fmt: skip
    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    db = tmp_path / "r.db"
    with ragmeter.Store.open(db) as store:
        gold = ragmeter.load_gold(gold_path)
        found = {f"q{i:02d}" for i in range(0, 40, 2)}
        ragmeter.evaluate(
            gold,
            lambda q, k: [{"doc": f"d{int(q.split()[1][:-1])}.md"}]
            if f"q{int(q.split()[1][:-1]):02d}" in found
            else [{"doc": "other.md"}],
            store=store, name="main", commit="",
        )  # fmt: skip
    code, out, err = run("gold", "power", str(gold_path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1] == "to detect -0.1 in hit@5 with 80% power you need ~197 questions; you have 40"
    assert "assumed" in lines[0]
    assert lines[2].startswith("  tag colloquial: 5 questions, cannot decide alone")
    code, out, err = run(
        "gold", "power", str(gold_path), "--run", "main", "--store", f"sqlite:///{db}",
        "--effect", "0.2",
    )  # fmt: skip
    assert (code, err) == (0, "")
    sd = float(np.std([1.0, 0.0] * 20, ddof=1))
    needed = questions_needed(sd, 0.2)
    assert f"you need ~{needed} questions; you have 40" in out and "from run 1 main" in out
    code, out, err = run(
        "gold", "power", str(gold_path), "--run", "main", "--store", f"sqlite:///{db}",
        "-m", "faithful",
    )  # fmt: skip
    assert code == 2 and 'run 1 main has no per-question values of "faithful"' in err


def test_check_with_corpus_warns_about_missing_docs(gold_file: Path, corpus: Path) -> None:
    """Issue 2: with --corpus quotes are located and absent documents are listed in one warning."""
    code, out, err = run("gold", "check", str(gold_file), "--corpus", str(corpus))
    assert code == 0
    assert "items" in out
    assert err == (
        "Warning: 1 document named by the gold set not in the corpus: shipping.md (item shipping)\n"
    )


def test_check_with_corpus_rejects_missing_quote(tmp_path: Path, corpus: Path) -> None:
    """Issue 2: a quote not found in its document is an error (exit 2) naming item and field."""
    path = tmp_path / "g.jsonl"
    item = {"id": "r", "question": "?", "relevant": [{"doc": "faq.md", "quote": "60 days"}]}
    path.write_text("\n" + json.dumps(item) + "\n", encoding="utf-8")
    code, out, err = run("gold", "check", str(path), "--corpus", str(corpus))
    assert (code, out) == (2, "")
    assert err == (
        f'Error: gold set {path} line 2: item r relevant[0].quote: "60 days" not found in faq.md\n'
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "- id: a\n  question: q\n  relevant: [{doc: x, grade: 4}]\n",
            "line 1: item a relevant[0].grade: grade 4 is outside 0-3",
        ),
        (
            "- id: a\n  question: q\n- id: a\n  question: q\n",
            'duplicate item id "a" (lines 1 and 3)',
        ),
        ("- id: a\n  question: [\n", "line 3: invalid YAML at column 1"),
        ("", "file is empty"),
    ],
    ids=["grade", "duplicate", "syntax", "empty"],
)
def test_check_errors_exit_2_with_one_line(tmp_path: Path, content: str, message: str) -> None:
    """Issue 2: any problem exits 2 with a single "Error:" line and no traceback."""
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    code, out, err = run("gold", "check", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"Error: gold set {path}")
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_check_non_utf8(tmp_path: Path) -> None:
    """Issue 2: non-UTF-8 bytes are named by line."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"id": "a", "question": "ok"}\n{"id": "b", "question": "caf\xe9"}\n')
    code, _, err = run("gold", "check", str(path))
    assert code == 2
    assert err == (
        f"Error: gold set {path} line 2: not UTF-8 text (byte 0xe9 at column 29); save it as UTF-8\n"
    )


def test_check_help_is_documented() -> None:
    """Issue 2: the command has help text."""
    code, out, _ = run("gold", "check", "--help")
    assert code == 0 and "Validate FILE" in out and "--corpus" in out


@pytest.mark.skipif(not SCIFACT.is_dir(), reason=f"shared BEIR data not present at {SCIFACT}")
def test_check_scifact_folder_against_its_corpus() -> None:
    """Issue 2: a BEIR folder checks against its own corpus with no warnings."""
    code, out, err = run("gold", "check", str(SCIFACT), "--corpus", str(SCIFACT), "--json")
    assert (code, err) == (0, "")
    payload = json.loads(out)
    assert payload["summary"]["items"] == 300
    assert payload["summary"]["judged_per_item"] == {"min": 1, "median": 1.0, "max": 5}
