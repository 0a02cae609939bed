"""Gate a retrieval change inside your own test suite.

Enable the plugin (it ships with ragmeter; ``pip install ragmeter`` registers it
through the ``pytest11`` entry point, or load it explicitly with
``pytest -p ragmeter.pytest_plugin``), then write a test::

    def test_retrieval_did_not_regress(ragmeter_gate):
        ragmeter_gate(baseline="main", candidate="latest", max_drop={"hit@5": 0.02})

and run ``pytest --ragmeter-gate``. The test fails with the gate's reasons (each
failing metric and cluster) when the candidate run regressed. Without
``--ragmeter-gate`` such tests are skipped, so a developer's plain ``pytest``
does not need a run store. ``--ragmeter-store URL`` (or ``RAGMETER_STORE``)
chooses the store and ``--ragmeter-markdown FILE`` writes the pull-request
report of every gate the session ran.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ragmeter.errors import RagmeterError

__all__ = ["GateCallable", "pytest_addoption", "ragmeter_gate"]

GateCallable = Callable[..., Any]

_STORE_ENV = "RAGMETER_STORE"
_REPORTS = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragmeter", "ragmeter retrieval gate")
    group.addoption(
        "--ragmeter-gate",
        action="store_true",
        default=False,
        help="Run tests that use the ragmeter_gate fixture (skipped otherwise).",
    )
    group.addoption(
        "--ragmeter-store",
        default=None,
        metavar="URL",
        help="Run store for ragmeter_gate [env RAGMETER_STORE; default .ragmeter/ragmeter.db].",
    )
    group.addoption(
        "--ragmeter-markdown",
        default=None,
        metavar="FILE",
        help="Write the markdown report of every ragmeter gate to FILE.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_REPORTS] = []


def pytest_unconfigure(config: pytest.Config) -> None:
    target = config.getoption("--ragmeter-markdown", default=None)
    reports = config.stash.get(_REPORTS, [])
    if target and reports:
        Path(target).write_text("\n\n".join(reports), encoding="utf-8")


def _run_gate(
    config: pytest.Config,
    *,
    baseline: str | int,
    candidate: str | int,
    max_drop: Mapping[str, float] | None,
    min: Mapping[str, float] | None,
    tag_max_drop: float | None,
    require_significance: bool,
    store: Any,
    max_flips: int,
    fail_inconclusive: bool = False,
    strict: bool = False,
) -> Any:
    from ragmeter.compare.diff import DEFAULT_TAG_DROP
    from ragmeter.compare.gate import GateRules, check_gate, gate_markdown
    from ragmeter.read.diff import read_diff
    from ragmeter.store import DEFAULT_STORE_URL, Store

    rules = GateRules.parse(
        [f"{m}={x}" for m, x in (max_drop or {}).items()],
        [f"{m}={x}" for m, x in (min or {}).items()],
        tag_max_drop=tag_max_drop,
        require_significance=require_significance,
        fail_inconclusive=fail_inconclusive,
        strict=strict,
    )
    if isinstance(store, Store):
        opened, owned = store, False
    else:
        url = store or config.getoption("--ragmeter-store") or os.environ.get(_STORE_ENV)
        opened, owned = Store.open(os.fspath(url or DEFAULT_STORE_URL)), True
    try:
        threshold = tag_max_drop if tag_max_drop is not None else DEFAULT_TAG_DROP
        # The view `ragmeter gate` reads: judge rules decided on the corrected estimates,
        # and the candidate's top knob in the report when it was explained.
        view = read_diff(opened, baseline, candidate, tag_drop_threshold=threshold)
    finally:
        if owned:
            opened.close()
    diff = view.require()
    result = check_gate(diff, rules, judged=view.judged)
    report = gate_markdown(diff, result, max_flips=max_flips, explanation=view.explanation)
    config.stash[_REPORTS].append(report)
    return result


@pytest.fixture
def ragmeter_gate(request: pytest.FixtureRequest) -> GateCallable:
    """A callable that gates a candidate run against a baseline and fails the test.

    ``ragmeter_gate(baseline="main", candidate="latest", max_drop={"hit@5": 0.02},
    min={"mrr": 0.6}, tag_max_drop=0.1, require_significance=False, store=None,
    fail_inconclusive=False, strict=False)`` returns the
    :class:`ragmeter.compare.gate.GateResult` when the gate passes (an inconclusive verdict
    passes unless ``fail_inconclusive``; ``strict`` is the raw-threshold gate, as on the
    command line); ``store`` is a ``Store``, a path or a URL. Skips the test unless pytest runs with ``--ragmeter-gate``.
    """
    config = request.config
    if not config.getoption("--ragmeter-gate"):
        pytest.skip("ragmeter gate not requested (run pytest with --ragmeter-gate)")

    def gate(
        baseline: str | int = "main",
        candidate: str | int = "latest",
        *,
        max_drop: Mapping[str, float] | None = None,
        min: Mapping[str, float] | None = None,
        tag_max_drop: float | None = 0.1,
        require_significance: bool = False,
        store: Any = None,
        max_flips: int = 10,
        fail_inconclusive: bool = False,
        strict: bool = False,
    ) -> Any:
        __tracebackhide__ = True
        try:
            result = _run_gate(
                config,
                baseline=baseline,
                candidate=candidate,
                max_drop=max_drop,
                min=min,
                tag_max_drop=tag_max_drop,
                require_significance=require_significance,
                store=store,
                max_flips=max_flips,
                fail_inconclusive=fail_inconclusive,
                strict=strict,
            )
        except RagmeterError as error:
            pytest.fail(f"ragmeter gate could not run: {error}", pytrace=False)
        if not result.passed:
            lines = "\n".join(f"  - {reason}" for reason in result.reasons or result.inconclusive)
            pytest.fail(
                f"ragmeter gate failed: run {candidate} vs baseline {baseline}\n{lines}",
                pytrace=False,
            )
        return result

    return gate
