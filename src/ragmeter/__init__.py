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

__version__ = "0.1.0.dev0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "ConfigError": "ragmeter.errors",
    "CorpusError": "ragmeter.errors",
    "EvaluationError": "ragmeter.errors",
    "GoldSetError": "ragmeter.errors",
    "InputError": "ragmeter.errors",
    "MetricNameError": "ragmeter.errors",
    "RagmeterError": "ragmeter.errors",
    "RetrieverError": "ragmeter.errors",
    "RunFileError": "ragmeter.errors",
    "RunNotFoundError": "ragmeter.errors",
    "StoreError": "ragmeter.errors",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmeter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
