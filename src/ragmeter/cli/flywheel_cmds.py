"""Growing the gold set: ``generate``, ``review``, ``flywheel`` and ``ingest`` commands.

``ragmeter generate`` is a group that also runs on its own: with no subcommand it
generates questions (``ragmeter generate --corpus docs/ --out c.yaml`` is the same as
``ragmeter generate questions --corpus docs/ --out c.yaml``); ``ragmeter generate
variants GOLD`` makes adversarial variants.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from ragmeter.cli._common import console, store_option
from ragmeter.errors import ConfigError

_LLM_ENV = ("RAGMETER_JUDGE_BASE_URL", "RAGMETER_JUDGE_MODEL", "RAGMETER_JUDGE_API_KEY")


def _llm_options(func: Any) -> Any:
    func = store_option(func)  # LLM replies are cached in the store
    func = click.option("--api-key", envvar=_LLM_ENV[2], help=f"[env {_LLM_ENV[2]}]")(func)
    func = click.option("--model", envvar=_LLM_ENV[1], help=f"LLM model [env {_LLM_ENV[1]}].")(func)
    return click.option(
        "--base-url", envvar=_LLM_ENV[0], help=f"OpenAI-compatible URL [env {_LLM_ENV[0]}]."
    )(func)


def _complete(
    base_url: str | None, model: str | None, api_key: str | None, store_url: str | None = None
) -> Any:
    """The LLM call through the judge's client; no model is ever chosen silently.

    Replies are cached in the store, so a re-run with the same inputs costs nothing.
    """
    if not base_url or not model:
        raise ConfigError(
            "generation needs an LLM: give --base-url and --model "
            "(or RAGMETER_JUDGE_BASE_URL and RAGMETER_JUDGE_MODEL)"
        )
    from ragmeter._llmcall import from_client
    from ragmeter.judge.client import JudgeClient
    from ragmeter.store import DEFAULT_STORE_URL, Store

    key = api_key or os.environ.get("OPENAI_API_KEY")
    store: Any = Store.open(store_url or DEFAULT_STORE_URL)
    cache = store if hasattr(store, "judge_cache_get") else None
    return from_client(JudgeClient(model=model, base_url=base_url, api_key=key, cache=cache))


def _questions(
    corpus: Path, out: Path, per_doc: int, docs: str | None, sample: int | None, seed: int,
    embed: bool, llm: tuple[str | None, str | None, str | None, str | None],
) -> None:  # fmt: skip
    from ragmeter.corpus import load_corpus
    from ragmeter.review import save_items
    from ragmeter.synth import generate_questions

    embedder = None
    if embed:
        from ragmeter.pipelines.dense import get_embedder

        embedder = get_embedder()
    result = generate_questions(
        load_corpus(corpus), _complete(*llm), per_doc=per_doc, docs=docs, sample=sample,
        seed=seed, embedder=embedder,
    )  # fmt: skip
    save_items(out, result.items)
    for line in result.errors:
        click.echo(f"Warning: {line}", err=True)
    click.echo(
        f"{len(result.items)} candidates from {result.chunks} chunks written to {out} "
        f"({result.duplicates} near-duplicates dropped, {result.unusable} unusable, "
        f"{len(result.errors)} failed calls). Review them: ragmeter review {out}"
    )


def _generate_options(func: Any) -> Any:
    for decorator in reversed(
        [
            click.option("--corpus", type=click.Path(path_type=Path), help="Corpus to ask about."),
            click.option("--per-doc", default=3, show_default=True, help="Questions per document."),
            click.option("--docs", metavar="GLOB", help="Only documents whose id matches GLOB."),
            click.option("--sample", type=int, help="Sample this many documents (seeded)."),
            click.option("--seed", default=0, show_default=True, help="Sampling seed."),
            click.option(
                "--embed/--no-embed",
                default=False,
                help="Also drop near-duplicates by embedding similarity (needs ragmeter[dense]).",
            ),
            click.option(
                "--out", type=click.Path(path_type=Path), help="Candidates file to write."
            ),
            _llm_options,
        ]
    ):
        func = decorator(func)
    return func


@click.group(invoke_without_command=True)
@_generate_options
@click.pass_context
def generate(ctx: click.Context, /, **options: Any) -> None:
    """Write gold candidates with an LLM: questions (default) or adversarial variants.

    Without a subcommand this is ``generate questions``. Candidates have
    status "candidate"; review them with ``ragmeter review``.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(questions, **options)
    elif options.get("corpus") or options.get("out"):
        raise click.UsageError("put the options after the subcommand name")


