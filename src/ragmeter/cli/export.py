"""``ragmeter export``: a stored run as TREC, JSONL, CSV, parquet, RAGAS or DeepEval data."""

from __future__ import annotations

from pathlib import Path

import click

from ragmeter.cli._common import console, json_option, open_store, print_json, store_option
from ragmeter.evaluation.export import EXPORT_FORMATS


@click.command("export")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="jsonl",
    show_default=True,
    help="jsonl/csv/parquet: a row per question; trec: a run file; ragas/deepeval: their datasets.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="File to write [default: standard output; parquet needs a file].",
)
@click.option(
    "--qrels-out",
    type=click.Path(path_type=Path),
    default=None,
    help="With --format trec: also write the gold set as TREC qrels here.",
)
@click.option(
    "--to",
    "tracker",
    type=click.Choice(["mlflow"]),
    default=None,
    help="Log the run to an experiment tracker instead (MLflow: its configured tracking URI).",
)
@store_option
@json_option
def export(
    run_ref: str,
    fmt: str,
    out: Path | None,
    qrels_out: Path | None,
    tracker: str | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Export a stored run: one row per question with its metrics, ranking, answer and verdict.

    RUN is a run id, a name, or 'latest'. `--format trec --qrels-out q.tsv` writes files that
    `ragmeter metrics --qrels q.tsv --run r.trec` re-scores at document level.
    """
    from ragmeter.read import read_run

    with open_store(store_url) as store:
        view = read_run(store, run_ref)  # one read: rows, params, metrics and the report
    if tracker is not None:
        from ragmeter.read.tracking import log_view

        logged = log_view(view)  # its report's numbers and its static HTML report
        for warning in logged.warnings:
            click.echo(f"Warning: {warning}", err=True)
        if as_json:
            print_json(logged.to_dict())
        else:
            click.echo(f"logged to MLflow run {logged.run_id} at {logged.tracking_uri}")
        return
    result, text = view.export(fmt, out, qrels_out=qrels_out)
    if text is not None:
        click.echo(text, nl=False)
    if as_json and text is None:
        print_json(result.to_dict())  # its "warnings" say them, once (issue 24.6)
        return
    for warning in result.warnings:
        click.echo(f"Warning: {warning}", err=True)
    if text is None:
        console().print(f"wrote {result.rows} questions to {result.path}", markup=False)
