"""``ragmeter retrieve``: one question through the retriever alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    cache_dir,
    corpus_source,
    json_option,
    max_response_bytes_option,
    print_json,
)
from ragmeter.cli._options import (
    chunker_options,
    corpus_options,
    retriever_option,
    retriever_options,
)

if TYPE_CHECKING:
    from ragmeter.evaluation.job import RetrieverOptions


@click.command("retrieve")
@click.argument("question")
@retriever_option
@corpus_options("Documents for built-in retrievers.")
@click.option("--gold", "gold_path", type=click.Path(), help="Gold set, to mark what is relevant.")
@click.option(
    "--item", "item_id", default=None, help="Gold item id (default: the item with this question)."
)
@click.option("-k", "k", type=int, default=10, show_default=True)
@retriever_options
@chunker_options
@max_response_bytes_option
@json_option
def retrieve(
    question: str,
    retriever: str,
    corpus: str | None,
    follow_symlinks: bool,
    gold_path: str | None,
    item_id: str | None,
    k: int,
    retriever_options: RetrieverOptions,
    chunker: str,
    chunk_size: int | None,
    chunk_overlap: int | None,
    max_response_bytes: int | None,
    as_json: bool,
) -> None:
    """Run one question through the retriever alone and print what came back."""
    from ragmeter.evaluation.job import chunker_config
    from ragmeter.evaluation.retrieve import inspect_question

    result = inspect_question(
        question,
        retriever,
        corpus=corpus_source(corpus, follow_symlinks),
        gold=gold_path,
        item_id=item_id,
        k=k,
        chunker=chunker_config(chunker, chunk_size, chunk_overlap),
        cache_dir=cache_dir(),
        max_response_bytes=max_response_bytes,
        retriever_options=retriever_options.adapter_options(),
    )
    if as_json:
        print_json(result.to_dict())
    else:
        _render.print_retrieve(result)
