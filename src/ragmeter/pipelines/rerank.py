"""Re-ranking the top N hits: a cross-encoder when one is given, else an LLM. One interface.

- :class:`CrossEncoderReranker` scores (question, passage) pairs with a
  sentence-transformers ``CrossEncoder`` loaded from a local folder (no registry package
  ships a trained cross-encoder, and nothing is downloaded at run time).
- :class:`LLMReranker` asks an OpenAI-compatible chat model to grade each passage 0-3 and
  sorts by grade (ties keep the retriever's order).

Only the top ``top_n`` (default 20) are re-ranked; the rest keep their order below them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.executors.pickling import Transient, new_lock
from ragmeter.judge.chat import (
    LLMSettings,
    chat,
    make_client,
    parse_json_object,
    remake_client,
)

__all__ = [
    "DEFAULT_TOP_N",
    "CrossEncoderReranker",
    "LLMReranker",
    "Reranker",
    "rerank_top",
]

#: How many hits are re-ranked when a pipeline says nothing.
DEFAULT_TOP_N = 20
#: Characters of each passage shown to the LLM re-ranker.
LLM_PASSAGE_CHARS = 600

_PROMPT = """Grade how well each passage answers the question, from 0 (unrelated) to 3 \
(answers it directly).
Question: {question}

{passages}

Reply with JSON only: {{"scores": [one integer 0-3 per passage, in passage order]}}"""


@runtime_checkable
class Reranker(Protocol):
    """Reorders hits for a question; returns the same hits with new scores, best first."""

    config: Mapping[str, Any]

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        """The hits re-ordered by relevance to ``question``."""
        ...


def rerank_top(reranker: Reranker, question: str, hits: Sequence[Hit], top_n: int) -> list[Hit]:
    """Re-rank the first ``top_n`` hits; the rest follow unchanged.

    >>> class Reverse:
    ...     config = {}
    ...     def rerank(self, question, hits):
    ...         return list(reversed(hits))
    >>> [h.id for h in rerank_top(Reverse(), "q", [Hit(x, x) for x in "abc"], 2)]
    ['b', 'a', 'c']
    """
    head, tail = list(hits[:top_n]), list(hits[top_n:])
    if len(head) < 2:
        return head + tail
    return reranker.rerank(question, head) + tail


def _order(hits: Sequence[Hit], scores: Sequence[float]) -> list[Hit]:
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    return [replace(hits[i], score=float(scores[i])) for i in order]


class CrossEncoderReranker(Transient):
    """A sentence-transformers cross-encoder from a local folder.

    It pickles with its weights (the Ray executor ships it to workers, where the
    folder may not exist); a copy gets a new lock.

    >>> r = CrossEncoderReranker("/models/ms-marco-MiniLM-L-6-v2")  # doctest: +SKIP
    """

    _TRANSIENT = {"_lock": new_lock}

    def __init__(self, model_path: str | Path, *, batch_size: int = 32) -> None:
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise ConfigError(
                f"rerank: cross-encoder folder {path} not found (models are never downloaded; "
                "give a local folder, or use rerank.llm)"
            )
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ConfigError(
                "rerank: a cross-encoder needs sentence-transformers: pip install 'ragmeter[dense]'"
            ) from None
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from ragmeter.pipelines.dense import _quiet_transformers

        _quiet_transformers()
        try:
            self._model = CrossEncoder(str(path), num_labels=1, device="cpu")
        except (OSError, ValueError) as exc:
            raise ConfigError(f"rerank: cannot load cross-encoder {path}: {exc}") from None
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self.config: dict[str, Any] = {"type": "cross_encoder", "model": str(path)}

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        pairs = [(question, h.text or "") for h in hits]
        with self._lock:
            scores = self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return _order(hits, [float(s) for s in scores])


class LLMReranker(Transient):
    """Grades passages 0-3 with an OpenAI-compatible chat model.

    Calls the model through the judge's client (``ragmeter.judge.chat``: shared
    retries and timeouts). It pickles with its settings
    (key included: the worker needs it); a copy makes its own client from them.

    >>> r = LLMReranker(LLMSettings("http://127.0.0.1:8011/v1", "judge"))  # doctest: +SKIP
    """

    _TRANSIENT = {"_client": remake_client}

    def __init__(self, settings: LLMSettings, *, client: Any = None) -> None:
        self.settings = settings
        self._client = client if client is not None else make_client(settings)
        self.config: dict[str, Any] = {"type": "llm", **settings.public()}

    def rerank(self, question: str, hits: Sequence[Hit]) -> list[Hit]:
        passages = "\n\n".join(
            f"[{n}] {(h.text or h.id)[:LLM_PASSAGE_CHARS]}" for n, h in enumerate(hits, 1)
        )
        answer = chat(
            self._client,
            self.settings,
            _PROMPT.format(question=question, passages=passages),
            json_mode=True,
        )
        data = parse_json_object(answer, "LLM re-ranker")
        scores = data.get("scores")
        if not isinstance(scores, list) or not all(
            isinstance(s, int | float) and not isinstance(s, bool) for s in scores
        ):
            raise RetrieverError('LLM re-ranker: "scores" must be a list of numbers')
        if len(scores) != len(hits):
            raise RetrieverError(
                f"LLM re-ranker: {len(scores)} score(s) for {len(hits)} passage(s)"
            )
        return _order(hits, [float(s) for s in scores])
