"""Fixtures counting what a read decodes and builds (issue 29.1).

``decoded`` lists the item id of every ranking decoded while the test runs, through the
store's hook ``ragmeter.store._codec.RANKING_OBSERVERS``; ``built`` lists every report row
(``QuestionRow``) and miss (``Miss``) built while the test runs, through
``ragmeter.evaluation.report.ROW_OBSERVERS``. Import them into a test module:
``from _decoded import built, decoded``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragmeter.evaluation import report
from ragmeter.store import _codec


@pytest.fixture
def decoded() -> Iterator[list[str]]:
    """Item ids of every ranking decoded while the test runs."""
    seen: list[str] = []
    _codec.RANKING_OBSERVERS.append(seen.append)
    try:
        yield seen
    finally:
        _codec.RANKING_OBSERVERS.remove(seen.append)


@pytest.fixture
def built() -> Iterator[list[report.QuestionRow | report.Miss]]:
    """Every ``QuestionRow`` and ``Miss`` built while the test runs (a copy made by
    ``dataclasses.replace`` counts as built)."""
    seen: list[report.QuestionRow | report.Miss] = []
    report.ROW_OBSERVERS.append(seen.append)
    try:
        yield seen
    finally:
        report.ROW_OBSERVERS.remove(seen.append)
