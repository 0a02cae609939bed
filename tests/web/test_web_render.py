"""The dashboard's number formatting (web/render.py)."""

from __future__ import annotations

import doctest

from ragmeter.web import render


def test_docstring_examples_hold() -> None:
    """An interval end that rounds to zero reads ``+0.000``, never ``-0.000`` (issue 26.2)."""
    result = doctest.testmod(render)
    assert result.attempted >= 1 and result.failed == 0
