"""The offline baseline judge: specifics in the answer that the context never mentions.

No model, no key, deterministic. For each sentence of the answer it collects the
*specifics* a reader would check — numbers and dates, code spans, command-line
flags, ALL_CAPS names (environment variables, constants) and capitalised names
in mid-sentence — and flags the sentence when one of them does not occur in the
context. It cannot see a reversed effect or a swapped pair of words; that is what
calibration (``ragmeter judge calibrate --judge lexical``) measures.

For claims (issue 17.5) the same rule is the offline entailment: a claim is a sentence
(:func:`lexical_claims`), and a passage entails it when every specific of it occurs in the
passage and at least ``CLAIM_WORD_SHARE`` of its content words do (:func:`lexical_entails`;
the word share keeps a sentence without specifics from being entailed by any passage).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragmeter.gold.answers import normalize
from ragmeter.judge.client import JudgeBatch
from ragmeter.judge.faithfulness import FaithfulnessCase, FaithfulnessVerdict
from ragmeter.judge.prompts import prompt_hash

__all__ = [
    "CLAIM_WORD_SHARE",
    "LEXICAL_CLAIMS_VERSION",
    "LEXICAL_VERSION",
    "judge_lexical",
    "lexical_claims",
    "lexical_entails",
    "lexical_verdict",
    "specifics",
]

LEXICAL_VERSION = "lexical/1"
#: The offline claims rule's version (bump it when the rule changes).
LEXICAL_CLAIMS_VERSION = "lexical-claims/1"
#: Share of a claim's content words a passage must contain to entail it.
CLAIM_WORD_SHARE = 0.5
#: Content words are at least this long (shorter ones are mostly function words).
CONTENT_WORD_CHARS = 3
_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*[a-z0-9]|[a-z0-9]")
_STOP_WORDS = (
    "and are but can for from has have how its not that the then this was were what when "
    "which will with you your does did into also any all only just than them they there "
    "these those use used uses using should would could may might must our out yes"
)
_STOP = frozenset(_STOP_WORDS.split(" "))

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])|\n\s*\n|\n\s*[-*]\s+")
_CODE = re.compile(r"`([^`]+)`")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:/-]\d+)*(?![\w])")
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
_CONSTANT = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z]{2,}[0-9]*\b")
_NAME = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*\b")
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
# Capitalised words that are not names (sentence-initial words are skipped anyway).
_COMMON = {"i", "if", "the", "a", "an", "yes", "no", "it", "you", "to", "for", "use", "run"}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def specifics(sentence: str) -> list[str]:
    """The checkable specifics of one sentence, in order of appearance.

    >>> specifics("Set `UV_CACHE_DIR` and pass --no-cache; it needs Python 3.12 since May 2024.")
    ['UV_CACHE_DIR', '--no-cache', 'Python', '3.12', 'May', '2024']
    """
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, end: int, token: str) -> None:
        if any(s <= start < e or s < end <= e for s, e in taken):
            return
        taken.append((start, end))
        found.append((start, token))

    for match in _CODE.finditer(sentence):
        add(match.start(), match.end(), match.group(1).strip())
    for pattern in (_FLAG, _CONSTANT, _NUMBER):
        for match in pattern.finditer(sentence):
            add(match.start(), match.end(), match.group(0))
    first_word = re.match(r"\W*(\w+)", sentence)
    first_start = first_word.start(1) if first_word else -1
    for match in _NAME.finditer(sentence):
        word = match.group(0)
        if match.start() == first_start or word.lower() in _COMMON:
            continue
        # After a colon or an opening quote a capital starts a new phrase, not a name.
        before = sentence[: match.start()].rstrip()
        if before.endswith((":", '"', "(")):
            continue
        add(match.start(), match.end(), word)
    return [token for _, token in sorted(found) if token]


def _occurs(token: str, context: str) -> bool:
    needle = normalize(token)
    if not needle:
        return True
    if needle[0].isalnum() and needle[-1].isalnum():
        return re.search(rf"(?<![\w]){re.escape(needle)}(?![\w])", context) is not None
    return needle in context


def lexical_verdict(answer: str, context: Sequence[str]) -> FaithfulnessVerdict:
    """Flag the answer's sentences whose specifics do not occur in ``context``.

    >>> v = lexical_verdict("Refunds take 30 days. Call 555-0100.", ["Refunds take 30 days."])
    >>> v.supported, v.unsupported_claims
    (False, ('Call 555-0100.',))
    """
    haystack = normalize("\n".join(context))
    claims: list[str] = []
    missing: list[str] = []
    for sentence in _sentences(answer):
        absent = [t for t in specifics(sentence) if not _occurs(t, haystack)]
        if absent:
            claims.append(sentence)
            missing.extend(absent)
    if not claims:
        return FaithfulnessVerdict(
            True, (), "every number, name and code span occurs in the context"
        )
    listed = ", ".join(dict.fromkeys(missing))
    return FaithfulnessVerdict(False, tuple(claims), f"not in the context: {listed}")


def judge_lexical(cases: Sequence[FaithfulnessCase]) -> JudgeBatch[FaithfulnessVerdict]:
    """Judge every case offline; same result shape as ``judge_faithfulness``.

    >>> case = FaithfulnessCase("q1", "How long?", ("Refunds within 30 days.",), "30 days.")
    >>> judge_lexical([case]).verdicts["q1"].supported
    True
    """
    batch: JudgeBatch[FaithfulnessVerdict] = JudgeBatch(
        judge={
            "model": "lexical",
            "prompt_version": LEXICAL_VERSION,
            # No prompt: the rule is the version (bump LEXICAL_VERSION when it changes).
            "prompt_hash": prompt_hash(LEXICAL_VERSION),
            "repeats": 1,
        }
    )
    for case in cases:
        batch.verdicts[case.id] = lexical_verdict(case.answer, case.context)
    return batch


def _content_words(text: str) -> set[str]:
    words = _WORD.findall(normalize(text))
    return {w for w in words if len(w) >= CONTENT_WORD_CHARS and w not in _STOP}


def lexical_claims(text: str) -> list[str]:
    """The claims of ``text`` for the offline judge: its sentences that hold a content word.

    >>> lexical_claims("Yes. Refunds take 30 days. Call 555-0100.")
    ['Refunds take 30 days.', 'Call 555-0100.']
    """
    return [s for s in _sentences(text) if _content_words(s) or specifics(s)]


def lexical_entails(claim: str, premise: str) -> bool:
    """Whether ``premise`` entails ``claim`` by the lexical rule (see the module doc).

    >>> lexical_entails("Refunds take 30 days.", "Refunds are accepted within 30 days.")
    True
    >>> lexical_entails("Refunds take 60 days.", "Refunds are accepted within 30 days.")
    False
    >>> lexical_entails("Orders ship quickly.", "Refunds are accepted within 30 days.")
    False
    """
    haystack = normalize(premise)
    if not all(_occurs(token, haystack) for token in specifics(claim)):
        return False
    words = _content_words(claim)
    if not words:
        return True
    found = words & _content_words(premise)
    return len(found) >= CLAIM_WORD_SHARE * len(words)
