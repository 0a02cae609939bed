"""The dumb checks: does a text contain an expected answer string?

Case- and whitespace-insensitive substrings; a pattern starting with ``re:``
is a regular expression (searched case-insensitively).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = ["answer_matches", "first_containing_rank", "normalize"]

_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Lower-case and collapse runs of whitespace to one space.

    >>> normalize("  Within 30\\n days ")
    'within 30 days'
    """
    return _SPACE.sub(" ", text).strip().casefold()


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def answer_matches(text: str, patterns: Sequence[str]) -> bool:
    """True when ``text`` contains any of ``patterns``.

    >>> answer_matches("Refunds within 30 days.", ["30 DAYS"])
    True
    >>> answer_matches("uv 0.4.1", [r"re:\\d+\\.\\d+\\.\\d+"])
    True
    """
    if not patterns:
        return False
    flat = normalize(text)
    for pattern in patterns:
        if pattern.startswith("re:"):
            if _compile(pattern[3:]).search(text):
                return True
        elif normalize(pattern) in flat:
            return True
    return False


def first_containing_rank(texts: Iterable[str | None], patterns: Sequence[str]) -> int | None:
    """1-based rank of the first text that contains an answer, or None.

    >>> first_containing_rank(["nothing", "costs 30 days"], ["30 days"])
    2
    """
    for rank, text in enumerate(texts, start=1):
        if text and answer_matches(text, patterns):
            return rank
    return None
