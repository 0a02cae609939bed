"""Jinja2 rendering for the pages: autoescaped, strict, with a few number filters.

Autoescaping is always on and no template marks user data ``|safe``: a gold
question holding ``<script>`` shows as text. Page data travels to the page's
JavaScript as ``{{ data|tojson }}`` inside ``<script type="application/json">``;
Jinja's ``tojson`` writes ``<``, ``>``, ``&`` and ``'`` as ``\\u`` escapes, so no
string can close the script tag.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from ragmeter.metrics import lower_is_better

__all__ = ["Renderer", "fmt"]


def fmt(value: Any, digits: int = 3) -> str:
    """A metric value for a table cell; ``–`` when undefined.

    >>> fmt(0.12345), fmt(None), fmt(812.4), fmt(float("nan"))
    ('0.123', '–', '812', '–')
    """
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def signed(value: Any, digits: int = 3) -> str:
    """A delta with its sign; ``–`` when undefined. What rounds to zero is ``+0.000``, never
    ``-0.000`` (an interval end of ``-1e-17`` is no drop).

    >>> signed(-1e-17), signed(-0.0), signed(-0.25), signed(None)
    ('+0.000', '+0.000', '-0.250', '–')
    """
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if abs(value) >= 100:
        return f"{value:+.0f}"
    return f"{round(value, digits) + 0.0:+.{digits}f}"


def pvalue(value: Any) -> str:
    if value is None:
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


class Renderer:
    """Render a template of ``directory`` with a context mapping to a string.

    >>> r = Renderer(Path(__file__).parent / "templates")
    >>> "&lt;b&gt;" in r.env.from_string("{{ x }}").render(x="<b>")
    True
    """

    def __init__(self, directory: Path, asset_version: str = ""):
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(directory),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(fmt=fmt, signed=signed, pvalue=pvalue)
        self.env.tests["lower_is_better"] = lower_is_better
        self.env.globals["asset_version"] = asset_version

    def render(self, name: str, context: Mapping[str, Any]) -> str:
        return self.env.get_template(name).render(**context)
