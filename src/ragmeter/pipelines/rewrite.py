"""Query rewriting: RM3 pseudo-relevance feedback over BM25 (offline), or LLM expansion.

**RM3** (Abdul-Jaleel et al., UMass at TREC 2004; as in Anserini/Pyserini): retrieve the
top ``fb_docs`` chunks with BM25, build the relevance model
``P(w|R) = sum_d P(w|d) * P(d|q)`` with ``P(d|q)`` the normalised BM25 scores, keep the
``fb_terms`` most likely terms, and mix with the question's own term distribution:
``P'(w) = original_weight * P(w|q) + (1 - original_weight) * P(w|R)``. The weighted terms
then score BM25 (:meth:`BM25Retriever.retrieve_weighted`). No keys, no network.

**LLM expansion** asks an OpenAI-compatible chat model for search keywords and appends
them to the question (both BM25 and dense search then see the longer query).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ragmeter.errors import ConfigError
from ragmeter.executors.pickling import Transient
from ragmeter.judge.chat import LLMSettings, chat, make_client, remake_client

if TYPE_CHECKING:
    from ragmeter.pipelines.bm25 import BM25Retriever

__all__ = ["LLMExpansion", "RM3", "Rewrite", "Rewriter"]

_PROMPT = """Write up to 10 search keywords or short phrases (synonyms, the technical terms \
a document would use) that help find passages answering this question. One line, \
comma-separated, nothing else.
Question: {question}"""


@dataclass(frozen=True)
class Rewrite:
    """A rewritten query: ``text`` for any retriever, ``terms`` (analysed term -> weight)
    for BM25 when the rewriter produced weights.

    >>> Rewrite("cats purr").terms is None
    True
    """

    text: str
    terms: Mapping[str, float] | None = field(default=None)


@runtime_checkable
class Rewriter(Protocol):
    """Turns a question into the query the retrievers run."""

    config: Mapping[str, Any]

    def rewrite(self, question: str) -> Rewrite:
        """The query for ``question``."""
        ...


class RM3:
    """RM3 pseudo-relevance feedback over a BM25 index (see the module docstring).

    >>> from ragmeter.documents import Chunk
    >>> bm25 = BM25Retriever([Chunk("a", "a", "cats purr and meow", 0, 18),
    ...                       Chunk("b", "b", "dogs bark", 0, 9)])      # doctest: +SKIP
    >>> sorted(RM3(bm25, fb_docs=1, fb_terms=3).rewrite("cats").terms)  # doctest: +SKIP
    ['cat', 'meow', 'purr']
    """

    def __init__(
        self,
        bm25: BM25Retriever,
        *,
        fb_docs: int = 10,
        fb_terms: int = 10,
        original_weight: float = 0.5,
    ) -> None:
        if not isinstance(fb_docs, int) or isinstance(fb_docs, bool) or fb_docs < 1:
            raise ConfigError(f"rewrite: fb_docs must be an integer >= 1, got {fb_docs!r}")
        if not isinstance(fb_terms, int) or isinstance(fb_terms, bool) or fb_terms < 1:
            raise ConfigError(f"rewrite: fb_terms must be an integer >= 1, got {fb_terms!r}")
        if not isinstance(original_weight, int | float) or not 0 <= original_weight <= 1:
            raise ConfigError(
                f"rewrite: original_weight must be between 0 and 1, got {original_weight!r}"
            )
        self.bm25 = bm25
        self.fb_docs = fb_docs
        self.fb_terms = fb_terms
        self.original_weight = float(original_weight)
        self.config: dict[str, Any] = {
            "method": "rm3",
            "fb_docs": fb_docs,
            "fb_terms": fb_terms,
            "original_weight": self.original_weight,
        }

    def rewrite(self, question: str) -> Rewrite:
        query_terms = self.bm25.tokenize([question])[0]
        if not query_terms:
            return Rewrite(question)
        feedback = self.bm25.retrieve(question, self.fb_docs)
        total = sum(h.score or 0.0 for h in feedback)
        relevance: dict[str, float] = {}
        if feedback and total > 0:
            docs = self.bm25.tokenize([h.text or "" for h in feedback])
            for hit, tokens in zip(feedback, docs, strict=True):
                if not tokens:
                    continue
                p_doc = (hit.score or 0.0) / total
                for term, tf in Counter(tokens).items():
                    relevance[term] = relevance.get(term, 0.0) + p_doc * tf / len(tokens)
        top = sorted(relevance.items(), key=lambda kv: (-kv[1], kv[0]))[: self.fb_terms]
        norm = sum(p for _, p in top) or 1.0
        weights: dict[str, float] = {}
        for term, count in Counter(query_terms).items():
            weights[term] = self.original_weight * count / len(query_terms)
        for term, p in top:
            weights[term] = weights.get(term, 0.0) + (1.0 - self.original_weight) * p / norm
        added = [t for t, _ in top if t not in query_terms]
        text = f"{question} {' '.join(added)}" if added else question
        return Rewrite(text, dict(weights))


class LLMExpansion(Transient):
    """Appends an LLM's search keywords to the question.

    Calls the model through the judge's client (``ragmeter.judge.chat``: shared
    retries and timeouts). It pickles with its settings (key
    included: the worker needs it); a copy makes its own client from them.

    >>> LLMExpansion(LLMSettings("http://127.0.0.1:8011/v1", "judge"))  # doctest: +SKIP
    """

    _TRANSIENT = {"_client": remake_client}

    def __init__(self, settings: LLMSettings, *, client: Any = None) -> None:
        self.settings = settings
        self._client = client if client is not None else make_client(settings)
        self.config: dict[str, Any] = {"method": "llm", **settings.public()}

    def rewrite(self, question: str) -> Rewrite:
        answer = chat(self._client, self.settings, _PROMPT.format(question=question))
        keywords = " ".join(answer.split())[:500]
        return Rewrite(f"{question}\n{keywords}")
