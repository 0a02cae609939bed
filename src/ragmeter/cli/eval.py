"""``ragmeter eval``: evaluate a retriever over a gold set and store the run."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    cache_dir,
    executor_options,
    json_option,
    max_response_bytes_option,
    open_store,
    print_json,
    store_option,
)
from ragmeter.cli._options import (
    chunker_options,
    corpus_options,
    min_overlap_option,
    retriever_option,
    retriever_options,
)


@click.command("eval")
@click.option(
    "--gold", "gold_path", type=click.Path(), help="Gold set: YAML, JSONL or a BEIR folder."
)
@corpus_options("Documents: a folder, a JSONL file or a BEIR folder.")
@retriever_option
@click.option(
    "-k", "k", type=int, default=10, show_default=True, help="Cutoff: how many hits to ask for."
)
@retriever_options
@chunker_options
@click.option(
    "--level",
    type=click.Choice(["doc", "passage", "chunk"]),
    default=None,
    help=(
        "Score documents, gold passages, or the corpus's chunks (chunk: recall moves with "
        "chunk size) [default: doc when the gold set names only documents, else passage]."
    ),
)
@min_overlap_option
@click.option(
    "-m", "--metric", "metrics", multiple=True, help="Extra metric (repeatable), e.g. -m ndcg@20."
)
@click.option("--name", default=None, help="Run name [default: run-ID].")
@click.option("--note", default="", help="Change note: what is different in this run.")
@click.option(
    "--split", default="test", show_default=True, help="Qrels split of a BEIR gold folder."
)
@click.option(
    "--concurrency", type=int, default=8, show_default=True, help="Questions in flight at once."
)
@click.option(
    "--timeout", type=float, default=None, help="Seconds before one retrieval counts as failed."
)
@click.option(
    "--resume",
    "resume",
    default=None,
    metavar="RUN",
    help="Finish an interrupted run with its own settings and inputs (its corpus read as the "
    "run read it, --follow-symlinks included); an option given with another value is exit 2.",
)
@click.option(
    "--generator",
    default=None,
    help="Answer each question from its chunks: module:function | http(s)://… | llm.",
)
@click.option("--generator-model", default=None, help="Model of --generator llm.")
@click.option(
    "--generator-base-url", default=None, help="OpenAI-compatible URL of --generator llm."
)
@click.option(
    "--log-to",
    type=click.Choice(["mlflow"]),
    default=None,
    help="Also log the run to an experiment tracker (MLflow: its configured tracking URI).",
)
@max_response_bytes_option
@executor_options
@store_option
@json_option
def eval_command(log_to: str | None, as_json: bool, **params: Any) -> None:
    """Evaluate a retriever on a gold set and store the run.

    Example: ragmeter eval --gold gold.yaml --corpus docs/ --retriever bm25 -k 10 --note "baseline"
    """
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.jobs import run_job

    job = EvalJob.from_cli(params)
    gen = job.build_generator()
    with open_store(job.store) as store, _render.progress_bar(disabled=as_json) as progress:
        if job.resume is None and job.gold is None:
            raise click.UsageError("--gold is required (or --resume RUN)")
        report = run_job(job, store=store, cache_dir=cache_dir(), progress=progress,
                         generator=gen, told=_told())  # fmt: skip
        # The tracker gets the run as read back, with its static HTML report (issue 18.3).
        view = _read_back(store, report.run.id) if log_to is not None else None
    if as_json:
        print_json(report.to_dict())
    else:
        _render.print_eval(report)
    if view is not None:
        from ragmeter.read.tracking import log_view

        logged = log_view(view)
        click.echo(f"logged to MLflow run {logged.run_id} at {logged.tracking_uri}", err=True)


def _told() -> list[str]:
    """The job fields given on the command line or in ragmeter.toml, not left to a default:
    a resume refuses a setting or input it would ignore (issue 24)."""
    from click.core import ParameterSource

    from ragmeter.evaluation.job import RESUME_OPTIONS

    ctx = click.get_current_context()
    return sorted(
        {
            field
            for name, field in RESUME_OPTIONS.items()
            if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)
        }
    )


def _read_back(store: Any, run_id: int) -> Any:
    """The run as read back for the tracker; the read side is imported only then (issue 29.3)."""
    from ragmeter.read import read_run

    return read_run(store, run_id)
