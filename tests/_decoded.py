"""A fixture counting the stored rankings a read decodes (issue 29.1).

``decoded`` lists the item id of every ranking decoded while the test runs, through the
store's hook ``ragmeter.store._codec.RANKING_OBSERVERS``. Import it into a test module:
``from _decoded import decoded``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
