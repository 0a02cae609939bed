"""Small lexical tools shared by synthetic questions, variants and the flywheel.

Words, content words (stopwords removed, light stemming), Jaccard similarity and
greedy near-duplicate grouping. Deliberately simple and deterministic: they
decide what a reviewer sees, so their behaviour must be easy to predict.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

__all__ = [
    "STOPWORDS",
    "content_words",
    "group_similar",
    "jaccard",
    "normalise",
    "stem",
    "words",
]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

# English function words, plus question words that every question shares.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing don down during each
    few for from further had has have having he her here hers herself him himself his how i
    if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves i'm i've it's can't don't doesn't isn't what's how's there's
    get got use using used via also one may might must shall need needs let lets like
    want""".split()  # noqa: SIM905 - a word list reads better as text
)


def normalise(text: str) -> str:
    """Lowercase, accents folded, punctuation dropped, whitespace collapsed.

    >>> normalise("  How do I  INSTALL uv?? ")
    'how do i install uv'
    """
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return " ".join(_WORD.findall(folded))


def words(text: str) -> list[str]:
    """The normalised words of ``text``.

    >>> words("Don't re-install!")
    ["don't", 're', 'install']
    """
    return normalise(text).split()


def stem(word: str) -> str:
    """A light suffix-stripping stem, so "installs"/"installed"/"installing" match.

    >>> [stem(w) for w in ("installs", "installed", "installing", "caches", "is")]
    ['install', 'install', 'install', 'cach', 'is']
    """
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str, *, min_length: int = 3) -> set[str]:
    """Stemmed words that carry meaning: no stopwords, no numbers-only, at least 3 letters.

    >>> sorted(content_words("How do I install the packages?"))
    ['install', 'packag']
    """
    return {
        stem(w)
        for w in words(text)
        if w not in STOPWORDS and len(w) >= min_length and not w.isdigit()
    }


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b| (1.0 for two empty sets).

    >>> jaccard({"a", "b"}, {"b", "c"})
    0.3333333333333333
    """
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def group_similar(
    texts: Sequence[str],
    *,
    threshold: float,
    similarity: Callable[[int, int], float] | None = None,
) -> list[list[int]]:
    """Group indices of near-duplicate texts, greedily, in input order.

    Each text joins the first group whose first member is at least ``threshold``
    similar (content-word Jaccard unless ``similarity(i, j)`` is given); identical
    normalised texts always group. Put the texts you want to keep first.

    >>> group_similar(["How to install uv?", "how to install UV", "Remove a tool"], threshold=0.8)
    [[0, 1], [2]]
    """
    keys = [normalise(t) for t in texts]
    sets = [content_words(t) for t in texts]
    groups: list[list[int]] = []
    by_key: dict[str, int] = {}
    for i, key in enumerate(keys):
        if key in by_key:
            groups[by_key[key]].append(i)
            continue
        for g, group in enumerate(groups):
            head = group[0]
            score = similarity(head, i) if similarity else jaccard(sets[head], sets[i])
            if score >= threshold:
                group.append(i)
                by_key[key] = g
                break
        else:
            by_key[key] = len(groups)
            groups.append([i])
    return groups
