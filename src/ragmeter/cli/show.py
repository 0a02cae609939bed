"""``ragmeter show``: one run's metrics, misses by tag, failed answers and health line."""

from __future__ import annotations

import click

from ragmeter.cli import _render
from ragmeter.cli._common import json_option, open_store, print_json, store_option


@click.command("show")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option("--all", "show_all", is_flag=True, help="List every question, not only the misses.")
@store_option
@json_option
def show(run_ref: str, show_all: bool, store_url: str | None, as_json: bool) -> None:
    """Show a run: metrics, per-question rows and the misses by tag and document.

    RUN is a run id, a name, or 'latest'.
    """
    from ragmeter.config import load_health
    from ragmeter.read import read_run
    from ragmeter.read.view import no_cyclic_gc

    # The view is dropped before the collector is back on: it never walks its objects (29.1).
    with no_cyclic_gc(), open_store(store_url, read_only=True) as store:
        # The text decodes only the rankings it prints (issue 29.1); the JSON has them all.
        view = read_run(
            store,
            run_ref,
            thresholds=load_health(),
            rankings="all" if as_json else "shown",
        )
        if view.judged_failure is not None:  # people's labels no longer fit (issue 17.2)
            raise view.judged_failure
        if as_json:
            print_json(view.to_dict(texts=True))
        else:  # a row is built when printed, its hits read from the open store (29.1)
            _render.print_view(view, show_all=show_all)
        del view
