"""``ragmeter report``: one self-contained static HTML file about a run (issue 15.4).

The file a person attaches to a pull request or sends to a colleague: no server, no
external assets and no requests (styles, the one small script and the SVG charts are
inline; a Content-Security-Policy forbids fetching anything). It holds the run's summary and
metrics, why each miss was missed and each knob's ceiling (when ``ragmeter explain`` ran), the
hit@k curve, misses by tag with blame counts, the judge's metrics (the corrected estimate when
people labelled answers), the misses grouped by cluster with their chunks' text
and the gold quotes marked, and — against a baseline — the diff: metric deltas with intervals,
per-tag deltas with intervals, newly missed and newly found questions.

Everything comes from the library's own objects (:func:`build_report`,
:func:`~ragmeter.compare.diff.diff_runs`, :func:`~ragmeter.compare.judged.corrected_faithful`);
this module only lays them out. Big runs stay bounded (:data:`MAX_MISSES` misses spelled out,
:data:`MAX_CHUNKS` chunks each, :data:`MAX_CHUNK_CHARS` characters a chunk, :data:`MAX_FLIPS`
flips a list), and the file says what it left out.

>>> from ragmeter.store import Store
>>> with Store.open(".ragmeter/ragmeter.db") as store:  # doctest: +SKIP
...     write_static_report(store, "latest", "report.html", against="baseline").n_bytes
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.compare._html import (
    bar_chart,
    esc,
    fmt,
    interval_chart,
    line_chart,
    page,
    table,
)
from ragmeter.compare.comparison import lower_is_better
from ragmeter.compare.diff import RunDiff, diff_runs
from ragmeter.compare.judged import corrected_faithful, corrected_metrics
from ragmeter.compare.stats import paired_bootstrap_ci
from ragmeter.evaluation.hit_text import CUT_MARK, highlighted
from ragmeter.evaluation.report import QuestionRow, RunReport, build_report

if TYPE_CHECKING:
    from ragmeter.store import Store

__all__ = [
    "MAX_CHUNKS",
    "MAX_CHUNK_CHARS",
    "MAX_FLIPS",
    "MAX_MISSES",
    "StaticReport",
    "static_report",
    "write_static_report",
]

#: Missed questions spelled out with their chunks (the rest are counted, not shown).
MAX_MISSES = 200
#: Retrieved chunks shown per missed question.
MAX_CHUNKS = 5
#: Characters of a chunk's text shown in the report (the run keeps up to 4,000).
MAX_CHUNK_CHARS = 1_500
#: Newly missed / newly found questions listed per list.
MAX_FLIPS = 100
UNTAGGED = "(no tag)"
BLAME_COLOURS = {"retrieval": "#c0362c", "generation": "#b8860b", "ok": "#13795b"}


@dataclass(frozen=True)
class StaticReport:
    """A written (or rendered) report: the HTML, the runs in it and what was left out."""

    html: str
    run_id: int
    against_id: int | None
    left_out: tuple[str, ...] = ()
    path: str | None = None

    @property
    def n_bytes(self) -> int:
        return len(self.html.encode("utf-8"))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary for ``--json``."""
        return {
            "path": self.path,
            "run": self.run_id,
            "against": self.against_id,
            "bytes": self.n_bytes,
            "left_out": list(self.left_out),
        }


def _run_header(report: RunReport, left_out: Sequence[str]) -> str:
    run = report.run
    bits = [
        esc(run.created[:16].replace("T", " ")),
        f"retriever <code>{esc(run.retriever)}</code>",
        f"k={run.k}",
        f"{esc(run.level)} level",
        f"{report.n_questions} questions",
    ]
    if run.commit:
        bits.append(f"commit <code>{esc(run.commit[:12])}</code>")
    if report.n_errors:
        bits.append(f'<span class="worse">{report.n_errors} errors</span>')
    out = [f"<h1>Run {run.id} · {esc(run.name)}</h1>"]
    if run.note:
        out.append(f"<p>{esc(run.note)}</p>")
    out.append(f'<p class="meta">{" · ".join(bits)}</p>')
    if run.status != "complete":
        out.append(f'<p class="warn">run status: {esc(run.status)}</p>')
    out += [f'<p class="warn">{esc(w)}</p>' for w in report.warnings]
    out += [f'<p class="warn">This report is cut: {esc(note)}.</p>' for note in left_out]
    return "".join(out)


def _metrics(report: RunReport) -> str:
    cells = "".join(
        f'<div class="metric">{esc(name)}<b>{fmt(value)}</b></div>'
        for name, value in report.metrics.items()
    )
    return f'<h2>Metrics</h2><section class="metrics">{cells}</section>'


