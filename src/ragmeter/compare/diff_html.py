"""A diff as HTML: the metrics table with intervals, per-tag deltas, blame and flips.

The static report's diff section and :meth:`RunDiff._repr_html_
<ragmeter.compare.diff.RunDiff._repr_html_>` (a notebook) render it; every value from data
goes through :func:`~ragmeter.compare._html.esc`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.compare._html import esc, fmt, interval_chart, table
from ragmeter.compare._shapes import DiffShape, FlipShape
from ragmeter.compare.comparison import lower_is_better
from ragmeter.compare.markdown import detectable_cell

__all__ = ["MAX_FLIPS", "diff_section", "flips_table", "sign"]

#: Newly missed / newly found questions listed per list.
MAX_FLIPS = 100


def sign(delta: float, metric: str = "") -> str:
    """The colour class of a change: a rise in latency or hallucination is worse.

    >>> sign(0.1, "mrr"), sign(0.1, "hallucination"), sign(0.0)
    ('better', 'worse', '')
    """
    if lower_is_better(metric):
        delta = -delta
    return "better" if delta > 0 else ("worse" if delta < 0 else "")


def flips_table(title: str, flips: Sequence[FlipShape], left: list[str]) -> str:
    """Newly missed or newly found questions (at most :data:`MAX_FLIPS`; the rest noted)."""
    if not flips:
        return ""
    rows = [
        [
            f"<code>{esc(f.id)}</code>",
            esc(f.question),
            " ".join(f'<span class="tag">{esc(t)}</span>' for t in f.tags),
            f"{'–' if f.rank_a is None else f.rank_a} → {'–' if f.rank_b is None else f.rank_b}",
        ]
        for f in flips[:MAX_FLIPS]
    ]
    if len(flips) > MAX_FLIPS:
        left.append(f"{len(flips) - MAX_FLIPS} of {len(flips)} {title.lower()} not listed")
    return f"<h3>{esc(title)} ({len(flips)})</h3>" + table(
        ["id", "question", "tags", "first relevant A → B"], rows, num_from=3
    )


def _metric_rows(diff: DiffShape) -> list[list[str]]:
    return [
        [
            esc(m.metric),
            fmt(m.mean_a),
            fmt(m.mean_b),
            f'<span class="{sign(m.delta, m.metric)}">{fmt(m.delta, signed=True)}</span>',
            f"[{fmt(m.ci_low, signed=True)}, {fmt(m.ci_high, signed=True)}]",
            ("&lt;0.001" if m.p_value < 0.001 else f"{m.p_value:.3f}") + ("" if m.exact else "*"),
            detectable_cell(m.detectable),
        ]
        for m in diff.metrics
    ]


def _tag_section(diff: DiffShape, intervals: Sequence[Any]) -> list[str]:
    c = diff.comparison
    flagged = {t.tag for t in diff.flagged if t.metric == diff.primary}
    by_tag = {t.tag: t for t in diff.tags if t.metric == diff.primary}
    chart = interval_chart(
        [(i.tag, i.delta, i.low, i.high) for i in intervals], f"Δ {diff.primary} per tag"
    )
    rows = [
        [
            esc(i.tag) + (' <span class="worse">⚠ flagged</span>' if i.tag in flagged else ""),
            str(by_tag[i.tag].n),
            fmt(by_tag[i.tag].mean_a),
            fmt(by_tag[i.tag].mean_b),
            f'<span class="{sign(i.delta, diff.primary)}">{fmt(i.delta, signed=True)}</span>',
            f"[{fmt(i.low, signed=True)}, {fmt(i.high, signed=True)}]",
            f"{by_tag[i.tag].p_holm:.3f}",
            detectable_cell(by_tag[i.tag].detectable),
        ]
        for i in intervals
    ]
    head = ["tag", "n", "A", "B", "Δ", f"{c.confidence:.0%} interval", "p (Holm)", "detectable"]
    return [
        f"<h3>Per tag ({esc(diff.primary)})</h3>",
        f'<div class="charts">{chart}</div>',
        table(head, rows),
    ]


def _blame_section(diff: DiffShape) -> list[str]:
    side_a, side_b = diff.blame_by_tag.get("a", {}), diff.blame_by_tag.get("b", {})
    rows = []
    for tag in sorted(set(side_a) | set(side_b)):
        cells = [esc(tag)]
        for key in ("retrieval", "generation", "ok"):
            before = side_a.get(tag, {}).get(key, 0)
            cells.append(f"{before} → {side_b.get(tag, {}).get(key, 0)}")
        rows.append(cells)
    return ["<h3>Blame per tag, A → B</h3>", table(["tag", "retrieval", "generation", "ok"], rows)]


def diff_section(
    diff: DiffShape, intervals: Sequence[Any] = (), left: list[str] | None = None
) -> str:
    """The diff of run B against run A: warnings, the metrics with their intervals, per-tag
    deltas with the ``intervals`` given (``tag``, ``delta``, ``low``, ``high``), blame per tag
    and the flips; lists cut short are noted in ``left``."""
    left = left if left is not None else []
    c = diff.comparison
    out = [f"<h2>Against run {diff.a.id} · {esc(diff.a.name)}</h2>"]
    out += [f'<p class="warn">{esc(w)}</p>' for w in diff.warnings]
    head = ["metric", "A", "B", "Δ", f"{c.confidence:.0%} interval", "p", "detectable"]
    out.append(table(head, _metric_rows(diff)))
    if intervals:
        out += _tag_section(diff, intervals)
    if diff.blame_by_tag:
        out += _blame_section(diff)
    out.append(flips_table("Newly missed", diff.newly_missed, left))
    out.append(flips_table("Newly found", diff.newly_found, left))
    return "".join(out)
