"""``ragmeter retrieve``: one question through the retriever alone."""

from __future__ import annotations

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    cache_dir,
    corpus_source,
    follow_symlinks_option,
    json_option,
    max_response_bytes_option,
    print_json,
)
from ragmeter.cli.eval import _adapter_options, _chunker, _chunker_options, _retriever_options


@click.command("retrieve")
@click.argument("question")
@click.option(
    "--retriever",
    default="bm25",
    show_default=True,
    help="bm25 | dense | hybrid | pipeline.yaml | module:function | http(s)://… | run:FILE",
)
@click.option("--corpus", type=click.Path(), help="Documents for built-in retrievers.")
@follow_symlinks_option
@click.option("--gold", "gold_path", type=click.Path(), help="Gold set, to mark what is relevant.")
@click.option(
    "--item", "item_id", default=None, help="Gold item id (default: the item with this question)."
)
@click.option("-k", "k", type=int, default=10, show_default=True)
@_retriever_options
@_chunker_options
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
    max_response_bytes: int | None,
    as_json: bool,
) -> None:
    """Run one question through the retriever alone and print what came back."""
    from ragmeter.evaluation.retrieve import inspect_question

    result = inspect_question(
        question,
        retriever,
        corpus=corpus_source(corpus, follow_symlinks),
        gold=gold_path,
        item_id=item_id,
        k=k,
        chunker=_chunker(chunker, chunk_size, chunk_overlap),
        cache_dir=cache_dir(),
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
    )
    if as_json:
        print_json(result.to_dict())
    else:
        _render.print_retrieve(result)