def _hit_curve(report: RunReport) -> list[float]:
    ranks = [row.first_relevant_rank for row in report.rows]
    n = len(ranks) or 1
    return [
        sum(1 for r in ranks if r is not None and r <= cut) / n
        for cut in range(1, report.run.k + 1)
    ]


def _tags(report: RunReport) -> str:
    blame = report.blame_by_tag
    headers = ["tag", "questions", "misses", "hit rate"]
    if blame:
        headers += ["blame: retrieval", "generation", "ok"]
    rows = []
    for t in report.by_tag:
        row = [esc(t.tag), str(t.n), str(t.misses), fmt(t.hit_rate, 2)]
        if blame:
            counts = blame.get(t.tag, {})
            row += [str(counts.get(key, 0)) for key in ("retrieval", "generation", "ok")]
        rows.append(row)
    if not rows:
        return ""
    note = f'<p class="hint">Overall hit rate {fmt(report.hit_rate, 2)}.</p>'
    return f"<h2>Misses by tag</h2>{table(headers, rows)}{note}"


def _explained(store: Store, report: RunReport) -> str:
    """The knob summary and each miss's causes, when ``ragmeter explain`` ran (issue 28)."""
    from ragmeter.evaluation.explain import stored_explanation

    explanation = stored_explanation(store, report.run.id)
    if explanation is None:
        return ""
    knobs = "".join(f'<p class="knob">{esc(k.line())}</p>' for k in explanation.knobs)
    rows = [[esc(m.item_id), esc(m.why())] for m in explanation.misses]
    why = table(["question", "why missed"], rows, num_from=2) if rows else ""
    return f"<h2>Why missed (explain, depth {explanation.depth})</h2>{knobs}{why}"


def _judge(store: Store, report: RunReport, label_set: str | None) -> str:
    out = []
    if report.blame:
        bars = [(key, float(report.blame.get(key, 0)), c) for key, c in BLAME_COLOURS.items()]
        out.append(bar_chart(bars, "blame: where failed answers went wrong"))
    judged = corrected_metrics(store, report.run.id) if label_set else {}
    faithful = corrected_faithful(store, report.run.id, label_set=label_set) if label_set else None
    judged.pop("faithful", None)
    if faithful is not None:
        judged = {"faithful": faithful, **judged}
    lines = [f"{esc(metric)} {esc(mean.describe())}" for metric, mean in judged.items()]
    if faithful is None and "faithful" in report.metrics:
        lines.append(f"faithful {fmt(report.metrics['faithful'])} (not calibrated)")
    k_key = f"judged@{report.run.k}"
    if report.judged.get(k_key) is not None and (report.judged.get("judge") or 0) > 0:
        lines.append(
            f"{k_key} {fmt(report.judged[k_key])} (labels: {esc(report.judged['labels'])})"
        )
    for name, entry in sorted(report.judges.items()):
        config = entry.get("config") if isinstance(entry, dict) else None
        model = config.get("model") if isinstance(config, dict) else None
        calibration = entry.get("calibration") if isinstance(entry, dict) else None
        line = f"judge {esc(name)}" + (f": model <code>{esc(model)}</code>" if model else "")
        if isinstance(calibration, dict) and calibration.get("kappa") is not None:
            line += f" · calibrated, kappa {fmt(calibration['kappa'], 2)}"
        lines.append(line)
    if not lines and not out:
        return ""
    body = "".join(f"<p>{line}</p>" for line in lines)
    if not lines:
        body = '<p class="hint">no judge configured — run <code>ragmeter judge faithfulness RUN</code></p>'
    return f'<h2>Judge</h2>{body}<div class="charts">{"".join(out)}</div>'


def _chunk(hit: dict[str, Any]) -> str:
    head = f'<span class="small">#{hit["rank"]}</span> '
    mark = "gold" if hit["grade"] > 0 else "none"
    head += f'<span class="tag">{mark}{" " + str(hit["grade"]) if hit["grade"] else ""}</span> '
    head += f'<code>{esc(hit["id"])}</code> <span class="small">score {fmt(hit["score"], 2)}</span>'
    if hit.get("text_source") == "none" or not hit.get("text"):
        text = '<span class="hint">text not stored with this run</span>'
    else:
        pieces, used = [], 0
        for seg in hit["segments"]:
            piece = seg["text"][: max(0, MAX_CHUNK_CHARS - used)]
            used += len(piece)
            if piece:
                pieces.append(f"<mark>{esc(piece)}</mark>" if seg["quote"] else esc(piece))
        if used < len(hit["text"]):
            pieces.append(esc(CUT_MARK))
        text = "".join(pieces)
    return f'<li class="{mark}">{head}<div class="chunk">{text}</div></li>'


