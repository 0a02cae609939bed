"""``ragmeter generate``: synthetic questions and adversarial variants for review.

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

from ragmeter.cli._common import follow_symlinks_option, store_option
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
    from ragmeter.judge.client import JudgeClient
    from ragmeter.judge.prompting import from_client
    from ragmeter.store import DEFAULT_STORE_URL, Store

    key = api_key or os.environ.get("OPENAI_API_KEY")
    store: Any = Store.open(store_url or DEFAULT_STORE_URL)
    cache = store if hasattr(store, "judge_cache_get") else None
    return from_client(JudgeClient(model=model, base_url=base_url, api_key=key, cache=cache))


def _questions(
    corpus: Path, follow_symlinks: bool, out: Path, per_doc: int, docs: str | None,
    sample: int | None, seed: int, embed: bool,
    llm: tuple[str | None, str | None, str | None, str | None],
) -> None:  # fmt: skip
    from ragmeter.corpus import load_corpus
    from ragmeter.feedback.generate import generate_questions
    from ragmeter.formats.output import output_errors
    from ragmeter.gold.review import save_items

    embedder = None
    if embed:
        from ragmeter.pipelines.dense import get_embedder

        embedder = get_embedder()
    result = generate_questions(
        load_corpus(corpus, follow_symlinks=follow_symlinks), _complete(*llm), per_doc=per_doc,
        docs=docs, sample=sample, seed=seed, embedder=embedder,
    )  # fmt: skip
    with output_errors(out, kind="candidates"):
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
            follow_symlinks_option,
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
    corpus: Path | None, follow_symlinks: bool, per_doc: int, docs: str | None,
    sample: int | None, seed: int, embed: bool, out: Path | None, base_url: str | None,
    model: str | None, api_key: str | None,
    store_url: str | None,
) -> None:  # fmt: skip
    """Questions a sampled chunk answers, with the source passage as relevance."""
    if corpus is None or out is None:
        raise click.UsageError("give --corpus PATH and --out FILE")
    llm = (base_url, model, api_key, store_url)
    _questions(corpus, follow_symlinks, out, per_doc, docs, sample, seed, embed, llm)


@generate.command()
@click.argument("gold_file", type=click.Path(path_type=Path))
@click.option("--kinds", default="typo", show_default=True, help="typo,colloquial,vocab,lang:xx")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="File to write.")
@click.option("--seed", default=0, show_default=True, help="Typo seed.")
@click.option("--corpus", type=click.Path(path_type=Path), help="For the vocab check w/o quotes.")
@follow_symlinks_option
@_llm_options
def variants(
    gold_file: Path, kinds: str, out: Path, seed: int, corpus: Path | None, follow_symlinks: bool,
    base_url: str | None, model: str | None, api_key: str | None, store_url: str | None,
) -> None:  # fmt: skip
    """Adversarial variants of GOLD_FILE's items, keeping each parent's relevance."""
    from ragmeter.feedback.variants import generate_variants, parse_kinds
    from ragmeter.formats.output import output_errors
    from ragmeter.gold.files import load_gold
    from ragmeter.gold.review import save_items

    kind_list = parse_kinds(kinds)
    complete = None
    if any(k != "typo" for k in kind_list):
        complete = _complete(base_url, model, api_key, store_url)
    documents = None
    if corpus is not None:
        from ragmeter.corpus import load_corpus

        documents = load_corpus(corpus, follow_symlinks=follow_symlinks).documents
    result = generate_variants(
        load_gold(gold_file), kind_list, complete=complete, seed=seed, documents=documents
    )
    with output_errors(out, kind="candidates"):
        save_items(out, result.items)
    for line in result.dropped:
        click.echo(f"Dropped: {line}", err=True)
    click.echo(f"{len(result.items)} variants written to {out} ({len(result.dropped)} dropped)")
