"""``ragmeter show``: one run's metrics, misses by tag and health line."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    console,
    json_option,
    open_store,
    print_json,
    store_option,
)


@click.command("show")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option("--all", "show_all", is_flag=True, help="List every question, not only the misses.")
@store_option
@json_option
def show(run_ref: str, show_all: bool, store_url: str | None, as_json: bool) -> None:
    """Show a run: metrics, per-question rows and the misses by tag and document.

    RUN is a run id, a name, or 'latest'.
    """
    from ragmeter.compare.judged import corrected_line, corrected_metrics
    from ragmeter.compare.judges import unstable_verdicts
    from ragmeter.evaluation.explain import stored_explanation
    from ragmeter.evaluation.report import build_report

    with open_store(store_url, read_only=True) as store:
        report = build_report(store, run_ref)
        judged = corrected_metrics(store, report.run.id)  # issue 17.2: every judge metric
        unstable = {  # issue 17.4: verdicts whose repeats disagreed
            j: unstable_verdicts(store, report.run.id, j) for j in ("faithfulness", "relevance")
        }
        explanation = stored_explanation(store, report.run.id)  # issue 28: why missed
    from ragmeter.compare.health import diagnose, report_health_lines
    from ragmeter.config import load_config

    thresholds = load_config().health
    if as_json:
        health = {"health": diagnose(report.metrics, thresholds).to_dict()}
        extra: dict[str, Any] = {"judged_corrected": {m: j.to_dict() for m, j in judged.items()}}
        if "faithful" in judged:
            extra["faithful_corrected"] = judged["faithful"].to_dict()
        extra["judge_unstable"] = unstable
        extra["explanation"] = explanation.to_dict() if explanation is not None else None
        print_json(report.to_dict(rows=True) | health | extra)
    else:
        _render.print_show(report, show_all=show_all, explanation=explanation)
        for metric, mean in judged.items():
            console().print(corrected_line(metric, mean), markup=False)
        for judge, ids in unstable.items():
            if ids:
                listed = ", ".join(ids[:10]) + (" …" if len(ids) > 10 else "")
                line = f"{len(ids)} {judge} verdict(s) unstable across repeats: {listed}"
                console().print(line, markup=False)
        for line in report_health_lines(report, thresholds):
            console().print(line, markup=False)
