"""Why each question was missed, with evidence, and which knob this system needs (issue 28).

``explain_run`` probes every retrieval miss of a stored run (asked again deeper, other
retrievers, query expansion, re-chunking, the answer strings, the index) and keeps only
causes a probe measured; ``Explanation.knobs`` is each knob's ceiling. The result is
stored with the run (``Store.save_explanation``) and shown by ``ragmeter show``.
"""

from __future__ import annotations

from ragmeter.evaluation.explain.model import (
    CAUSES,
    KNOBS,
    UNEXPLAINED,
    Cause,
    Explanation,
    KnobCeiling,
    MissExplanation,
)
from ragmeter.evaluation.explain.run import (
    DEFAULT_DEPTH,
    ExplainOptions,
    explain_run,
    rewriter_from_file,
    stored_explanation,
)

__all__ = [
    "CAUSES",
    "DEFAULT_DEPTH",
    "KNOBS",
    "UNEXPLAINED",
    "Cause",
    "ExplainOptions",
    "Explanation",
    "KnobCeiling",
    "MissExplanation",
    "explain_run",
    "rewriter_from_file",
    "stored_explanation",
]
