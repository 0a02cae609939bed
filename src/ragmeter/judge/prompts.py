"""Versioned prompts: the text a judge sends and the schema its reply must fit.

A prompt's ``version`` is part of every cache key, so editing a prompt's text
without bumping its version would serve stale verdicts: bump it on every change
(``faithfulness/1`` -> ``faithfulness/2``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CLAIMS",
    "CLAIM_CHECK",
    "FAITHFULNESS",
    "GENERATION",
    "PROMPT_HASH_CHARS",
    "RELEVANCE",
    "Prompt",
    "prompt_hash",
]

# String limits keep replies inside a small ``max_tokens`` (truncation is the failure seen).
CLAIM_MAX_CHARS = 200
REASON_MAX_CHARS = 300
MAX_CLAIMS = 8
#: Claims one extraction may return, and claims checked against one passage per request.
MAX_EXTRACTED_CLAIMS = 16
MAX_CLAIMS_PER_CHECK = 8


#: Hex characters of the prompt hash kept (48 bits: collisions are not a concern here).
PROMPT_HASH_CHARS = 12


def prompt_hash(*parts: Any) -> str:
    """A short sha256 over a prompt's text and schema (anything JSON-able).

    >>> prompt_hash("system", "user {x}") == prompt_hash("system", "user {x}")
    True
    >>> prompt_hash("system", "user {x}") == prompt_hash("system", "user {y}")
    False
    """
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:PROMPT_HASH_CHARS]


@dataclass(frozen=True)
class Prompt:
    """A system message, a user template (``str.format`` fields) and a reply schema."""

    version: str
    system: str
    user: str
    schema: Mapping[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """A short hash of the text and schema: part of the judge's identity (issue 17.6).

        >>> len(RELEVANCE.digest)
        12
        """
        return prompt_hash(self.system, self.user, dict(self.schema))

    def messages(self, **fields: str) -> list[dict[str, str]]:
        """The chat messages for one call.

        >>> RELEVANCE.messages(question="q?", chunk="text")[1]["content"].startswith("Question")
        True
        """
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**fields)},
        ]


def numbered(passages: Sequence[str]) -> str:
    """Context passages as ``[1] ...`` blocks, the way the prompts show them.

    >>> numbered(["a", "b"])
    '[1] a\\n\\n[2] b'
    """
    return "\n\n".join(f"[{i}] {text.strip()}" for i, text in enumerate(passages, start=1))


FAITHFULNESS = Prompt(
    version="faithfulness/1",
    system=(
        "You check answers against their sources. Decide one narrow question: is every "
        "claim in the ANSWER supported by the CONTEXT? Use only the CONTEXT, not what you "
        "know about the world: a claim that is true but absent from the CONTEXT is "
        "unsupported. A claim that contradicts the CONTEXT, swaps details, or adds a value, "
        "flag or effect the CONTEXT does not state is unsupported. Paraphrase and combining "
        "passages are fine. Reply with a JSON object only."
    ),
    user=(
        "CONTEXT:\n{context}\n\nQUESTION: {question}\n\nANSWER: {answer}\n\n"
        'Reply as {{"supported": true|false, "unsupported_claims": ["..."], '
        '"reason": "one sentence"}}. List every unsupported claim; an empty list means '
        "supported."
    ),
    schema={
        "type": "object",
        "properties": {
            "supported": {"type": "boolean"},
            "unsupported_claims": {
                "type": "array",
                "items": {"type": "string", "maxLength": CLAIM_MAX_CHARS},
                "maxItems": MAX_CLAIMS,
            },
            "reason": {"type": "string", "maxLength": REASON_MAX_CHARS},
        },
        "required": ["supported", "unsupported_claims", "reason"],
        "additionalProperties": False,
    },
)

RELEVANCE = Prompt(
    version="relevance/1",
    system=(
        "You grade how useful a retrieved passage is for answering a question. Grades: "
        "3 = answers the question fully; 2 = answers part of it; 1 = on topic but does "
        "not answer it; 0 = unrelated. Reply with a JSON object only."
    ),
    user=(
        "Question: {question}\n\nPassage:\n{chunk}\n\n"
        'Reply as {{"grade": 0-3, "reason": "one line"}}.'
    ),
    schema={
        "type": "object",
        "properties": {
            "grade": {"type": "integer", "minimum": 0, "maximum": 3},
            "reason": {"type": "string", "maxLength": REASON_MAX_CHARS},
        },
        "required": ["grade", "reason"],
        "additionalProperties": False,
    },
)

GENERATION = Prompt(
    version="generation/1",
    system=(
        "Answer the question using only the numbered context passages. If they do not "
        "contain the answer, say you don't know. Be brief."
    ),
    user="Context:\n{context}\n\nQuestion: {question}",
)

CLAIMS = Prompt(
    version="claims/1",
    system=(
        "You split a text into atomic claims: short, self-contained statements that each "
        "state one fact from the text, with pronouns replaced by what they refer to. Do not "
        "add, drop or correct facts, and skip greetings and hedges. Reply with a JSON object "
        "only."
    ),
    user=(
        "QUESTION: {question}\n\nTEXT: {text}\n\n"
        'Reply as {{"claims": ["...", "..."]}}; an empty list when the text states no fact.'
    ),
    schema={
        "type": "object",
        "properties": {
            "claims": {
                "type": "array",
                "items": {"type": "string", "maxLength": CLAIM_MAX_CHARS},
                "maxItems": MAX_EXTRACTED_CLAIMS,
            },
        },
        "required": ["claims"],
        "additionalProperties": False,
    },
)

CLAIM_CHECK = Prompt(
    version="claim-check/1",
    system=(
        "You check claims against one passage. For each numbered claim decide whether the "
        "PASSAGE entails it: states it, or implies it directly. Use only the PASSAGE, not "
        "what you know about the world; a claim the PASSAGE contradicts, or does not "
        "mention, is not entailed. Reply with a JSON object only."
    ),
    user=(
        "PASSAGE:\n{premise}\n\nCLAIMS:\n{claims}\n\n"
        'Reply as {{"entailed": [true|false, ...]}}: one value per claim, in order.'
    ),
    schema={
        "type": "object",
        "properties": {
            "entailed": {
                "type": "array",
                "items": {"type": "boolean"},
                "maxItems": MAX_CLAIMS_PER_CHECK,
            },
        },
        "required": ["entailed"],
        "additionalProperties": False,
    },
)
