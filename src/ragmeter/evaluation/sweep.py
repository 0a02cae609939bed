"""Sweeps: run every combination of a grid of pipeline settings as stored runs.

A grid file is YAML::

    base:                      # optional: a pipeline (the sections of a pipeline file)
      chunker: {kind: markdown}
    grid:                      # dotted paths into the pipeline -> the values to try
      chunker.size: [300, 600, 1000]
      retriever: [bm25, hybrid]

Every combination is validated before anything runs (a bad value stops the sweep with
nothing written to the store). Configs that share a chunking share its chunks, BM25
index and embeddings (:class:`PipelineResources`). Each run's change note is its diff
from ``base`` (``chunker.size=300 retriever=hybrid``), and the stored config is the full
resolved pipeline plus its stage latencies. The result says which config wins overall
and, per gold-set tag, which config wins that cluster and by how much.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.evaluation.job import EvalJob
from ragmeter.pipelines._config import check_keys
from ragmeter.pipelines.pipeline import SECTIONS, Pipeline, PipelineConfig, PipelineResources

SWEEP_CONCURRENCY = 4  # questions in flight per run of ``ragmeter sweep``

__all__ = [
    "SWEEP_CONCURRENCY",
    "SweepResult",
    "SweepRow",
    "TagWinner",
    "expand_grid",
    "load_grid",
    "run_sweep",
]

GRID_KEYS = ("base", "grid")


@dataclass(frozen=True)
class SweepRow:
    """One combination: its run, its diff from base and its metrics."""

    run_id: int
    name: str
    note: str
    overrides: dict[str, Any]
    metrics: dict[str, float]


@dataclass(frozen=True)
class TagWinner:
    """The best config for the questions of one tag, and its margin over the runner-up."""

    tag: str
    n_questions: int
    winner: str
    value: float
    runner_up: str | None
    margin: float


@dataclass
class SweepResult:
    """Rows sorted best first by ``metric``, plus the per-tag winners."""

    metric: str
    rows: list[SweepRow]
    by_tag: list[TagWinner] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "runs": [row.__dict__ for row in self.rows],
            "by_tag": [t.__dict__ for t in self.by_tag],
        }


def load_grid(path: str | Path) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Read a grid file: ``(base, grid)``; errors name the file and key.

    >>> load_grid("grid.yaml")  # doctest: +SKIP
    ({}, {'chunker.size': [300, 600, 1000], 'retriever': ['bm25', 'hybrid']})
    """
    from ragmeter.formats.strict_yaml import load_yaml

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"grid file {p}: cannot read ({exc.strerror})") from None
    # The strict loader: no alias expansion, duplicate keys named (issue 19.3).
    data, _ = load_yaml(text, p, "grid file", ConfigError)
    if not isinstance(data, Mapping):
        raise ConfigError(f"grid file {p}: expected a mapping with keys base, grid")
    check_keys(data, GRID_KEYS, f"grid file {p}")
    base = data.get("base") or {}
    grid = data.get("grid")
    if not isinstance(base, Mapping):
        raise ConfigError(f"grid file {p}: base must be a pipeline (mapping of sections)")
    if not isinstance(grid, Mapping) or not grid:
        raise ConfigError(f"grid file {p}: grid must map dotted keys to lists of values")
    out: dict[str, list[Any]] = {}
    for key, values in grid.items():
        if str(key).split(".")[0] not in SECTIONS:
            raise ConfigError(
                f"grid file {p}: grid key {key!r} must start with one of {', '.join(SECTIONS)}"
            )
        if not isinstance(values, list) or not values:
            raise ConfigError(f"grid file {p}: grid.{key} must be a non-empty list")
        out[str(key)] = values
    return dict(base), out


