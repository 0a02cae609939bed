"""HTML fragments of a :class:`~ragmeter.read.view.RunView`: the static report's sections,
which a notebook (``RunView._repr_html_``) shows too.

Each fragment lays out what the view holds and computes nothing; every value from data goes
through :func:`~ragmeter.compare._html.esc`, so no question, chunk or quote becomes markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ragmeter.compare._html import bar_chart, esc, fmt, table
from ragmeter.evaluation.hit_text import CUT_MARK, run_highlighted

if TYPE_CHECKING:
    from ragmeter.compare.diff import RunDiff
    from ragmeter.evaluation.explain import Explanation
    from ragmeter.evaluation.report import QuestionRow, RunReport
    from ragmeter.metrics.uncertainty import JudgedMean
    from ragmeter.run import RunInfo


class RunView(Protocol):
    """What the fragments read of a :class:`ragmeter.read.view.RunView` (a protocol, so the
    view can render itself with them without an import circle)."""

    @property
    def report(self) -> RunReport: ...
    @property
    def run(self) -> RunInfo: ...
    @property
    def rows(self) -> Sequence[QuestionRow]: ...
    @property
    def metrics(self) -> dict[str, float]: ...
    @property
    def health_lines(self) -> list[str]: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def judged(self) -> Mapping[str, JudgedMean]: ...
    @property
    def judged_error(self) -> str | None: ...
    @property
    def unstable(self) -> Mapping[str, Sequence[str]]: ...
    @property
    def failed_answers(self) -> Sequence[QuestionRow]: ...
    @property
    def diff(self) -> RunDiff | None: ...
    @property
    def tag_intervals(self) -> Sequence[Any]: ...
    @property
    def explanation(self) -> Explanation | None: ...


__all__ = [
    "MAX_CHUNKS",
    "MAX_CHUNK_CHARS",
    "explain_section",
    "failed_answers",
    "judge_section",
    "metrics_section",
    "metrics_table",
    "misses_section",
    "spelled_out",
    "run_header",
    "tags_section",
    "view_html",
]

#: Retrieved chunks shown per missed question.
MAX_CHUNKS = 5
#: Characters of a chunk's text shown in the report (the run keeps up to 4,000).
MAX_CHUNK_CHARS = 1_500
UNTAGGED = "(no tag)"
BLAME_COLOURS = {"retrieval": "#c0362c", "generation": "#b8860b", "ok": "#13795b"}


def run_header(view: RunView, left_out: Sequence[str]) -> str:
    """The run's title, what it was (retriever, k, level, size, commit) and its warnings."""
    report, run = view.report, view.run
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
    out += [f'<p class="warn">{esc(w)}</p>' for w in view.warnings]
    out += [f'<p class="warn">This report is cut: {esc(note)}.</p>' for note in left_out]
    return "".join(out)


def metrics_section(view: RunView) -> str:
    """The metric means as cards, then the health line and its hints."""
    cells = "".join(
        f'<div class="metric">{esc(name)}<b>{fmt(value)}</b></div>'
        for name, value in view.metrics.items()
    )
    health = "".join(f'<p class="health">{esc(line)}</p>' for line in view.health_lines)
    return f'<h2>Metrics</h2><section class="metrics">{cells}</section>{health}'


def metrics_table(view: RunView) -> str:
    """The metric means as a table (a notebook has none of the report's styles), then the
    health line and its hints."""
    rows = [[esc(name), fmt(value)] for name, value in view.metrics.items()]
    health = "".join(f"<p>{esc(line)}</p>" for line in view.health_lines)
    return table(["metric", "mean"], rows) + health


def tags_section(view: RunView) -> str:
    """Misses by tag (worst first) with each tag's blame counts when answers were checked."""
    report = view.report
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


def explain_section(view: RunView) -> str:
    """The knob ceilings and each miss's causes, when ``ragmeter explain`` ran (issue 28)."""
    explanation = view.explanation
    if explanation is None:
        return ""
    knobs = "".join(f'<p class="knob">{esc(k.line())}</p>' for k in explanation.knobs)
    rows = [[esc(m.item_id), esc(m.why())] for m in explanation.misses]
    why = table(["question", "why missed"], rows, num_from=2) if rows else ""
    return f"<h2>Why missed (explain, depth {explanation.depth})</h2>{knobs}{why}"


def judge_section(view: RunView) -> str:
    """Blame counts, the corrected judge metrics, coverage, each judge and its calibration."""
    report = view.report
    out = []
    if report.blame:
        bars = [(key, float(report.blame.get(key, 0)), c) for key, c in BLAME_COLOURS.items()]
        out.append(bar_chart(bars, "blame: where failed answers went wrong"))
    lines = [f"{esc(metric)} {esc(mean.describe())}" for metric, mean in view.judged.items()]
    if view.judged_error is not None:
        lines.append(f"judge metrics not corrected: {esc(view.judged_error)}")
    if "faithful" not in view.judged and "faithful" in report.metrics:
        lines.append(f"faithful {fmt(report.metrics['faithful'])} (not calibrated)")
    coverage = report.judged  # covered@k: gold and judge labels in the top k
    k_key = f"covered@{view.run.k}"
    if coverage.get(k_key) is not None and (coverage.get("judge") or 0) > 0:
        lines.append(f"{k_key} {fmt(coverage[k_key])} (labels: {esc(coverage['labels'])})")
    for judge, ids in view.unstable.items():
        if ids:
            lines.append(f"{len(ids)} {esc(judge)} verdict(s) unstable across repeats")
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


