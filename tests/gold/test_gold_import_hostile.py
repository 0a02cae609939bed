"""Issue 27.14-15: `ragmeter gold import` under hostile files, through the real CLI.

Every bad file is exit 2 naming the file, the line and the field, never a traceback; and
what the import writes is what `gold check` accepts, because both run the one validator.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragmeter.cli import main

#: One past the csv module's default field limit, which the red-team file passed.
OVER = 131_072 + 1


def _csv(rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _deep(depth: int) -> str:
    return "[" * depth + '"x"' + "]" * depth


HOSTILE = {
    # name: (file name, content, what the message must say)
    "csv field over 131,072 characters": (
        "big.csv",
        _csv([{"question": "ok?"}, {"question": "a" * OVER}]),
        ('line 3: field "question" has 131,073 characters, more than 131,072',),
    ),
    "csv nested-list cell": (
        "nested.csv",
        _csv([{"question": "q?", "passage": json.dumps([["a", ["b"]]])}]),
        ("line 2", '"passage" entries must be strings'),
    ),
    "csv deeply nested list cell": (
        "deep-cell.csv",
        _csv([{"question": "q?", "passage": _deep(5000)}]),
        ("line 2", '"passage" is a list nested too deeply'),
    ),
    "csv python-literal cell with a list key": (
        "literal.csv",
        _csv([{"question": "q?", "passage": "[{[1]: 2}]"}]),
        ("line 2",),
    ),
    "deeply nested jsonl": (
        "deep.jsonl",
        json.dumps({"question": "q?"}) + "\n" + '{"question": ' + _deep(100_000) + "}\n",
        ("line 2", "nested more than 64 levels deep"),
    ),
    "deeply nested json": (
        "deep.json",
        "[" + json.dumps({"question": "q?"}) + ", " + _deep(100_000) + "]",
        ("nested more than 64 levels deep",),
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=list(HOSTILE))
def test_finding_14_gold_import_hostile_files_are_clear_errors(tmp_path: Path, case: str) -> None:
    """Issue 27.14: a CSV field over 131,072 characters, a nested-list cell or deeply nested
    JSON was a traceback (exit 1); now exit 2 with file, line and field, nothing written."""
    name, content, needles = HOSTILE[case]
    source = tmp_path / name
    source.write_text(content, encoding="utf-8")
    out = tmp_path / "gold.yaml"
    kind = "csv" if name.endswith(".csv") else "jsonl"
    result = CliRunner().invoke(main, ["gold", "import", str(source), "--from", kind,
                                       "--out", str(out)])  # fmt: skip
    if case == "csv python-literal cell with a list key":
        # Not a literal Python can build: the cell is kept as one passage, as any text.
        assert result.exit_code == 0, result.output
        assert not isinstance(result.exception, TypeError)
        return
    assert result.exit_code == 2, (result.output, result.exception)
    assert str(source) in result.output
    for needle in needles:
        assert needle in result.output, result.output
    assert not out.exists()


@pytest.mark.parametrize(
    "question",
    ["before\x00after", "clear \x1b[2J screen", "bell\x07"],
    ids=["nul", "escape-sequence", "bell"],
)
def test_finding_15_gold_import_never_writes_what_gold_check_refuses(
    tmp_path: Path, question: str
) -> None:
    """Issue 27.15: a NUL (or a terminal escape) in a CSV question was written to the gold
    set, which `gold check` then refused. The import runs the same validator first: exit
    2 naming the line, nothing written; a clean file imports and passes `gold check`."""
    source = tmp_path / "set.csv"
    source.write_text(_csv([{"question": "fine?"}, {"question": question}]), encoding="utf-8")
    out = tmp_path / "gold.yaml"
    runner = CliRunner()
    result = runner.invoke(
        main, ["gold", "import", str(source), "--from", "csv", "--out", str(out)]
    )
    assert result.exit_code == 2, (result.output, result.exception)
    assert f"{source} line 3" in result.output and "nothing written" in result.output
    assert not out.exists()
    # The same row as gold check sees it, written by hand: refused the same way.
    by_hand = tmp_path / "by-hand.jsonl"
    by_hand.write_text(json.dumps({"id": "x", "question": question}) + "\n", encoding="utf-8")
    assert runner.invoke(main, ["gold", "check", str(by_hand)]).exit_code == 2
    source.write_text(_csv([{"question": "fine?"}]), encoding="utf-8")
    assert runner.invoke(main, ["gold", "import", str(source), "--from", "csv",
                                "--out", str(out)]).exit_code == 0  # fmt: skip
    assert runner.invoke(main, ["gold", "check", str(out)]).exit_code == 0


def test_finding_15_write_records_validates_too(tmp_path: Path) -> None:
    """Issue 27.15: the library writer refuses a record `gold check` would refuse."""
    from ragmeter.errors import GoldSetError
    from ragmeter.gold.imports import write_records

    with pytest.raises(GoldSetError, match="nothing written"):
        write_records(tmp_path / "g.yaml", [{"id": "a", "question": "x\x00y"}])
    assert not (tmp_path / "g.yaml").exists()
