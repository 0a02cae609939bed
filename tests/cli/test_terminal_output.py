"""Issue 19.9: terminal output trusts no data — markup, control characters and size.

Found with the real CLI: ``--note "uses [/] brackets"`` made ``ragmeter runs`` fail for
everyone on that store (``MarkupError``), ANSI escapes in ids and tags were printed raw,
and a 1 MB id kept the printer busy 90 s in rich's highlighter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from _scaling import calls_made
from ragmeter.cli import main
from ragmeter.cli._safe import MAX_DISPLAY_CHARS, safe
from ragmeter.evaluation.evaluate import evaluate
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

ANSI_CLEAR = "\x1b[2J\x1b[31m"
TITLE = "\x1b]0;pwned\x07"
BIG = "d" * 1_000_000


def _gold() -> GoldSet:
    return GoldSet.from_records(
        [
            {"id": "q1", "question": "refunds [bold]now[/]?", "relevant": ["refunds.md"],
             "tags": ["billing"]},
            {"id": "q2", "question": "shipping?", "relevant": ["shipping.md"], "tags": ["typo"]},
        ]
    )  # fmt: skip


def _search(question: str, k: int) -> list[dict[str, Any]]:
    # What a retriever may return: ids with escape sequences, markup, a huge id. One gold
    # document comes back for q2, or the id check would stop the run (issue 24.2).
    found = [{"doc": "shipping.md"}] if question == "shipping?" else []
    return [
        {"doc": f"{ANSI_CLEAR}evil.md", "text": f"text {TITLE} [/] here"},
        {"doc": f"{BIG}.md"},
        *found,
    ]


def _run(cli: list[str], store: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*cli, "--store", str(store)])
    return result.exit_code, result.output


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    with Store.open(path) as store:
        evaluate(_gold(), _search, store=store, name=f"n{ANSI_CLEAR}", note="uses [/] brackets",
                 commit="")  # fmt: skip
    return path


def test_markup_in_a_note_does_not_break_runs(store_path: Path) -> None:
    """Issue 19.9: `--note "uses [/] brackets"` no longer makes `ragmeter runs` fail."""
    code, output = _run(["runs"], store_path)
    assert code == 0, output
    assert "uses [/] brackets" in output


def test_control_characters_from_data_are_printed_escaped(store_path: Path) -> None:
    """Issue 19.9: ANSI and OSC escape sequences in names, ids and text print as `\\x1b`."""
    for cli in (["runs"], ["show", "1"], ["show", "1", "--all"]):
        code, output = _run(cli, store_path)
        assert code == 0, output
        assert "\x1b" not in output and "\x07" not in output, cli
        assert "\\x1b[2J" in output
    _, shown = _run(["show", "1"], store_path)
    assert "refunds [bold]now[/]?" in shown  # the question, as written


def test_a_one_megabyte_id_prints_cut_and_unhighlighted(store_path: Path) -> None:
    """Issue 19.9: a 1 MB id is cut for display and costs no time in a highlighter: rich's
    highlighter (90 s over the whole id) is never called. The time to print it is
    benchmarks/hot_paths.py's "show, 1 MB id" line."""
    shown: list[tuple[int, str]] = []
    highlighted = calls_made(
        lambda: shown.append(_run(["show", "1"], store_path)), named="highlight_regex"
    )
    ((code, output),) = shown
    assert code == 0, output
    assert highlighted == 0
    assert "(1,000,003 chars)" in output
    assert max(len(line) for line in output.splitlines()) < MAX_DISPLAY_CHARS + 200


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("[red]x[/]", "\\[red]x\\[/]"),
        ("a\rb\nc", "a\\x0db\\x0ac"),
        ("rtl\u202eevil", "rtl\\u202eevil"),
        ("lone\ud800", "lone\\ud800"),
    ],
    ids=["markup", "cr-lf", "bidi-override", "lone-surrogate"],
)
def test_safe(given: str, shown: str) -> None:
    """Issue 19.9: markup escaped, control characters and lone surrogates made visible."""
    assert safe(given) == shown