def _question(row: QuestionRow, config: Mapping[str, Any], kind: str = "miss") -> str:
    """One missed question or failed answer, folded: its gold, answer, blame and chunks
    (quotes marked at the share of the run's ``config``, as the dashboard marks them)."""
    detail = run_highlighted(
        {"gold": row.gold, "retrieved": [dict(h) for h in row.retrieved[:MAX_CHUNKS]]}, config
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
    verdict = row.judge if isinstance(row.judge, dict) else {}
    reason = verdict.get("reason")
    checks = []
    if row.answer_ok is not None:
        checks.append("answer check " + ("passed" if row.answer_ok else "failed"))
    if row.faithful is not None:
        checks.append("judge: " + ("supported" if row.faithful else "unsupported"))
    return (
        f'<details class="{kind}"><summary><code>{esc(row.id)}</code> {esc(row.question)} {tags}'
        f'</summary><p class="small">expected {expected} · first relevant rank {rank}{blame}</p>'
        + (f'<ul class="small">{quotes}</ul>' if quotes else "")
        + (f"<p><b>answer</b>: {esc(row.answer)}</p>" if row.answer is not None else "")
        + (f'<p class="small">{esc(" · ".join(checks))}</p>' if checks else "")
        + (f'<p class="small">the judge\'s reason: {esc(reason)}</p>' if reason else "")
        + (
            f'<ol class="chunks">{chunks}</ol>'
            if chunks
            else '<p class="hint">nothing retrieved</p>'
        )
        + "</details>"
    )


def misses_section(view: RunView, limit: int) -> tuple[str, list[str]]:
    """Retrieval misses grouped by tag, worst tag first; each miss once, under its worst tag.
    Returns the HTML and what was left out (past ``limit``)."""
    groups = _miss_groups(view)
    missed = sum(len(rows) for rows in groups.values())
    title = "<h2>Misses by cluster</h2>"
    if not missed:
        return f"{title}<p>No retrieval misses.</p>", []
    shown, out = 0, [title]
    out.append('<input type="search" id="miss-search" placeholder="filter misses by text">')
    for tag, rows in groups.items():
        out.append(f'<h3>{esc(tag)} <span class="hint">{len(rows)} missed</span></h3>')
        for row in rows:
            if shown >= limit:
                break
            out.append(_question(row, view.run.config))
            shown += 1
    left = [f"{missed - shown} of {missed} misses not shown"] if shown < missed else []
    return "".join(out), left


def _miss_groups(view: RunView) -> dict[str, list[QuestionRow]]:
    """The retrieval misses by their worst tag, worst tag first."""
    rank = {t.tag: i for i, t in enumerate(view.report.by_tag)}
    groups: dict[str, list[QuestionRow]] = {}
    for row in view.report.rows:
        if row.error is None and not row.hit:
            tag = min(row.tags, key=lambda t: rank.get(t, len(rank))) if row.tags else UNTAGGED
            groups.setdefault(tag, []).append(row)
    return {tag: groups[tag] for tag in sorted(groups, key=lambda t: rank.get(t, len(rank)))}


def spelled_out(view: RunView, limit: int) -> list[str]:
    """The questions :func:`misses_section` and :func:`failed_answers` spell out with their
    chunks at ``limit``: the only rankings a static report decodes (issue 29.1)."""
    misses = [row.id for rows in _miss_groups(view).values() for row in rows][:limit]
    return misses + [row.id for row in view.failed_answers[:limit]]


def failed_answers(view: RunView, limit: int) -> tuple[str, list[str]]:
    """The questions whose answer failed, with their blame, beside the retrieval misses
    (issue 25.1: a run failing only on the generation side listed none)."""
    failed = view.failed_answers
    if not failed:
        return "", []
    out = [f'<h2>Failed answers <span class="hint">{len(failed)}</span></h2>']
    out += [_question(row, view.run.config, "miss failed") for row in failed[:limit]]
    left = (
        [f"{len(failed) - limit} of {len(failed)} failed answers not shown"]
        if len(failed) > limit
        else []
    )
    return "".join(out), left


def view_html(view: RunView, limit: int = 20) -> str:
    """A run in a notebook: header, metrics and health, why missed (when explained),
    misses and failed answers."""
    from ragmeter.compare.diff_html import diff_section

    misses, left = misses_section(view, limit)
    failed, more = failed_answers(view, limit)
    diff = diff_section(view.diff, view.tag_intervals) if view.diff is not None else ""
    return (
        f'<div class="ragmeter-run">{run_header(view, left + more)}{metrics_table(view)}'
        f"{diff}{explain_section(view)}{misses}{failed}</div>"
    )
