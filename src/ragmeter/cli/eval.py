"""``ragmeter eval``: evaluate a retriever over a gold set and store the run."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    cache_dir,
    executor_options,
    follow_symlinks_option,
    json_option,
    max_response_bytes_option,
    open_store,
    print_json,
    store_option,
)

if TYPE_CHECKING:
    from ragmeter.evaluation.scoring import Level

CHUNKERS = ("markdown", "paragraph", "fixed", "sentence", "none")


def _chunker_options(func: Any) -> Any:
    func = click.option(
        "--chunk-overlap", type=int, default=None, help="Overlap between chunks, in characters."
    )(func)
    func = click.option(
        "--chunk-size", type=int, default=None, help="Target chunk size, in characters."
    )(func)
    func = click.option(
        "--chunker",
        type=click.Choice(CHUNKERS),
        default="markdown",
        show_default=True,
        help="How built-in retrievers split documents; 'none' keeps them whole.",
    )(func)
    return func


def _retriever_options(func: Any) -> Any:
    """How an outside retriever is asked and how its hits name documents."""
    from ragmeter.retrievers.presets import PRESETS

    func = click.option(
        "--http-preset",
        type=click.Choice(sorted(PRESETS)),
        default=None,
        help="Request and answer shape of a known search service (with an http(s) retriever).",
    )(func)
    func = click.option(
        "--hits-path", default=None, metavar="PATH", help="Where the hits are in the JSON answer."
    )(func)
    func = click.option(
        "--http-body",
        default=None,
        metavar="TEMPLATE",
        help='Request template with {question} and {k}, e.g. \'{"query": "{question}", '
        '"top_k": {k}}\' (for GET: q={question}&size={k}).',
    )(func)
    func = click.option(
        "--http-method", type=click.Choice(["GET", "POST"]), default=None, help="[default: POST]"
    )(func)
    func = click.option(
        "--header",
        "headers",
        multiple=True,
        metavar="'NAME: VALUE'",
        help="HTTP header (repeatable); VALUE env:NAME reads it from the environment. "
        "Never stored or logged.",
    )(func)
    func = click.option(
        "--doc-root",
        "doc_roots",
        multiple=True,
        type=click.Path(),
        help="Folder the retriever's ids are relative to, dropped from absolute paths and "
        "from relative ids starting with it, e.g. docs (repeatable; --corpus counts as one).",
    )(func)
    func = click.option(
        "--doc-field",
        default=None,
        metavar="PATH",
        help="Where a hit's document id lives, e.g. metadata.source or meta.file_path "
        "[default: the framework's usual field].",
    )(func)
    return func


def _adapter_options(
    doc_field: str | None,
    doc_roots: tuple[str, ...],
    headers: tuple[str, ...] = (),
    **http: str | None,
) -> dict[str, Any]:
    from ragmeter.retrievers.http import parse_headers
    from ragmeter.retrievers.presets import resolve_header_values

    options: dict[str, Any] = {key: value for key, value in http.items() if value}
    if doc_field:
        options["doc_field"] = doc_field
    if doc_roots:
        options["doc_root"] = list(doc_roots)
    if headers:
        options["headers"] = resolve_header_values(parse_headers(headers), os.environ)
    return options


def _chunker(kind: str, size: int | None, overlap: int | None) -> Any:
    from ragmeter.pipelines.chunkers import ChunkerConfig

    return ChunkerConfig.from_dict(
        {
            "kind": kind,
            **({"size": size} if size else {}),
            **({"overlap": overlap} if overlap is not None else {}),
        }
    )


def _generator(spec: str | None, model: str | None, base_url: str | None) -> Any:
    """``--generator``: a spec, or ``llm`` with a client configured apart from the judge."""
    if spec is None:
        return None
    from ragmeter.evaluation.generation import resolve_generator

    llm = None
    if spec in ("llm", "openai"):
        from ragmeter.judge.config import resolve_generator_client

        llm = resolve_generator_client(env=os.environ, model=model, base_url=base_url)
    return resolve_generator(spec, llm_client=llm)


@click.command("eval")
@click.option(
    "--gold", "gold_path", type=click.Path(), help="Gold set: YAML, JSONL or a BEIR folder."
)
@click.option(
    "--corpus", type=click.Path(), help="Documents: a folder, a JSONL file or a BEIR folder."
)
@follow_symlinks_option
@click.option(
    "--retriever",
    default="bm25",
    show_default=True,
    help="bm25 | dense | hybrid | pipeline.yaml | module:function | http(s)://… | run:FILE",
)
@click.option(
    "-k", "k", type=int, default=10, show_default=True, help="Cutoff: how many hits to ask for."
)
@_retriever_options
@_chunker_options
@click.option(
    "--level",
    type=click.Choice(["doc", "passage", "chunk"]),
    default=None,
    help=(
        "Score documents, gold passages, or the corpus's chunks (chunk: recall moves with "
        "chunk size) [default: doc when the gold set names only documents, else passage]."
    ),
)
@click.option(
    "--min-overlap",
    type=click.FloatRange(0, 1, min_open=True),
    default=None,
    help="Share of the shorter of chunk and quote they must overlap for the chunk to cover "
    "the quote [default: 0.5].",
)
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
    help="Finish an interrupted run (its corpus read as the run read it, "
    "--follow-symlinks included).",
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
def eval_command(
    gold_path: str | None,
    corpus: str | None,
    follow_symlinks: bool,
    retriever: str,
    k: int,
    doc_field: str | None,
    doc_roots: tuple[str, ...],
    headers: tuple[str, ...],
    http_method: str | None,
    http_body: str | None,
    hits_path: str | None,
    http_preset: str | None,
    chunker: str,
    chunk_size: int | None,
    chunk_overlap: int | None,
    level: str | None,
    min_overlap: float | None,
    metrics: tuple[str, ...],
    name: str | None,
    note: str,
    split: str,
    concurrency: int,
    timeout: float | None,
    resume: str | None,
    generator: str | None,
    generator_model: str | None,
    generator_base_url: str | None,
    executor: str,
    ray_address: str | None,
    log_to: str | None,
    max_response_bytes: int | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Evaluate a retriever on a gold set and store the run.

    Example: ragmeter eval --gold gold.yaml --corpus docs/ --retriever bm25 -k 10 --note "baseline"
    """
    from ragmeter.cli.report import report_html
    from ragmeter.evaluation.jobs import evaluate_spec, resume_run
    from ragmeter.read import read_run

    gen = _generator(generator, generator_model, generator_base_url)
    where: dict[str, Any] = {"executor": executor, "ray_address": ray_address}
    with open_store(store_url) as store, _render.progress_bar(disabled=as_json) as progress:
        if resume is not None:
            report = resume_run(
                resume,
                store=store,
                cache_dir=cache_dir(),
                concurrency=concurrency,
                progress=progress,
                generator=gen,
                retriever=retriever,  # used only when the stored spec lost its secrets
                follow_symlinks=follow_symlinks or None,  # else: as the run was started
                **where,
            )
        else:
            if gold_path is None:
                raise click.UsageError("--gold is required (or --resume RUN)")
            report = evaluate_spec(
                gold_path,
                retriever,
                store=store,
                corpus=corpus,
                follow_symlinks=follow_symlinks,
                chunker=_chunker(chunker, chunk_size, chunk_overlap),
                cache_dir=cache_dir(),
                k=k,
                split=split,
                name=name,
                note=note,
                level=cast("Level | None", level),
                min_overlap=min_overlap,
                metrics=metrics,
                concurrency=concurrency,
                timeout=timeout,
                progress=progress,
                generator=gen,
                max_response_bytes=max_response_bytes,
                retriever_options=_adapter_options(
                    doc_field,
                    doc_roots,
                    headers,
                    http_method=http_method,
                    http_body=http_body,
                    hits_path=hits_path,
                    http_preset=http_preset,
                ),
                **where,
            )
        # The static HTML report goes to the tracker beside the CSV (issue 18.3).
        html = report_html(read_run(store, report.run.id)) if log_to is not None else None
    if as_json:
        print_json(report.to_dict())
    else:
        _render.print_eval(report)
    if log_to is not None:
        from ragmeter.evaluation.tracking import HTML_ARTIFACT, log_to_mlflow

        logged = log_to_mlflow(report, artifacts={HTML_ARTIFACT: html or ""})
        click.echo(f"logged to MLflow run {logged.run_id} at {logged.tracking_uri}", err=True)
