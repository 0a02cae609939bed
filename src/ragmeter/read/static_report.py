"""``ragmeter report``: one self-contained static HTML file about a run (issue 15.4).

The file a person attaches to a pull request or sends to a colleague: no server, no
external assets and no requests (styles, the one small script and the SVG charts are
inline; a Content-Security-Policy forbids fetching anything). It holds the run's summary,
metrics and health, the hit@k curve, misses by tag with blame counts, the judge's metrics
corrected by people's labels, the misses grouped by cluster with their chunks' text and the
gold quotes marked, the failed answers with their blame, and — against a baseline — the
diff: metric deltas with intervals, per-tag deltas with intervals, newly missed and newly
found questions.

It renders a :class:`~ragmeter.read.view.RunView` (:func:`~ragmeter.read.view.read_run`) and
computes nothing, so it says what ``show`` and the dashboard say. Big runs stay bounded
(:data:`MAX_MISSES` questions spelled out per list, :data:`MAX_CHUNKS` chunks each,
:data:`MAX_CHUNK_CHARS` characters a chunk, :data:`MAX_FLIPS` flips a list), and the file
says what it left out.

>>> from ragmeter.store import Store
>>> with Store.open(".ragmeter/ragmeter.db") as store:  # doctest: +SKIP
...     write_static_report(store, "latest", "report.html", against="baseline").n_bytes
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.compare._html import esc, line_chart, page
from ragmeter.compare.diff_html import MAX_FLIPS, diff_section
from ragmeter.formats.output import write_output
from ragmeter.read.fragments import (
    MAX_CHUNK_CHARS,
    MAX_CHUNKS,
    explain_section,
    failed_answers,
    judge_section,
    metrics_section,
    misses_section,
    run_header,
    spelled_out,
    tags_section,
)
from ragmeter.read.pages import with_rankings
from ragmeter.read.questions import hit_curve
from ragmeter.read.view import RunView, read_run

if TYPE_CHECKING:
    from ragmeter.compare.health import HealthThresholds
    from ragmeter.store import Store

__all__ = [
    "MAX_CHUNKS",
    "MAX_CHUNK_CHARS",
    "MAX_FLIPS",
    "MAX_MISSES",
    "StaticReport",
    "render_static_report",
    "report_view",
    "static_report",
    "write_static_report",
]

#: Missed questions (and failed answers) spelled out with their chunks; the rest are counted.
MAX_MISSES = 200


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


def render_static_report(view: RunView, *, max_misses: int = MAX_MISSES) -> StaticReport:
    """The static HTML report of a read run (with its diff when it was read ``against`` one).

    At most ``max_misses`` missed questions and as many failed answers are spelled out; the
    file says how many it left.
    """
    from importlib.metadata import PackageNotFoundError, version

    run, diff = view.run, view.diff
    left: list[str] = []
    misses, cut = misses_section(view, max_misses)
    failed, cut_failed = failed_answers(view, max_misses)
    left += cut + cut_failed
    diff_html = diff_section(diff, view.tag_intervals, left) if diff is not None else ""
    curve = line_chart(
        hit_curve([row.first_relevant_rank for row in view.rows], run.k),
        [str(i) for i in range(1, run.k + 1)],
        f"hit@k, k = 1..{run.k}",
    )
    body = "".join(
        [
            run_header(view, left),
            metrics_section(view),
            explain_section(view),
            f'<div class="charts">{curve}</div>',
            tags_section(view),
            judge_section(view),
            diff_html,
            misses,
            failed,
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
    title = f"ragmeter · run {run.id} {run.name}"
    if diff is not None:
        title += f" vs run {diff.a.id}"
    return StaticReport(
        html=page(title, body + footer, made_by),
        run_id=run.id,
        against_id=diff.a.id if diff is not None else None,
        left_out=tuple(left),
    )


def static_report(
    store: Store,
    run_ref: int | str,
    *,
    against: int | str | None = None,
    max_misses: int = MAX_MISSES,
) -> StaticReport:
    """The static HTML report of ``run_ref``, with the diff against ``against`` if given.

    The judge metrics are those :func:`~ragmeter.read.view.read_run` reads: corrected by
    people's labels (the dashboard's ``run-<id>`` set, claim labels, chunk grades) when
    there are some, "uncalibrated" otherwise.
    """
    view = report_view(store, run_ref, against=against, max_misses=max_misses)
    return render_static_report(view, max_misses=max_misses)


def report_view(
    store: Store,
    run_ref: int | str,
    *,
    against: int | str | None = None,
    thresholds: HealthThresholds | None = None,
    max_misses: int = MAX_MISSES,
) -> RunView:
    """The run read for its static report: briefly (totals, tags and charts from the
    stored summaries), with the rankings of only the questions the report spells out
    (issue 29.1)."""
    view = read_run(store, run_ref, against=against, thresholds=thresholds, rankings="shown")
    return with_rankings(store, view, spelled_out(view, max_misses))


def write_static_report(
    store: Store,
    run_ref: int | str,
    path: str | Path,
    *,
    against: int | str | None = None,
    max_misses: int = MAX_MISSES,
) -> StaticReport:
    """Write :func:`static_report` to ``path`` (UTF-8) and return it with ``path`` set."""
    rendered = static_report(store, run_ref, against=against, max_misses=max_misses)
    return write_rendered(rendered, path)


def write_rendered(rendered: StaticReport, path: str | Path) -> StaticReport:
    """Write a rendered report to ``path`` (UTF-8); returns it with ``path`` set."""
    target = Path(path)
    write_output(target, rendered.html, kind="report")  # exit 2 naming the path (issue 27.16)
    return StaticReport(
        rendered.html, rendered.run_id, rendered.against_id, rendered.left_out, str(target)
    )
