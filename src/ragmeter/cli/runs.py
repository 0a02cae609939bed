"""``ragmeter runs``: a run per row, a metric per column."""

from __future__ import annotations

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    json_option,
    open_store,
    print_json,
    store_option,
)


@click.command("runs")
@click.option(
    "-m", "--metric", "metrics", multiple=True, help="Metric columns to show (repeatable)."
)
@store_option
@json_option
def runs(metrics: tuple[str, ...], store_url: str | None, as_json: bool) -> None:
    """List stored runs: a run per row, a metric per column, newest last."""
    with open_store(store_url, read_only=True) as store:
        all_runs = store.list_runs()
    if as_json:
        print_json([run.to_dict(metrics=True) for run in all_runs])
    else:
        _render.print_runs(all_runs, metrics)
