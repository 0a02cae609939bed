"""``ragmeter eval``, ``runs``, ``show``, ``retrieve`` and ``demo``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    cache_dir,
    console,
    executor_options,
    json_option,
    open_store,
    print_json,
    store_option,
)

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
    from ragmeter.generation import resolve_generator

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
@click.option(
    "--retriever",
    default="bm25",
    show_default=True,
    help="bm25 | dense | hybrid | pipeline.yaml | module:function | http(s)://… | run:FILE",
)
@click.option(
    "-k", "k", type=int, default=10, show_default=True, help="Cutoff: how many hits to ask for."
)
@_chunker_options
@click.option(
    "--level",
    type=click.Choice(["doc", "chunk"]),
    default=None,
    help="Score documents or chunks [default: doc when the gold set names only documents].",
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
@click.option("--resume", "resume", default=None, metavar="RUN", help="Finish an interrupted run.")
@click.option(
    "--generator",
    default=None,
    help="Answer each question from its chunks: module:function | http(s)://… | llm.",
)
@click.option("--generator-model", default=None, help="Model of --generator llm.")
@click.option(
    "--generator-base-url", default=None, help="OpenAI-compatible URL of --generator llm."
)
@executor_options
@store_option
@json_option
def eval_command(
    gold_path: str | None,
    corpus: str | None,
    retriever: str,
    k: int,
    chunker: str,
    chunk_size: int | None,
    chunk_overlap: int | None,
    level: str | None,
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
    store_url: str | None,
    as_json: bool,
) -> None:
    """Evaluate a retriever on a gold set and store the run.

    Example: ragmeter eval --gold gold.yaml --corpus docs/ --retriever bm25 -k 10 --note "baseline"
    """
    from ragmeter.jobs import evaluate_spec, resume_run

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
                chunker=_chunker(chunker, chunk_size, chunk_overlap),
                cache_dir=cache_dir(),
                k=k,
                split=split,
                name=name,
                note=note,
                level=level,  # type: ignore[arg-type]
                metrics=metrics,
                concurrency=concurrency,
                timeout=timeout,
                progress=progress,
                generator=gen,
                **where,
            )
    if as_json:
        print_json(report.to_dict())
    else:
        _render.print_eval(report)


@click.command("runs")
@click.option(
    "-m", "--metric", "metrics", multiple=True, help="Metric columns to show (repeatable)."
)
@store_option
@json_option
def runs(metrics: tuple[str, ...], store_url: str | None, as_json: bool) -> None:
    """List stored runs: a run per row, a metric per column, newest last."""
    with open_store(store_url) as store:
        all_runs = store.list_runs()
    if as_json:
        print_json([run.to_dict(metrics=True) for run in all_runs])
    else:
        _render.print_runs(all_runs, metrics)


@click.command("show")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option("--all", "show_all", is_flag=True, help="List every question, not only the misses.")
@store_option
@json_option
def show(run_ref: str, show_all: bool, store_url: str | None, as_json: bool) -> None:
    """Show a run: metrics, per-question rows and the misses by tag and document.

    RUN is a run id, a name, or 'latest'.
    """
    from ragmeter.report import build_report

    with open_store(store_url) as store:
        report = build_report(store, run_ref)
    from ragmeter.config import load_config
    from ragmeter.health import diagnose, report_health_lines

    thresholds = load_config().health
    if as_json:
        print_json(
            report.to_dict(rows=True) | {"health": diagnose(report.metrics, thresholds).to_dict()}
        )
    else:
        _render.print_show(report, show_all=show_all)
        for line in report_health_lines(report, thresholds):
            console().print(line, markup=False)


@click.command("retrieve")
@click.argument("question")
@click.option(
    "--retriever",
    default="bm25",
    show_default=True,
    help="bm25 | dense | hybrid | pipeline.yaml | module:function | http(s)://… | run:FILE",
)
@click.option("--corpus", type=click.Path(), help="Documents for built-in retrievers.")
@click.option("--gold", "gold_path", type=click.Path(), help="Gold set, to mark what is relevant.")
@click.option(
    "--item", "item_id", default=None, help="Gold item id (default: the item with this question)."
)
@click.option("-k", "k", type=int, default=10, show_default=True)
@_chunker_options
@json_option
def retrieve(
    question: str,
    retriever: str,
    corpus: str | None,
    gold_path: str | None,
    item_id: str | None,
    k: int,
    chunker: str,
    chunk_size: int | None,
    chunk_overlap: int | None,
    as_json: bool,
) -> None:
    """Run one question through the retriever alone and print what came back."""
    from ragmeter.inspect import inspect_question

    result = inspect_question(
        question,
        retriever,
        corpus=corpus,
        gold=gold_path,
        item_id=item_id,
        k=k,
        chunker=_chunker(chunker, chunk_size, chunk_overlap),
        cache_dir=cache_dir(),
    )
    if as_json:
        print_json(result.to_dict())
    else:
        _render.print_retrieve(result)


@click.command("demo")
@click.option(
    "--store",
    "store_url",
    default=None,
    metavar="URL",
    help="Run store [default: .ragmeter/demo.db].",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def demo(store_url: str | None, as_json: bool) -> None:
    """Evaluate BM25 on whole documents and on sections of the bundled uv docs (offline)."""
    from ragmeter.demo import run_demo

    url = store_url or f"sqlite:///{Path('.ragmeter') / 'demo.db'}"
    with open_store(url) as store, _render.progress_bar(disabled=as_json) as progress:
        result = run_demo(
            store,
            cache_dir=cache_dir(),
            progress=progress,
            say=None if as_json else console().print,
        )
    if as_json:
        print_json(result.to_dict())
    else:
        _render.print_demo(result)
