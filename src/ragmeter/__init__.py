"""ragmeter: measure whether a RAG pipeline retrieves the right context.

``import ragmeter`` does nothing but define names: every submodule is imported
on first attribute access, so the metrics path costs only numpy.

>>> import ragmeter
>>> r = ragmeter.compute_metrics({"q1": {"d1": 1}}, {"q1": ["d2", "d1"]}, ["mrr"])
>>> r.means["mrr"]
0.5
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "Chunk": "ragmeter.documents",
    "ChunkerConfig": "ragmeter.pipelines.chunkers",
    "Comparison": "ragmeter.compare.comparison",
    "ConfigError": "ragmeter.errors",
    "Corpus": "ragmeter.corpus",
    "CorpusError": "ragmeter.errors",
    "Document": "ragmeter.documents",
    "EvalJob": "ragmeter.evaluation.job",
    "EvaluationError": "ragmeter.errors",
    "ExplainOptions": "ragmeter.evaluation.explain",
    "GateResult": "ragmeter.compare.gate",
    "GateRules": "ragmeter.compare.gate",
    "GoldItem": "ragmeter.gold.goldset",
    "GoldSet": "ragmeter.gold.goldset",
    "GoldSetError": "ragmeter.errors",
    "HealthThresholds": "ragmeter.compare.health",
    "Hit": "ragmeter.documents",
    "InputError": "ragmeter.errors",
    "JudgeClient": "ragmeter.judge",
    "Metric": "ragmeter.metrics",
    "MetricNameError": "ragmeter.errors",
    "MetricsResult": "ragmeter.metrics",
    "Pipeline": "ragmeter.pipelines.pipeline",
    "PipelineConfig": "ragmeter.pipelines.pipeline",
    "QueryLogger": "ragmeter.feedback.querylog",
    "QuestionResult": "ragmeter.run",
    "RagmeterError": "ragmeter.errors",
    "Relevance": "ragmeter.gold.goldset",
    "Retriever": "ragmeter.retrievers",
    "RetrieverError": "ragmeter.errors",
    "RunDiff": "ragmeter.compare.diff",
    "RunView": "ragmeter.read.view",
    "RunFileError": "ragmeter.errors",
    "RunInfo": "ragmeter.run",
    "RunNotFoundError": "ragmeter.errors",
    "RunReport": "ragmeter.evaluation.report",
    "Store": "ragmeter.store",
    "StoreError": "ragmeter.errors",
    "check_gate": "ragmeter.compare.gate",
    "chunk_corpus": "ragmeter.pipelines.chunkers",
    "coerce_hits": "ragmeter.retrievers",
    "compare_runs": "ragmeter.compare.comparison",
    "compute_metrics": "ragmeter.metrics",
    "diagnose": "ragmeter.compare.health",
    "diff_runs": "ragmeter.compare.diff",
    "evaluate": "ragmeter.evaluation.evaluate",
    "explain_run": "ragmeter.evaluation.explain",
    "load_corpus": "ragmeter.corpus",
    "load_gold": "ragmeter.gold.files",
    "load_pipeline_file": "ragmeter.pipelines.pipeline",
    "metrics_from_trec": "ragmeter.evaluation.trec_metrics",
    "parse_metric": "ragmeter.metrics",
    "read_run": "ragmeter.read.view",
    "resolve_retriever": "ragmeter.retrievers",
    "run_job": "ragmeter.evaluation.jobs",
}

__all__ = [
    "Chunk",
    "ChunkerConfig",
    "Comparison",
    "ConfigError",
    "Corpus",
    "CorpusError",
    "Document",
    "EvalJob",
    "EvaluationError",
    "ExplainOptions",
    "GateResult",
    "GateRules",
    "GoldItem",
    "GoldSet",
    "GoldSetError",
    "HealthThresholds",
    "Hit",
    "InputError",
    "JudgeClient",
    "Metric",
    "MetricNameError",
    "MetricsResult",
    "Pipeline",
    "PipelineConfig",
    "QueryLogger",
    "QuestionResult",
    "RagmeterError",
    "Relevance",
    "Retriever",
    "RetrieverError",
    "RunDiff",
    "RunFileError",
    "RunInfo",
    "RunNotFoundError",
    "RunReport",
    "RunView",
    "Store",
    "StoreError",
    "check_gate",
    "chunk_corpus",
    "coerce_hits",
    "compare_runs",
    "compute_metrics",
    "diagnose",
    "diff_runs",
    "evaluate",
    "explain_run",
    "load_corpus",
    "load_gold",
    "load_pipeline_file",
    "metrics_from_trec",
    "parse_metric",
    "read_run",
    "resolve_retriever",
    "run_job",
]

if TYPE_CHECKING:
    from ragmeter.compare.comparison import (
        Comparison,
        compare_runs,
    )
    from ragmeter.compare.diff import (
        RunDiff,
        diff_runs,
    )
    from ragmeter.compare.gate import (
        GateResult,
        GateRules,
        check_gate,
    )
    from ragmeter.compare.health import (
        HealthThresholds,
        diagnose,
    )
    from ragmeter.corpus import (
        Corpus,
        load_corpus,
    )
    from ragmeter.documents import (
        Chunk,
        Document,
        Hit,
    )
    from ragmeter.errors import (
        ConfigError,
        CorpusError,
        EvaluationError,
        GoldSetError,
        InputError,
        MetricNameError,
        RagmeterError,
        RetrieverError,
        RunFileError,
        RunNotFoundError,
        StoreError,
    )
    from ragmeter.evaluation.evaluate import (
        evaluate,
    )
    from ragmeter.evaluation.explain import (
        ExplainOptions,
        explain_run,
    )
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.evaluation.jobs import run_job
    from ragmeter.evaluation.report import (
        RunReport,
    )
    from ragmeter.evaluation.trec_metrics import (
        metrics_from_trec,
    )
    from ragmeter.feedback.querylog import (
        QueryLogger,
    )
    from ragmeter.gold.files import load_gold
    from ragmeter.gold.goldset import GoldItem, GoldSet, Relevance
    from ragmeter.judge import (
        JudgeClient,
    )
    from ragmeter.metrics import (
        Metric,
        MetricsResult,
        compute_metrics,
        parse_metric,
    )
    from ragmeter.pipelines.chunkers import (
        ChunkerConfig,
        chunk_corpus,
    )
    from ragmeter.pipelines.pipeline import (
        Pipeline,
        PipelineConfig,
        load_pipeline_file,
    )
    from ragmeter.read.view import RunView, read_run
    from ragmeter.retrievers import (
        Retriever,
        coerce_hits,
        resolve_retriever,
    )
    from ragmeter.run import (
        QuestionResult,
        RunInfo,
    )
    from ragmeter.store import (
        Store,
    )


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # One version: pyproject.toml's, read from the installed package's metadata.
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("ragmeter")
        except PackageNotFoundError:  # a source tree on sys.path, never installed
            found = "0+unknown"
        globals()[name] = found
        return found
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmeter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | {"__version__"})
