"""``ragmeter sweep GRID.yaml``: every combination of a grid as stored runs, and the winners."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli._common import (
    cache_dir,
    console,
    executor_options,
    json_option,
    open_store,
    print_json,
    store_option,
)
from ragmeter.cli._options import corpus_options, min_overlap_option


@click.command("sweep")
@click.argument("grid_path", metavar="GRID.yaml", type=click.Path())
@click.option(
    "--gold", "gold_path", required=True, type=click.Path(), help="Gold set file or BEIR folder."
)
@corpus_options("Documents: folder, JSONL or BEIR folder.", required=True)
@click.option("-k", "k", type=int, default=10, show_default=True, help="Cutoff: hits per question.")
@click.option("--metric", default="ndcg@10", show_default=True, help="Metric that sorts the table.")
@click.option("--name", "name_prefix", default="sweep", show_default=True, help="Run name prefix.")
@min_overlap_option
@executor_options
@store_option
@json_option
def sweep(
    grid_path: str, metric: str, name_prefix: str, store_url: str | None, as_json: bool,
    **params: Any,
) -> None:  # fmt: skip
    """Run every combination of GRID.yaml as a stored run; print them sorted by --metric
    and, per tag, which config wins and by how much."""
    from rich.table import Table

    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.sweep import SWEEP_CONCURRENCY, load_grid, run_sweep

    base, grid = load_grid(grid_path)
    with open_store(store_url) as store:
        result = run_sweep(
            EvalJob.from_cli({**params, "concurrency": SWEEP_CONCURRENCY}),
            base,
            grid,
            store=store,
            metric=metric,
            cache_dir=cache_dir(),
            name_prefix=name_prefix,
        )
    if as_json:
        print_json(result.to_dict())
        return
    out = console()
    table = Table(title=f"sweep sorted by {result.metric}")
    for col in ("run", "name", "change", result.metric, "hit@5", "mrr"):
        table.add_column(col)
    for row in result.rows:
        cells = [row.metrics.get(m) for m in (result.metric, "hit@5", "mrr")]
        table.add_row(
            str(row.run_id),
            row.name,
            row.note,
            *(f"{v:.3f}" if v is not None else "–" for v in cells),
        )
    out.print(table)
    tags = Table(title=f"which config wins each tag ({result.metric})")
    for col in ("tag", "n", "winner", result.metric, "by", "runner-up"):
        tags.add_column(col)
    for t in result.by_tag:
        tags.add_row(
            t.tag,
            str(t.n_questions),
            t.winner,
            f"{t.value:.3f}",
            f"+{t.margin:.3f}",
            t.runner_up or "–",
        )
    out.print(tags)
