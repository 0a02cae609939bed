"""The pytest plugin: ``--ragmeter-gate`` and the ``ragmeter_gate`` fixture (issue 5).

Each test runs a real pytest session (``pytester``) over a small test file that
gates runs stored in a real SQLite file, loading the plugin with
``-p ragmeter.pytest_plugin`` as a team would without the entry point.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _runs import sneaky_store

pytest_plugins = ["pytester"]

GATE_TESTS = """
def test_sneaky(ragmeter_gate):
    ragmeter_gate(baseline="baseline", candidate="sneaky", max_drop={"hit@5": 0.02})

def test_same(ragmeter_gate):
    result = ragmeter_gate(baseline="baseline", candidate="same", max_drop={"hit@5": 0.0})
    assert result.passed

def test_store_argument(ragmeter_gate):
    ragmeter_gate(baseline="baseline", candidate="uniform", store=STORE, min={"hit@5": 0.7})

def test_missing_run(ragmeter_gate):
    ragmeter_gate(baseline="baseline", candidate="no-such-run")
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sneaky_store(tmp_path_factory.mktemp("plugin") / "r.db")


@pytest.fixture(autouse=True)
def _no_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    # With the pytest11 entry point installed, autoloading would register the plugin
    # a second time beside -p ragmeter.pytest_plugin.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("RAGMETER_STORE", raising=False)


@pytest.fixture
def gate_file(pytester: pytest.Pytester, db: Path) -> Path:
    return pytester.makepyfile(test_retrieval_gate=f"STORE = {str(db)!r}\n" + GATE_TESTS)


def test_gate_tests_are_skipped_without_the_option(
    pytester: pytest.Pytester, gate_file: Path
) -> None:
    """Issue 5: a plain `pytest` skips gate tests instead of needing a store."""
    result = pytester.runpytest("-p", "ragmeter.pytest_plugin", "-rs")
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(["*ragmeter gate not requested (run pytest with --ragmeter-gate)*"])


def test_gate_fails_the_test_with_the_reasons(
    pytester: pytest.Pytester, gate_file: Path, db: Path, tmp_path: Path
) -> None:
    """Issue 5: with --ragmeter-gate a regressed candidate fails its test, naming the cluster."""
    report = tmp_path / "gate.md"
    result = pytester.runpytest(
        "-p", "ragmeter.pytest_plugin", "--ragmeter-gate", "--ragmeter-store", str(db),
        "--ragmeter-markdown", str(report),
    )  # fmt: skip
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*ragmeter gate failed: run sneaky vs baseline baseline*",
            '*- cluster "colloquial": hit@5 dropped by 0.200*',
            '*ragmeter gate could not run: no run "no-such-run"*',
        ]
    )
    assert "Traceback" not in result.stdout.str()
    md = report.read_text(encoding="utf-8")
    assert md.count("## ragmeter gate") == 3  # sneaky, same, uniform
    assert "## ragmeter gate ❌ failed" in md and "## ragmeter gate ✅ passed" in md


def test_plugin_registers_its_option_in_help(pytester: pytest.Pytester) -> None:
    """Issue 5: `pytest --help` documents the plugin's options."""
    result = pytester.runpytest("-p", "ragmeter.pytest_plugin", "--help")
    result.stdout.fnmatch_lines(["*--ragmeter-gate*", "*--ragmeter-store*"])


INCONCLUSIVE_TESTS = """
RULES = dict(baseline="sneaky", candidate="baseline", max_drop={"hit@5": 0.02}, tag_max_drop=None)

def test_inconclusive_passes(ragmeter_gate):
    assert ragmeter_gate(**RULES).verdict == "inconclusive"

def test_fail_inconclusive(ragmeter_gate):
    ragmeter_gate(**RULES, fail_inconclusive=True)

def test_strict(ragmeter_gate):
    ragmeter_gate(**RULES, strict=True)
"""


def test_gate_fixture_takes_fail_inconclusive_and_strict(
    pytester: pytest.Pytester, db: Path
) -> None:
    """Issue 26: a noisy drop (p = 0.075) passes the fixture's gate as inconclusive; with
    fail_inconclusive=True it fails, naming what the run can detect; strict=True fails it on
    the raw threshold, as the command line does."""
    pytester.makepyfile(test_inconclusive_gate=INCONCLUSIVE_TESTS)
    result = pytester.runpytest(
        "-p", "ragmeter.pytest_plugin", "--ragmeter-gate", "--ragmeter-store", str(db)
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*- hit@5: -0.050 on 200 questions*inconclusive (p = 0.075); this run can only "
            "detect drops >= 0.07*",
            "*- hit@5 dropped by 0.050 (0.700 -> 0.650), more than the allowed 0.02*",
        ]
    )


def test_the_plugins_report_names_the_candidates_top_knob(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Issue 25: the plugin's gate reads the same view as `ragmeter gate` (`read_diff`), so
    its markdown report names the explained candidate's top knob too (it did not)."""
    from ragmeter.evaluation.explain import ExplainOptions, explain_run
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.jobs import run_job
    from ragmeter.store import Store

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "here.md").write_text("Install with pip.", encoding="utf-8")
    (folder / "x.md").write_text("Unrelated words.", encoding="utf-8")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        '{"id": "q1", "question": "how to uninstall", "relevant": ["gone.md"]}\n'
        '{"id": "q2", "question": "install with pip", "relevant": ["here.md"]}\n',
        encoding="utf-8",
    )
    db = tmp_path / "runs.db"
    with Store.open(db) as store:
        for name in ("base", "cand"):
            job = EvalJob(str(gold), "bm25", str(folder), k=1, name=name)
            run_job(job, store=store)
        explain_run(store, "cand", ExplainOptions(depth=5, dense=False))
    pytester.makepyfile(
        test_plugin_top_knob="def test_it(ragmeter_gate):\n"
        "    ragmeter_gate(baseline='base', candidate='cand', max_drop={'hit@1': 0.5})\n"
    )
    report = tmp_path / "gate.md"
    result = pytester.runpytest(
        "-p", "ragmeter.pytest_plugin", "--ragmeter-gate", "--ragmeter-store", str(db),
        "--ragmeter-markdown", str(report),
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    text = report.read_text(encoding="utf-8")
    assert "**Top knob** (ragmeter explain of the candidate) · indexing: recovers 1 of 1" in text
