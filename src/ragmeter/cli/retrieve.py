"""``ragmeter retrieve``: one question through the retriever alone."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    cache_dir,
    json_option,
    max_response_bytes_option,
    print_json,
)
from ragmeter.cli._options import (
    chunker_options,
    corpus_options,
    min_overlap_option,
    retriever_option,
    retriever_options,
)


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
@min_overlap_option
@max_response_bytes_option
@json_option
def retrieve(question: str, item_id: str | None, as_json: bool, **params: Any) -> None:
    """Run one question through the retriever alone and print what came back."""
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.retrieve import inspect_question

    job = EvalJob.from_cli(params)
    result = inspect_question(question, job, item_id=item_id, cache_dir=cache_dir())
    if as_json:
        print_json(result.to_dict())
    else:
        _render.print_retrieve(result)