def expand_grid(
    base: Mapping[str, Any], grid: Mapping[str, Sequence[Any]]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every combination as ``(overrides, pipeline dict)``, in grid order.

    >>> [o for o, _ in expand_grid({}, {"retriever": ["bm25", "hybrid"], "chunker.size": [300]})]
    [{'retriever': 'bm25', 'chunker.size': 300}, {'retriever': 'hybrid', 'chunker.size': 300}]
    """
    keys = list(grid)
    out = []
    for values in itertools.product(*(grid[k] for k in keys)):
        overrides = dict(zip(keys, values, strict=True))
        data = copy.deepcopy(dict(base))
        for key, value in overrides.items():
            *path, last = key.split(".")
            node = data
            for part in path:
                if not isinstance(node.get(part), dict):
                    node[part] = {}
                node = node[part]
            node[last] = value
        out.append((overrides, data))
    return out


def _note(overrides: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in overrides.items())


def run_sweep(
    job: EvalJob,
    base: Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    *,
    store: Any,
    metric: str = "ndcg@10",
    cache_dir: Path | None = None,
    name_prefix: str = "sweep",
) -> SweepResult:
    """Evaluate every combination of ``grid`` over ``base`` as a stored run.

    ``job`` gives the gold set, the corpus (and ``follow_symlinks``), ``k``, the coverage
    rule's share (``min_overlap``, stored on every run), ``concurrency`` and the executor;
    the grid gives the retriever of each run.

    >>> job = EvalJob(gold="gold.yaml", corpus="docs/", concurrency=4)
    >>> result = run_sweep(job, {}, {"retriever": ["bm25", "hybrid"]},
    ...                    store=Store.memory())                   # doctest: +SKIP
    >>> result.rows[0].note                                        # doctest: +SKIP
    'retriever=hybrid'
    """
    from ragmeter.evaluation.evaluate import evaluate_setup
    from ragmeter.evaluation.setup import RetrieverSetup, RunSettings
    from ragmeter.gold.files import load_gold
    from ragmeter.metrics import parse_metric

    metric = str(parse_metric(metric))
    loaded = job.load_corpus()
    if job.gold is None or loaded is None:
        raise ConfigError("a sweep needs a gold set and a corpus")
    gold_set = load_gold(job.gold, split=job.split)
    combos = expand_grid(base, grid)
    configs = []
    for n, (overrides, data) in enumerate(combos, start=1):
        try:
            configs.append((overrides, PipelineConfig.from_dict(data, source="sweep")))
        except ConfigError as exc:
            raise ConfigError(f"{exc} (combination {n}: {_note(overrides)})") from None
    resources = PipelineResources(loaded, cache_dir)
    # Build every pipeline first: a missing model fails before any run is written.
    pipelines = [Pipeline(cfg, loaded, resources=resources) for _, cfg in configs]
    rows: list[SweepRow] = []
    per_query: dict[str, Mapping[str, dict[str, float]]] = {}
    for n, ((overrides, cfg), pipeline) in enumerate(zip(configs, pipelines, strict=True), 1):
        name = f"{name_prefix}-{n}"
        config: dict[str, Any] = {"pipeline": dict(pipeline.config)}
        config["chunker"] = cfg.chunker.to_dict()
        config.update(
            {"corpus": loaded.path, "corpus_hash": loaded.content_hash, "sweep": overrides}
        )
        setup = RetrieverSetup(
            pipeline,
            spec=f"pipeline:{_note(overrides)}",
            config=config,
            chunks=pipeline.chunks,
            documents=loaded.documents,
        )
        settings = RunSettings(
            k=job.k,
            name=name,
            note=_note(overrides),
            metrics=_metrics(metric, job.k, gold_set),
            min_overlap=job.min_overlap,
            concurrency=job.concurrency,
            executor=job.executor,
        )
        report = evaluate_setup(gold_set, setup, settings, store=store)
        config["stage_latency"] = pipeline.stage_latency_of(report.results.values())
        store.update_run(report.run.id, config={**dict(report.run.config), **config})
        rows.append(
            SweepRow(report.run.id, name, _note(overrides), overrides, dict(report.metrics))
        )
        per_query[name] = report.per_query
    rows.sort(key=lambda r: -r.metrics.get(metric, float("-inf")))
    return SweepResult(metric, rows, _tag_winners(gold_set, per_query, metric, rows))


def _metrics(metric: str, k: int, gold: Any) -> list[str]:
    from ragmeter.evaluation.scoring import default_metrics

    names = default_metrics(k, has_answers=any(item.answer_contains for item in gold))
    return list(dict.fromkeys([*names, metric]))


def _tag_winners(
    gold: Any,
    per_query: Mapping[str, Mapping[str, Mapping[str, float]]],
    metric: str,
    rows: Sequence[SweepRow],
) -> list[TagWinner]:
    tags: dict[str, list[str]] = {}
    for item in gold:
        for tag in item.tags:
            tags.setdefault(tag, []).append(item.id)
    notes = {r.name: r.note for r in rows}
    out: list[TagWinner] = []
    for tag, ids in sorted(tags.items()):
        scores = []
        for name, table in per_query.items():
            values = [float(table.get(metric, {}).get(i, 0.0)) for i in ids]
            scores.append((sum(values) / len(values), name))
        scores.sort(key=lambda s: -s[0])
        best, runner = scores[0], scores[1] if len(scores) > 1 else None
        out.append(
            TagWinner(
                tag=tag,
                n_questions=len(ids),
                winner=f"{best[1]} ({notes[best[1]]})",
                value=best[0],
                runner_up=f"{runner[1]} ({notes[runner[1]]})" if runner else None,
                margin=best[0] - runner[0] if runner else 0.0,
            )
        )
    return out
