"""HTML pieces of the static report: escaping, tables, inline SVG charts, the page shell.

Every value from data goes through :func:`esc`; nothing here builds markup from a question,
a chunk or a quote. The page links nothing: styles and the one small script are inline,
charts are inline SVG, and a Content-Security-Policy forbids any fetch.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence

__all__ = ["bar_chart", "esc", "fmt", "interval_chart", "line_chart", "page", "table"]

#: Forbids every network request: the report must open from file:// with no network.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'"
)

CSS = """
:root { --fg:#1d2330; --muted:#5f6b7a; --line:#d9dee5; --panel:#f6f8fa; --accent:#2456a6;
  --better:#13795b; --worse:#c0362c; --gold:#b8860b; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); margin: 0; }
main { max-width: 1200px; margin: 0 auto; padding: 16px; }
h1 { font-size: 20px; margin: 4px 0; } h2 { font-size: 16px; margin: 24px 0 8px; }
h3 { font-size: 14px; margin: 16px 0 6px; }
.meta, .hint, .small { color: var(--muted); font-size: 12.5px; }
.warn { background: #fff4d1; border-left: 4px solid var(--gold); padding: 6px 10px; margin: 6px 0; }
.metrics { display: flex; flex-wrap: wrap; gap: 6px; }
.metric { border: 1px solid var(--line); border-radius: 4px; padding: 4px 8px; background: var(--panel); }
.metric b { display: block; font-size: 16px; }
.wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.better { color: var(--better); } .worse { color: var(--worse); }
code, .mono { font-family: ui-monospace, monospace; font-size: 12.5px; overflow-wrap: anywhere; }
.tag { display: inline-block; background: #e8eef8; border-radius: 3px; padding: 0 5px; margin: 0 2px; font-size: 12px; }
details.miss { border: 1px solid var(--line); border-radius: 4px; margin: 6px 0; padding: 4px 8px; }
details.miss summary { cursor: pointer; }
ol.chunks { padding-left: 22px; } ol.chunks li { margin: 4px 0; }
li.gold { background: #fffaf0; }
.chunk { white-space: pre-wrap; overflow-wrap: anywhere; color: var(--muted); font-size: 12.5px;
  max-height: 12em; overflow: auto; }
mark { background: #ffe58a; color: inherit; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
svg.chart { width: 100%; max-width: 520px; height: auto; background: var(--panel); border-radius: 4px; }
svg text { font: 11px system-ui, sans-serif; fill: var(--muted); }
input[type=search] { width: 100%; max-width: 360px; padding: 4px; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
"""

#: Filters the misses by text; no request, no eval, text only.
SCRIPT = """
(function () {
  var box = document.getElementById('miss-search');
  if (!box) return;
  box.addEventListener('input', function () {
    var text = box.value.trim().toLowerCase();
    document.querySelectorAll('details.miss').forEach(function (d) {
      d.style.display = !text || d.textContent.toLowerCase().indexOf(text) >= 0 ? '' : 'none';
    });
  });
})();
"""


def esc(value: object) -> str:
    """``value`` as HTML text (quotes too, so it is safe in attributes).

    >>> esc('<b a="1">')
    '&lt;b a=&quot;1&quot;&gt;'
    """
    return html.escape("" if value is None else str(value), quote=True)


def fmt(value: float | None, digits: int = 3, signed: bool = False) -> str:
    """A number as the dashboard prints it; ``–`` when undefined.

    >>> fmt(0.5), fmt(float("nan")), fmt(0.1, signed=True)
    ('0.500', '–', '+0.100')
    """
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, num_from: int = 1) -> str:
    """A table of already-escaped cells; columns from ``num_from`` on are right-aligned."""

    def cls(i: int) -> str:
        return ' class="num"' if i >= num_from else ""

    head = "".join(f"<th{cls(i)}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td{cls(i)}>{cell}</td>" for i, cell in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f'<div class="wrap"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


_W, _H, _M = 520, 220, 36


def line_chart(values: Sequence[float], labels: Sequence[str], title: str) -> str:
    """An inline SVG line chart of values in [0, 1] (hit@k for k = 1..K)."""
    n = len(values)
    if n == 0:
        return ""
    step = (_W - 2 * _M) / max(n - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return _M + i * step, _H - _M - v * (_H - 2 * _M)

    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(i, v) for i, v in enumerate(values)))
    grid = "".join(
        f'<line x1="{_M}" x2="{_W - _M}" y1="{xy(0, g)[1]:.1f}" y2="{xy(0, g)[1]:.1f}" '
        f'stroke="#d9dee5"/><text x="{_M - 4}" y="{xy(0, g)[1] + 4:.1f}" text-anchor="end">'
        f"{g:.2f}</text>"
        for g in (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    ticks = "".join(
        f'<text x="{xy(i, 0)[0]:.1f}" y="{_H - _M + 14}" text-anchor="middle">{esc(label)}</text>'
        for i, label in enumerate(labels)
    )
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#2456a6"><title>{esc(labels[i])}: '
        f"{v:.3f}</title></circle>"
        for i, (v, (x, y)) in enumerate(
            zip(values, (xy(i, v) for i, v in enumerate(values)), strict=True)
        )
    )
    return (
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" role="img" aria-label="{esc(title)}">'
        f'<text x="{_M}" y="16">{esc(title)}</text>{grid}{ticks}'
        f'<polyline fill="none" stroke="#2456a6" stroke-width="2" points="{points}"/>{dots}</svg>'
    )


def bar_chart(bars: Sequence[tuple[str, float, str]], title: str) -> str:
    """Horizontal bars ``(label, value, colour)``, scaled to the largest value."""
    if not bars:
        return ""
    top = max((v for _, v, _ in bars), default=0.0) or 1.0
    row, left = 22, 150
    height = 28 + row * len(bars)
    out = [
        f'<svg class="chart" viewBox="0 0 {_W} {height}" role="img" aria-label="{esc(title)}">',
        f'<text x="4" y="16">{esc(title)}</text>',
    ]
    for i, (label, value, colour) in enumerate(bars):
        y = 24 + i * row
        width = (value / top) * (_W - left - 60)
        out.append(
            f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{esc(label[:24])}</text>'
            f'<rect x="{left}" y="{y}" width="{width:.1f}" height="16" fill="{colour}"/>'
            f'<text x="{left + width + 4:.1f}" y="{y + 13}">{esc(f"{value:g}")}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def interval_chart(rows: Sequence[tuple[str, float, float, float]], title: str) -> str:
    """Per-tag deltas ``(tag, delta, low, high)`` as dots with interval whiskers around 0."""
    if not rows:
        return ""
    span = (
        max(max(abs(lo), abs(hi), abs(d)) for _, d, lo, hi in rows if math.isfinite(lo))
        if any(math.isfinite(lo) for _, _, lo, _ in rows)
        else 1.0
    )
    span = span or 1.0
    row, left, right = 22, 150, 20
    height = 40 + row * len(rows)
    mid = left + (_W - left - right) / 2

    def x(v: float) -> float:
        return mid + (v / span) * (_W - left - right) / 2

    out = [
        f'<svg class="chart" viewBox="0 0 {_W} {height}" role="img" aria-label="{esc(title)}">',
        f'<text x="4" y="16">{esc(title)}</text>',
        f'<line x1="{mid:.1f}" x2="{mid:.1f}" y1="22" y2="{height - 14}" stroke="#5f6b7a"/>',
        f'<text x="{x(-span):.1f}" y="{height - 2}">{-span:+.2f}</text>',
        f'<text x="{x(span):.1f}" y="{height - 2}" text-anchor="end">{span:+.2f}</text>',
    ]
    for i, (tag, delta, low, high) in enumerate(rows):
        y = 32 + i * row
        colour = "#c0362c" if delta < 0 else "#13795b"
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{esc(tag[:24])}</text>')
        if math.isfinite(low) and math.isfinite(high):
            out.append(
                f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y}" y2="{y}" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
        out.append(
            f'<circle cx="{x(delta):.1f}" cy="{y}" r="4" fill="{colour}"><title>{esc(tag)}: '
            f"{delta:+.3f} [{fmt(low, signed=True)}, {fmt(high, signed=True)}]</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)


def page(title: str, body: str, generator: str) -> str:
    """The whole self-contained document."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="{esc(generator)}">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main><script>{SCRIPT}</script></body></html>\n"
    )