@generate.command()
@_generate_options
def questions(
    corpus: Path | None, per_doc: int, docs: str | None, sample: int | None, seed: int,
    embed: bool, out: Path | None, base_url: str | None, model: str | None, api_key: str | None,
    store_url: str | None,
) -> None:  # fmt: skip
    """Questions a sampled chunk answers, with the source passage as relevance."""
    if corpus is None or out is None:
        raise click.UsageError("give --corpus PATH and --out FILE")
    llm = (base_url, model, api_key, store_url)
    _questions(corpus, out, per_doc, docs, sample, seed, embed, llm)


@generate.command()
@click.argument("gold_file", type=click.Path(path_type=Path))
@click.option("--kinds", default="typo", show_default=True, help="typo,colloquial,vocab,lang:xx")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="File to write.")
@click.option("--seed", default=0, show_default=True, help="Typo seed.")
@click.option("--corpus", type=click.Path(path_type=Path), help="For the vocab check w/o quotes.")
@_llm_options
def variants(
    gold_file: Path, kinds: str, out: Path, seed: int, corpus: Path | None,
    base_url: str | None, model: str | None, api_key: str | None, store_url: str | None,
) -> None:  # fmt: skip
    """Adversarial variants of GOLD_FILE's items, keeping each parent's relevance."""
    from ragmeter.goldset import load_gold
    from ragmeter.review import save_items
    from ragmeter.variants import generate_variants, parse_kinds

    kind_list = parse_kinds(kinds)
    complete = None
    if any(k != "typo" for k in kind_list):
        complete = _complete(base_url, model, api_key, store_url)
    documents = None
    if corpus is not None:
        from ragmeter.corpus import load_corpus

        documents = load_corpus(corpus).documents
    result = generate_variants(
        load_gold(gold_file), kind_list, complete=complete, seed=seed, documents=documents
    )
    save_items(out, result.items)
    for line in result.dropped:
        click.echo(f"Dropped: {line}", err=True)
    click.echo(f"{len(result.items)} variants written to {out} ({len(result.dropped)} dropped)")


@click.command()
@click.argument("candidates", type=click.Path(path_type=Path))
@click.option("--all", "include_skipped", is_flag=True, help="Show skipped items again too.")
@click.option("--reviewer", help="Name recorded with each decision.")
def review(candidates: Path, include_skipped: bool, reviewer: str | None) -> None:
    """Review CANDIDATES: [a]ccept, [e]dit, [r]eject, [s]kip, [q]uit.

    Each decision is written to the file as it is made, so stopping (q or
    Ctrl-C) loses nothing; run the command again to continue.
    """
    from ragmeter.cli._review_flow import run_review

    run_review(candidates, include_skipped=include_skipped, reviewer=reviewer)


@click.group()
def flywheel() -> None:
    """Turn failed production queries into gold candidates."""


@flywheel.command("export")
@click.option("--since", default=None, metavar="DURATION", help="e.g. 7d, 12h (default: all).")
@click.option("--negative-only", is_flag=True, help="Only thumbs-down queries.")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Candidates file.")
@store_option
def export(since: str | None, negative_only: bool, out: Path, store_url: str | None) -> None:
    """Write failed queries as candidates, most frequent first."""
    from ragmeter.cli._common import open_store
    from ragmeter.flywheel import export_candidates, parse_duration
    from ragmeter.review import save_items

    window = parse_duration(since) if since else None
    with open_store(store_url) as store:
        items = export_candidates(store, since=window, negative_only=negative_only)
    save_items(out, items)
    total = sum(int(item.metadata["count"]) for item in items)
    click.echo(f"{len(items)} candidates ({total} failed queries) written to {out}")


@flywheel.command("import")
@click.argument("file", type=click.Path(path_type=Path))
@store_option
def import_(file: Path, store_url: str | None) -> None:
    """Import logged queries and feedback from a JSONL FILE (all lines or none)."""
    from ragmeter.cli._common import open_store
    from ragmeter.querylog import import_jsonl

    with open_store(store_url) as store:
        queries, feedback = import_jsonl(file, store)
    click.echo(f"imported {queries} queries and {feedback} feedback rows")


@click.group()
def ingest() -> None:
    """The HTTP endpoint services use to log queries and feedback."""


@ingest.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8766, show_default=True, type=int)
@click.option("--token", envvar="RAGMETER_INGEST_TOKEN", help="Bearer token required on calls.")
@store_option
def serve(host: str, port: int, token: str | None, store_url: str | None) -> None:
    """Serve POST /api/log and /api/feedback (a token is required beyond loopback)."""
    from ragmeter.store import DEFAULT_STORE_URL
    from ragmeter.web.ingest import check_bind, create_ingest_app

    check_bind(host, token)
    import uvicorn

    console(stderr=True).print(f"ingest on http://{host}:{port}/api/log (Ctrl-C stops)")
    uvicorn.run(create_ingest_app(store_url or DEFAULT_STORE_URL, token), host=host, port=port)
