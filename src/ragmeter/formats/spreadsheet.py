"""CSV that a spreadsheet opens as data, never as formulas (issue 27.7).

Every CSV ragmeter writes (``export --format csv``, MLflow's ``per_question.csv``, the
dashboard's ``/api/runs/N/questions.csv`` and ``/api/compare/questions.csv``) goes through
:func:`csv_text`. A question, an error message or a chunk id comes from users and services:
a cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would be run as a
formula by Excel or LibreOffice (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``). Following the
OWASP CSV injection guidance, such a text cell gets a leading ``'``, which spreadsheets show
as text and do not evaluate. Numbers stay numbers (``-0.5`` written from a float is data);
the dashboard's in-page table exports apply the same rule in JavaScript (``csvCell`` in
``web/static/app.js``).

>>> neutral_cell("=HYPERLINK(\\"http://x\\")"), neutral_cell("-1+2"), neutral_cell(-0.5)
('\\'=HYPERLINK("http://x")', "'-1+2", -0.5)
>>> csv_text(["id", "q"], [{"id": "a", "q": "@SUM(1)"}])
"id,q\\na,'@SUM(1)\\n"
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["FORMULA_STARTS", "csv_text", "neutral_cell"]

#: First characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutral_cell(value: Any) -> Any:
    """``value`` safe for a spreadsheet: a text starting like a formula gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """A CSV document (``\\n`` line ends) of ``rows`` under ``columns``, every cell neutral.

    A column a row lacks is an empty cell; keys outside ``columns`` are not written.
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([neutral_cell(c) for c in columns])
    for row in rows:
        writer.writerow([neutral_cell(_plain(row.get(c))) for c in columns])
    return out.getvalue()


def _plain(value: Any) -> Any:
    return "" if value is None else value
