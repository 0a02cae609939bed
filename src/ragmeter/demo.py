"""``ragmeter demo``: the bundled uv docs, a hand-written gold set, two variants.

Evaluates BM25 over the example knowledge base at two chunk sizes as two
stored runs, then shows the runs table and the misses of the better one —
the whole loop in well under a minute, with no network and no keys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.evaluation.job import EvalJob
from ragmeter.evaluation.jobs import run_job
from ragmeter.evaluation.report import RunReport
from ragmeter.examples import example_corpus_dir, example_gold_path
from ragmeter.pipelines.chunkers import ChunkerConfig

__all__ = ["DEMO_VARIANTS", "DemoResult", "run_demo"]

DEMO_K = 5
DEMO_METRIC = "hit@5"
# (name, change note, chunker): the comparison users most want to make first.
DEMO_VARIANTS: tuple[tuple[str, str, ChunkerConfig], ...] = (
    ("bm25-whole-docs", "BM25 over whole documents", ChunkerConfig(kind="none")),
    (
        "bm25-sections",
        "BM25 over Markdown sections (800 chars, 100 overlap)",
        ChunkerConfig(kind="markdown", size=800, overlap=100),
    ),
)
COLUMNS = ("hit@1", "hit@5", "recall@5", "mrr", "ndcg@5", "answer_in_context@5", "latency_p95_ms")


@dataclass
class DemoResult:
    reports: list[RunReport]
    best: RunReport
    metric: str
    store_url: str
    columns: tuple[str, ...] = COLUMNS

    @property
    def runs(self) -> list[Any]:
        return [report.run for report in self.reports]

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": [report.to_dict() for report in self.reports],
            "best": self.best.run.id,
            "metric": self.metric,
            "store": self.store_url,
        }


def run_demo(
    store: Any,
    *,
    cache_dir: Path | None = None,
    progress: Callable[[int, int, Any], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> DemoResult:
    """Run the demo variants into ``store`` and pick the better run by hit@5."""
    reports = []
    for name, note, chunker in DEMO_VARIANTS:
        if say is not None:
            say(f"[bold]{name}[/]: {note}")
        reports.append(
            run_job(
                EvalJob(
                    gold=str(example_gold_path()),
                    corpus=str(example_corpus_dir()),
                    chunker=chunker,
                    k=DEMO_K,
                    name=name,
                    note=note,
                    level="doc",
                ),
                store=store,
                cache_dir=cache_dir,
                progress=progress,
            )
        )
    best = max(reports, key=lambda r: r.metrics.get(DEMO_METRIC, 0.0))
    return DemoResult(reports, best, DEMO_METRIC, str(store.url))
