"""The Chromium fixtures every browser test in tests/web uses (issue 25.4: written once).

The helpers behind them (``ragmeter serve`` as a subprocess, the watched page, the
screenshots kept in /tmp/ragmeter-screens) are in ``tests/_browser.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from _browser import chromium, require_browser, watched_page


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per module; skips (fails under ``CI=true``) without one.

    A test using it is marked ``slow`` (``SLOW_FIXTURES`` in ``tests/conftest.py``)."""
    require_browser()
    with chromium() as launched:
        yield launched


@pytest.fixture
def dialogs_are_errors() -> bool:
    """Whether a dialog on ``page`` fails the test; a module that opens them overrides it."""
    return True


@pytest.fixture
def page(browser: Any, served: Any, dialogs_are_errors: bool) -> Iterator[Any]:
    """A fresh page on the module's ``served`` dashboard that fails the test on a script
    error, a dialog (see ``dialogs_are_errors``) or a request leaving the server."""
    with watched_page(browser, served.base, dialogs_are_errors=dialogs_are_errors) as opened:
        yield opened
