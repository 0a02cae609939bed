"""What one span says about retrieval, in OpenInference or OTel GenAI terms (for ``otlp``).

Two conventions are read, side by side:

- **OpenInference** (Arize Phoenix and its instrumentations): ``openinference.span.kind`` is
  ``RETRIEVER``; the query is ``input.value``; the documents are
  ``retrieval.documents.N.document.id|score|content|metadata``. An ``LLM`` span's answer is
  ``llm.output_messages.0.message.content``, else ``output.value``.
- **OTel GenAI semantic conventions** (the "Retrievals" span of ``docs/gen-ai/gen-ai-spans.md``
  and ``gen-ai-retrieval-documents.json`` in open-telemetry/semantic-conventions, now kept in
  open-telemetry/semantic-conventions-genai): ``gen_ai.operation.name`` is ``retrieval``; the
  query is ``gen_ai.retrieval.query.text``; the documents are ``gen_ai.retrieval.documents``,
  an array of objects with ``id`` and ``score`` (structured, or a JSON string), to which
  ragmeter adds the common extra properties ``content`` and ``metadata``. An inference span
  (``chat``, ``text_completion``, ``generate_content``) gives the answer: the text parts of the
  first ``assistant`` message of ``gen_ai.output.messages``. Both content attributes are opt-in
  in the spec: a retrieval span without ``gen_ai.retrieval.documents`` is logged with no hits
  and ``meta.documents = "not recorded"``, and the reply says so.

>>> span_kind({"gen_ai.operation.name": "retrieval"}), span_kind({"openinference.span.kind": "LLM"})
('genai', None)
>>> answer_of({"gen_ai.operation.name": "chat", "gen_ai.output.messages":
...     '[{"role": "assistant", "parts": [{"type": "text", "content": "30 days"}]}]'})
'30 days'
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from ragmeter.feedback.querylog import MAX_HITS, MAX_TEXT, HitRecord

__all__ = ["answer_of", "hits_of", "query_of", "span_kind", "thumbs"]

OPENINFERENCE_KIND = "openinference.span.kind"
GENAI_OPERATION = "gen_ai.operation.name"
GENAI_QUERY = "gen_ai.retrieval.query.text"
GENAI_DOCUMENTS = "gen_ai.retrieval.documents"
GENAI_OUTPUT = "gen_ai.output.messages"
#: GenAI operations whose output is a model's answer.
GENAI_GENERATION = frozenset({"chat", "text_completion", "generate_content"})

_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|score|content|metadata)$")
_DOC_KEYS = ("doc_id", "source", "file_path")
_THUMBS = {"up": True, "thumbs_up": True, "thumbs-up": True, "positive": True,
           "down": False, "thumbs_down": False, "thumbs-down": False,
           "negative": False}  # fmt: skip


def span_kind(attributes: Mapping[str, Any]) -> str | None:
    """``"openinference"`` or ``"genai"`` for a retriever span, else None."""
    if attributes.get(OPENINFERENCE_KIND) == "RETRIEVER":
        return "openinference"
    if attributes.get(GENAI_OPERATION) == "retrieval":
        return "genai"
    return None


def query_of(attributes: Mapping[str, Any], kind: str) -> tuple[str, Any]:
    """The attribute naming the query for ``kind``, and its value."""
    key = "input.value" if kind == "openinference" else GENAI_QUERY
    return key, attributes.get(key)


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value


def _hit(n: int, entry: Mapping[str, Any]) -> HitRecord:
    metadata = _json(entry.get("metadata"))
    named = next(
        (str(metadata[k]) for k in _DOC_KEYS if isinstance(metadata, dict) and metadata.get(k)),
        None,
    )
    hit_id = str(entry.get("id") or named or f"rank-{n + 1}")
    score = entry.get("score")
    content = entry.get("content")
    return HitRecord(
        id=hit_id[:1000],
        doc=(named or hit_id)[:1000],
        score=float(score)
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None,
        text=content[:MAX_TEXT] if isinstance(content, str) else None,
    )


def hits_of(attributes: Mapping[str, Any], kind: str) -> tuple[list[HitRecord] | None, int]:
    """The first ``MAX_HITS`` documents and how many the span had.

    None when a GenAI span did not record its documents (the attribute is opt-in); raises
    ``ValueError`` when it recorded something that is not an array of objects.
    """
    if kind == "genai":
        if GENAI_DOCUMENTS not in attributes:
            return None, 0
        documents = _json(attributes[GENAI_DOCUMENTS])
        if not isinstance(documents, list) or not all(isinstance(d, dict) for d in documents):
            raise ValueError(f"{GENAI_DOCUMENTS} is not an array of objects")
        hits = [_hit(n, d) for n, d in enumerate(documents[:MAX_HITS])]
        return hits, len(documents)
    docs: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in attributes.items():
        match = _DOC.match(key)
        if match:
            docs[int(match.group(1))][match.group(2)] = value
    return [_hit(n, docs[n]) for n in sorted(docs)[:MAX_HITS]], len(docs)


def _genai_answer(messages: Any) -> str | None:
    messages = _json(messages)
    if not isinstance(messages, list):
        return None
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "assistant":
            parts = message.get("parts")
            if not isinstance(parts, list):
                return None
            texts = [
                p["content"]
                for p in parts
                if isinstance(p, dict)
                and p.get("type") == "text"
                and isinstance(p.get("content"), str)
            ]
            return "".join(texts) if texts else None
    return None


def answer_of(attributes: Mapping[str, Any]) -> str | None:
    """The answer an LLM (OpenInference) or inference (GenAI) span gave, else None."""
    if attributes.get(OPENINFERENCE_KIND) == "LLM":
        content = attributes.get("llm.output_messages.0.message.content")
        if isinstance(content, str):
            return content
        output = attributes.get("output.value")
        return output if isinstance(output, str) else None
    if attributes.get(GENAI_OPERATION) in GENAI_GENERATION:
        return _genai_answer(attributes.get(GENAI_OUTPUT))
    return None


def thumbs(attributes: Mapping[str, Any]) -> bool | None:
    """A verdict from ``thumbs_up`` (bool) or ``label`` (up/down words), else None."""
    value = attributes.get("thumbs_up")
    if isinstance(value, bool):
        return value
    label = attributes.get("label")
    return _THUMBS.get(label.strip().lower()) if isinstance(label, str) else None