def _miss(row: QuestionRow) -> str:
    detail = highlighted(
        {"gold": row.gold, "retrieved": [dict(h) for h in row.retrieved[:MAX_CHUNKS]]}
    )
    tags = "".join(f'<span class="tag">{esc(t)}</span>' for t in row.tags)
    expected = " ".join(f"<code>{esc(d)}</code>" for d in row.expected)
    quotes = "".join(
        f"<li><code>{esc(g['doc'])}</code>: <q>{esc(g['quote'])}</q></li>"
        for g in row.gold
        if g.get("quote")
    )
    blame = f" · blame <b>{esc(row.blame)}</b>" if row.blame else ""
    rank = "none" if row.first_relevant_rank is None else str(row.first_relevant_rank)
    chunks = "".join(_chunk(hit) for hit in detail["retrieved"])
    return (
        f'<details class="miss"><summary><code>{esc(row.id)}</code> {esc(row.question)} {tags}'
        f'</summary><p class="small">expected {expected} · first relevant rank {rank}{blame}</p>'
        + (f'<ul class="small">{quotes}</ul>' if quotes else "")
        + (f"<p><b>answer</b>: {esc(row.answer)}</p>" if row.answer is not None else "")
        + (
            f'<ol class="chunks">{chunks}</ol>'
            if chunks
            else '<p class="hint">nothing retrieved</p>'
        )
        + "</details>"
    )


def _misses(report: RunReport, limit: int) -> tuple[str, list[str]]:
    """Misses grouped by tag, worst tag first; each miss once, under its worst tag."""
    order = [t.tag for t in report.by_tag]
    rank = {tag: i for i, tag in enumerate(order)}
    missed = [row for row in report.rows if row.error is None and not row.hit]
    groups: dict[str, list[QuestionRow]] = {}
    for row in missed:
        tag = min(row.tags, key=lambda t: rank.get(t, len(rank))) if row.tags else UNTAGGED
        groups.setdefault(tag, []).append(row)
    shown, out = 0, ["<h2>Misses by cluster</h2>"]
    if not missed:
        return "<h2>Misses by cluster</h2><p>No misses.</p>", []
    out.append('<input type="search" id="miss-search" placeholder="filter misses by text">')
    for tag in sorted(groups, key=lambda t: rank.get(t, len(rank))):
        rows = groups[tag]
        out.append(f'<h3>{esc(tag)} <span class="hint">{len(rows)} missed</span></h3>')
        for row in rows:
            if shown >= limit:
                break
            out.append(_miss(row))
            shown += 1
    left = (
        [f"{len(missed) - shown} of {len(missed)} misses not shown"] if shown < len(missed) else []
    )
    return "".join(out), left


def _tag_intervals(
    store: Store, diff: RunDiff, report: RunReport
) -> list[tuple[str, float, float, float]]:
    """Per-tag delta of the primary metric with a paired bootstrap interval (same seed)."""
    metric = diff.primary
    a = store.question_metrics(diff.a.id, [metric]).get(metric, {})
    b = store.question_metrics(diff.b.id, [metric]).get(metric, {})
    tags = {row.id: row.tags for row in report.rows}
    out = []
    for t in (t for t in diff.tags if t.metric == metric):
        items = [i for i in a if i in b and t.tag in tags.get(i, ())]
        if len(items) < 2:
            out.append((t.tag, t.delta, float("nan"), float("nan")))
            continue
        low, high = paired_bootstrap_ci(
            np.array([a[i] for i in items]),
            np.array([b[i] for i in items]),
            confidence=diff.comparison.confidence,
            seed=diff.comparison.seed,
        )
        out.append((t.tag, t.delta, low, high))
    return out


def _flips(title: str, flips: Sequence[Any], left: list[str]) -> str:
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


def _sign(delta: float, metric: str = "") -> str:
    """The colour class of a change: a rise in latency or hallucination is worse."""
    if lower_is_better(metric):
        delta = -delta
    return "better" if delta > 0 else ("worse" if delta < 0 else "")


