"""``ragmeter show``."""

from __future__ import annotations

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    console,
    json_option,
    open_store,
    print_json,
    store_option,
)

CHUNKERS = ("markdown", "paragraph", "fixed", "sentence", "none")


@click.command("show")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option("--all", "show_all", is_flag=True, help="List every question, not only the misses.")
@store_option
@json_option
def show(run_ref: str, show_all: bool, store_url: str | None, as_json: bool) -> None:
    """Show a run: metrics, per-question rows and the misses by tag and document.

    RUN is a run id, a name, or 'latest'.
    """
    from ragmeter.evaluation.report import build_report

    with open_store(store_url, read_only=True) as store:
        report = build_report(store, run_ref)
    from ragmeter.compare.health import diagnose, report_health_lines
    from ragmeter.config import load_config

    thresholds = load_config().health
    if as_json:
        print_json(
            report.to_dict(rows=True) | {"health": diagnose(report.metrics, thresholds).to_dict()}
        )
    else:
        _render.print_show(report, show_all=show_all)
        for line in report_health_lines(report, thresholds):
            console().print(line, markup=False)
