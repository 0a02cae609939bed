"""Issue 15.2: runs at different levels or on different gold sets are refused, not diffed.

``ragmeter diff``, ``ragmeter gate`` and the pytest plugin's gate used to compare such a
pair with only a warning, while the dashboard refused it: a per-question delta between a
doc-level and a chunk-level run is a wrong number that looks right. They now share one
check (``compare.comparable.check_comparable``, called by ``diff_runs``) and stop with
exit 2 and the dashboard's reason. The store (``_web_fixtures.build_levels``) holds two
doc-level runs of one gold set ("base", "better"), the same retrieval at chunk level
("chunked") and a doc-level run on a smaller gold set ("fewer").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from _web_fixtures import build_levels
from ragmeter.cli import main
from ragmeter.compare.diff import diff_runs
from ragmeter.errors import InputError, NotComparableError
from ragmeter.store import Store

pytest_plugins = ["pytester"]

LEVEL = "different level (chunk vs doc) — not compared"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("levels") / "runs.db"
    with Store.open(path) as store:
        build_levels(store)
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_diff_runs_refuses_another_level_or_gold_set(db: Path) -> None:
    """Issue 15.2: the library refuses with the dashboard's reasons, as an InputError."""
    with Store.open(db) as store:
        with pytest.raises(NotComparableError) as level:
            diff_runs(store, "better", "chunked")
        with pytest.raises(NotComparableError) as gold:
            diff_runs(store, "base", "fewer", metrics=["hit@5"])
        assert diff_runs(store, "base", "better").n == 12  # one level, one gold set: fine
    assert isinstance(level.value, InputError) and level.value.exit_code == 2
    assert level.value.reasons == [LEVEL]
    assert str(level.value).startswith("run 3 chunked cannot be compared with run 2 better: ")
    assert "same level (--level) on the same gold set" in str(level.value)
    assert len(gold.value.reasons) == 1
    assert gold.value.reasons[0].startswith("different gold set (")
    assert gold.value.reasons[0].endswith(") — not compared")


@pytest.mark.parametrize(
    "extra", [[], ["--json"], ["--markdown"], ["-m", "hit@5"]], ids=["text", "json", "md", "metric"]
)
def test_cli_diff_across_levels_exits_2_before_any_statistics(db: Path, extra: list[str]) -> None:
    """Issue 15.2: `ragmeter diff` stops with exit 2 and the reason; no table, no delta."""
    code, out, err = invoke("diff", "better", "chunked", "--store", str(db), *extra)
    assert code == 2
    assert out == ""
    assert LEVEL in err and "cannot be compared" in err


def test_cli_diff_on_another_gold_set_exits_2(db: Path) -> None:
    """Issue 15.2: a different gold set is refused too (it used to be a warning)."""
    code, out, err = invoke("diff", "base", "fewer", "--store", str(db))
    assert (code, out) == (2, "")
    assert "different gold set (" in err


def test_cli_gate_across_levels_exits_2_not_0(db: Path) -> None:
    """Issue 15.2: the gate cannot pass (or fail) a pair it may not compare: exit 2."""
    for pair in (("better", "chunked"), ("base", "fewer")):
        code, out, err = invoke(
            "gate", "--baseline", pair[0], "--candidate", pair[1], "--store", str(db),
            "--max-drop", "hit@5=1",
        )  # fmt: skip
        assert code == 2, pair
        assert "gate passed" not in out and "cannot be compared" in err
    code, _, _ = invoke("gate", "--baseline", "base", "--candidate", "better", "--store", str(db))
    assert code in (0, 1)  # comparable: the gate decides


def test_pytest_plugin_gate_across_levels_fails_with_the_reason(
    pytester: pytest.Pytester, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15.2: the plugin's gate reports it could not run, with the reason; it used to
    pass a chunk-level candidate against a doc-level baseline."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        test_levels="""
def test_levels(ragmeter_gate):
    ragmeter_gate(baseline="better", candidate="chunked", max_drop={"hit@5": 1.0})
"""
    )
    result = pytester.runpytest(
        "-p", "ragmeter.pytest_plugin", "--ragmeter-gate", "--ragmeter-store", str(db)
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*ragmeter gate could not run: run 3 chunked*{LEVEL}*"])


def test_json_still_has_gold_differs(db: Path) -> None:
    """Issue 15.2: `gold_differs` stays in the JSON (always false now), for its readers."""
    code, out, _ = invoke("diff", "base", "better", "--json", "--store", str(db))
    assert code == 0
    data = json.loads(out)
    assert data["gold_differs"] is False
    assert not any("different level" in w for w in data["warnings"])