def _diff(store: Store, diff: RunDiff, report: RunReport, left: list[str]) -> str:
    c = diff.comparison
    out = [f"<h2>Against run {diff.a.id} · {esc(diff.a.name)}</h2>"]
    out += [f'<p class="warn">{esc(w)}</p>' for w in diff.warnings]
    rows = [
        [
            esc(m.metric),
            fmt(m.mean_a),
            fmt(m.mean_b),
            f'<span class="{_sign(m.delta, m.metric)}">{fmt(m.delta, signed=True)}</span>',
            f"[{fmt(m.ci_low, signed=True)}, {fmt(m.ci_high, signed=True)}]",
            ("&lt;0.001" if m.p_value < 0.001 else f"{m.p_value:.3f}") + ("" if m.exact else "*"),
        ]
        for m in diff.metrics
    ]
    out.append(table(["metric", "A", "B", "Δ", f"{c.confidence:.0%} interval", "p"], rows))
    intervals = _tag_intervals(store, diff, report)
    if intervals:
        flagged = {t.tag for t in diff.flagged if t.metric == diff.primary}
        out.append(f"<h3>Per tag ({esc(diff.primary)})</h3>")
        out.append(
            f'<div class="charts">{interval_chart(intervals, f"Δ {diff.primary} per tag")}</div>'
        )
        by_tag = {t.tag: t for t in diff.tags if t.metric == diff.primary}
        tag_rows = [
            [
                esc(tag) + (' <span class="worse">⚠ flagged</span>' if tag in flagged else ""),
                str(by_tag[tag].n),
                fmt(by_tag[tag].mean_a),
                fmt(by_tag[tag].mean_b),
                f'<span class="{_sign(delta, diff.primary)}">{fmt(delta, signed=True)}</span>',
                f"[{fmt(low, signed=True)}, {fmt(high, signed=True)}]",
                f"{by_tag[tag].p_holm:.3f}",
            ]
            for tag, delta, low, high in intervals
        ]
        out.append(
            table(["tag", "n", "A", "B", "Δ", f"{c.confidence:.0%} interval", "p (Holm)"], tag_rows)
        )
    if diff.blame_by_tag:
        side_a, side_b = diff.blame_by_tag.get("a", {}), diff.blame_by_tag.get("b", {})
        blame_rows = []
        for tag in sorted(set(side_a) | set(side_b)):
            cells = [esc(tag)]
            for key in ("retrieval", "generation", "ok"):
                before = side_a.get(tag, {}).get(key, 0)
                cells.append(f"{before} → {side_b.get(tag, {}).get(key, 0)}")
            blame_rows.append(cells)
        out.append("<h3>Blame per tag, A → B</h3>")
        out.append(table(["tag", "retrieval", "generation", "ok"], blame_rows))
    out.append(_flips("Newly missed", diff.newly_missed, left))
    out.append(_flips("Newly found", diff.newly_found, left))
    return "".join(out)


def static_report(
    store: Store,
    run_ref: int | str,
    *,
    against: int | str | None = None,
    label_set: str | None = None,
    max_misses: int = MAX_MISSES,
) -> StaticReport:
    """The static HTML report of ``run_ref``, with the diff against ``against`` if given.

    ``label_set`` names the calibration set of people's labels for the run's answers (the
    dashboard's ``run-<id>``); with it the judge's ``faithful`` is the corrected estimate.
    At most ``max_misses`` missed questions are spelled out; the file says how many it left.
    """
    from importlib.metadata import PackageNotFoundError, version

    report = build_report(store, run_ref)
    diff = diff_runs(store, against, report.run.id) if against is not None else None
    left: list[str] = []
    misses, cut = _misses(report, max_misses)
    left += cut
    diff_html = _diff(store, diff, report, left) if diff is not None else ""
    curve = line_chart(
        _hit_curve(report),
        [str(i) for i in range(1, report.run.k + 1)],
        f"hit@k, k = 1..{report.run.k}",
    )
    body = "".join(
        [
            _run_header(report, left),
            _metrics(report),
            _explained(store, report),
            f'<div class="charts">{curve}</div>',
            _tags(report),
            _judge(store, report, label_set),
            diff_html,
            misses,
        ]
    )
    try:
        made_by = f"ragmeter {version('ragmeter')}"
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        made_by = "ragmeter"
    footer = (
        f"<footer>Written by {esc(made_by)} from the run store. A static file: it loads "
        "nothing from the network.</footer>"
    )
    title = f"ragmeter · run {report.run.id} {report.run.name}"
    if diff is not None:
        title += f" vs run {diff.a.id}"
    return StaticReport(
        html=page(title, body + footer, made_by),
        run_id=report.run.id,
        against_id=diff.a.id if diff is not None else None,
        left_out=tuple(left),
    )


def write_static_report(
    store: Store,
    run_ref: int | str,
    path: str | Path,
    *,
    against: int | str | None = None,
    label_set: str | None = None,
    max_misses: int = MAX_MISSES,
) -> StaticReport:
    """Write :func:`static_report` to ``path`` (UTF-8) and return it with ``path`` set."""
    rendered = static_report(
        store, run_ref, against=against, label_set=label_set, max_misses=max_misses
    )
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(rendered.html, encoding="utf-8")
    return StaticReport(
        rendered.html, rendered.run_id, rendered.against_id, rendered.left_out, str(target)
    )
