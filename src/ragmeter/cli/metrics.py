"""``ragmeter metrics``: trec_eval-style metrics for existing qrels and run files."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ragmeter.metrics import MetricsResult

DEFAULT_METRICS = ("ndcg@10", "recall@100", "mrr@10", "map")


@click.command()
@click.option(
    "--qrels",
    "qrels_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="TREC qrels (qid iter docid rel) or BEIR qrels TSV.",
)
@click.option(
    "--run",
    "run_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="TREC run (qid Q0 docid rank score tag) or JSONL run.",
)
@click.option(
    "-m",
    "--metric",
    "metric_names",
    multiple=True,
    metavar="METRIC",
    help="Metric to compute, repeatable: ndcg@10, recall@100, P(rel=2)@5, RR, AP, bpref, "
    "rbp(p=0.9), ...; trec_eval lists expand (P, ndcg_cut, P_5,10, official) "
    f"[default: {', '.join(DEFAULT_METRICS)}]",
)
@click.option(
    "-M",
    "--depth",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Evaluate only the top N documents of each ranking, as trec_eval -M N does "
    "[default: all of them].",
)
@click.option(
    "--subtopic-qrels",
    "subtopics",
    is_flag=True,
    help="--qrels holds subtopic qrels (qid subtopic docid grade, the TREC Web track "
    "diversity format) for alpha_ndcg@k [default metric then: alpha_ndcg@10].",
)
@click.option("--per-query", is_flag=True, help="Also print one value per question.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def metrics(
    qrels_path: str,
    run_path: str,
    metric_names: tuple[str, ...],
    depth: int | None,
    subtopics: bool,
    per_query: bool,
    as_json: bool,
) -> None:
    """Compute retrieval metrics for a qrels file and a run file, like trec_eval.

    Scored runs are ordered as trec_eval orders them (score descending, ties by doc id
    descending). Questions in the qrels without a ranking score 0 and stay in the
    means (trec_eval -c); their count is printed on stderr.

    Example: ragmeter metrics --qrels qrels.txt --run bm25.trec -m ndcg@10 -m recall@100
    """
    from ragmeter.evaluation.trec_metrics import is_trec_run, metrics_from_trec
    from ragmeter.formats.trec import read_qrels, read_run
    from ragmeter.metrics import compute_metrics
    from ragmeter.metrics.diversity import refuse_without_subtopics

    if subtopics:
        from ragmeter.formats.subtopics import read_subtopic_qrels
        from ragmeter.metrics import compute_diversity

        diverse = read_subtopic_qrels(qrels_path)
        names = metric_names or ("alpha_ndcg@10",)
        result = compute_diversity(diverse, read_run(run_path), names, depth=depth)
        _print(result, per_query, as_json)
        return
    names = metric_names or DEFAULT_METRICS
    refuse_without_subtopics(names)
    qrels = read_qrels(qrels_path)
    if is_trec_run(run_path):
        # Streamed (issue 9): never holds the run as Python objects, so an MS MARCO
        # run of 7 million lines takes ~200 MB and a fraction of the time.
        result = metrics_from_trec(qrels, run_path, names, depth=depth)
    else:
        result = compute_metrics(qrels, read_run(run_path), names, depth=depth)
    _print(result, per_query, as_json)


def _print(result: MetricsResult, per_query: bool, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result.to_dict(per_query=per_query), indent=2))
        return
    if per_query:
        for qid in sorted(next(iter(result.per_query.values()), {})):
            for name, values in result.per_query.items():
                click.echo(f"{name}\t{qid}\t{values[qid]:.4f}")
    for name, mean in result.means.items():
        click.echo(f"{name}\tall\t{mean:.4f}")
    if result.missing:
        total = len(next(iter(result.per_query.values()), {}))
        click.echo(
            f"{len(result.missing)} of {total} questions in the qrels have no "
            "ranking in the run; they score 0",
            err=True,
        )
