"""``ragmeter explain``: why each miss of a run was missed, with evidence, and each knob's ceiling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ragmeter.cli import _render
from ragmeter.cli._common import cache_dir, json_option, open_store, print_json, store_option
from ragmeter.cli._options import retriever_options as adapter_options
from ragmeter.evaluation.explain.model import CAUSES, UNEXPLAINED

if TYPE_CHECKING:
    from ragmeter.evaluation.job import RetrieverOptions


@click.command("explain")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option(
    "--depth",
    type=click.IntRange(min=2),
    default=50,
    show_default=True,
    help="Hits the run's retriever is asked for again, for the missed questions.",
)
@click.option(
    "--corpus",
    type=click.Path(exists=True),
    help="Documents the BM25/dense/rewrite probes search, for a run that searched "
    "no corpus ragmeter knows (your own retriever).",
)
@click.option(
    "--retriever",
    default=None,
    help="The run's retriever spec again, when it was stored with its secrets hidden.",
)
@click.option(
    "--dense/--no-dense",
    default=True,
    show_default=True,
    help="Also probe with the dense retriever when a model is installed.",
)
@click.option(
    "--verify",
    is_flag=True,
    help="Run each knob ragmeter can run (hybrid, RM3, a smaller chunker, a "
    "cross-encoder) and count the misses it recovers and the hits it loses.",
)
@click.option(
    "--cross-encoder",
    type=click.Path(exists=True, file_okay=False),
    help="A local cross-encoder model folder for --verify's re-ranking knob.",
)
@click.option(
    "--rewriter",
    "rewriter_file",
    type=click.Path(exists=True, dir_okay=False),
    help="A pipeline file whose rewrite section (method: llm) the vocabulary probe uses "
    "instead of RM3.",
)
@click.option(
    "--cause",
    "causes",
    multiple=True,
    type=click.Choice([*CAUSES, UNEXPLAINED]),
    help="List only the misses with this cause (repeatable).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Questions asked again at once.",
)
@adapter_options
@store_option
@json_option
def explain(
    run_ref: str, depth: int, corpus: str | None, retriever: str | None, dense: bool,
    verify: bool, cross_encoder: str | None, rewriter_file: str | None,
    causes: tuple[str, ...], concurrency: int, retriever_options: RetrieverOptions,
    store_url: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Explain every retrieval miss of a run: causes with evidence, and which knob recovers how many.

    RUN is a run id, a name, or 'latest'. The run's retriever is rebuilt from its record; give
    the adapter options it was evaluated with again (--header, --http-preset…: they are not
    stored). The explanation is stored with the run; `ragmeter show` prints it beside each miss.

    Example: ragmeter explain latest --verify
    """
    from ragmeter.evaluation.explain import ExplainOptions, explain_run, rewriter_from_file

    options = ExplainOptions(
        depth=depth, corpus=corpus, retriever=retriever, cache_dir=cache_dir(),
        concurrency=concurrency, dense=dense, verify=verify, cross_encoder=cross_encoder,
        retriever_options=retriever_options.adapter_options(),
        rewriter=rewriter_from_file(rewriter_file) if rewriter_file is not None else None,
    )  # fmt: skip
    with open_store(store_url) as store, _render.stage_progress(disabled=as_json) as progress:
        explanation = explain_run(store, run_ref, options, progress=progress)
    if as_json:
        data = explanation.to_dict()
        data["misses"] = [m.to_dict() for m in explanation.select(causes)]
        print_json(data)
    else:
        _render.print_explanation(explanation, causes)
