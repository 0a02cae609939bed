"""``ragmeter report``: a stored run as one self-contained static HTML file."""

from __future__ import annotations

from pathlib import Path

import click

from ragmeter.cli._common import console, json_option, open_store, print_json, store_option


@click.command("report")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option(
    "--against", "against", metavar="RUN", default=None, help="Baseline run to diff against."
)
@click.option(
    "--html",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="HTML file to write (one file: inline styles, script and charts; loads nothing).",
)
@store_option
@json_option
def report(
    run_ref: str, against: str | None, out: Path, store_url: str | None, as_json: bool
) -> None:
    """Write a static HTML report of a run to attach to a pull request or send to someone.

    It holds the run's metrics, misses by cluster with their chunks' text, blame and judge
    metrics, and with --against the diff: per-tag deltas with intervals, newly missed and
    newly found questions. RUN is a run id, a name, or 'latest'.
    """
    from ragmeter.config import load_config
    from ragmeter.read.static_report import render_static_report, report_view, write_rendered

    with open_store(store_url, read_only=True) as store:
        view = report_view(store, run_ref, against=against, thresholds=load_config().health)
    written = write_rendered(render_static_report(view), out)
    for note in written.left_out:
        click.echo(f"Warning: report cut: {note}", err=True)
    if as_json:
        print_json(written.to_dict())
    else:
        console().print(f"wrote {written.path} ({written.n_bytes:,} bytes)", markup=False)
