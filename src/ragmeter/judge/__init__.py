"""Judges of the generation side: the only code that talks to a model.

- :mod:`~ragmeter.judge.client` — the OpenAI-compatible client (retries, structured
  output, cache, usage);
- :mod:`~ragmeter.judge.faithfulness`, :mod:`~ragmeter.judge.relevance` — the LLM judges;
- :mod:`~ragmeter.judge.claims` — claim-level diagnosis (claims checked against each chunk);
- :mod:`~ragmeter.judge.lexical` — the offline baseline judge;
- :mod:`~ragmeter.judge.prompts` — the versioned prompts and their hash;
- :mod:`~ragmeter.judge.stability` — the majority over repeated verdicts.

Whether to trust a judge (people's labels, calibration, corrected estimates, which judge
made a number) is :mod:`ragmeter.judging`.

Importing this package imports no HTTP library; ``openai`` loads on the first call.
"""

from __future__ import annotations

from ragmeter.judge.claims import ClaimsCase, ClaimsVerdict, judge_claims, judge_claims_lexical
from ragmeter.judge.client import JudgeBatch, JudgeClient, JudgeRequest, JudgeResult, Price, Usage
from ragmeter.judge.faithfulness import FaithfulnessCase, FaithfulnessVerdict, judge_faithfulness
from ragmeter.judge.lexical import judge_lexical, lexical_verdict
from ragmeter.judge.relevance import RelevanceCase, RelevanceVerdict, judge_relevance

__all__ = [
    "ClaimsCase",
    "ClaimsVerdict",
    "FaithfulnessCase",
    "FaithfulnessVerdict",
    "JudgeBatch",
    "JudgeClient",
    "JudgeRequest",
    "JudgeResult",
    "Price",
    "RelevanceCase",
    "RelevanceVerdict",
    "Usage",
    "judge_claims",
    "judge_claims_lexical",
    "judge_faithfulness",
    "judge_lexical",
    "judge_relevance",
    "lexical_verdict",
]
