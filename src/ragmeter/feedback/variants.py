"""Adversarial variants of gold items: typos, colloquial phrasing, other vocabulary, languages.

Each variant keeps its parent's relevance and answer checks, gets the kind as a tag
(``typo``, ``colloquial``, ``vocab``, ``lang:es``), ``parent: <parent id>``,
``source: adversarial`` and the id ``<parent>~<kind>``.

- ``typo`` is deterministic and needs no model: ``make_typos`` applies keyboard-
  neighbour substitutions, dropped letters and doubled letters, one per chosen word,
  from a generator seeded by ``seed`` and the text. Typo variants are ``accepted``
  (they are mechanical); LLM variants are ``candidate`` and go through review.
- ``colloquial``, ``vocab`` and ``lang:xx`` are LLM rewrites (versioned prompts).
  ``vocab`` is checked: a rewrite sharing a content word with the quoted passage
  (the item's quotes, else the relevant documents when given) is asked again once
  with the offending words named, then dropped if it still fails.

>>> make_typos("How do I install uv on Windows?", seed=1)
'How do I instaall uv on Windows?'
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.documents import Document
from ragmeter.errors import InputError
from ragmeter.feedback._textsim import content_words, normalise
from ragmeter.gold.goldset import GoldItem, GoldSet
from ragmeter.judge.prompting import Complete, Prompt

__all__ = [
    "KINDS",
    "VariantResult",
    "generate_variants",
    "keyboard_neighbours",
    "make_typos",
    "parse_kinds",
    "vocab_clashes",
]

KINDS = ("typo", "colloquial", "vocab", "lang:xx")
#: Share of the eligible words that get a typo (at least one).
TYPO_RATE = 0.15
#: LLM calls in flight at once.
CONCURRENCY = 4

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_LANG = re.compile(r"^lang:([a-z]{2,3}(?:-[A-Za-z]{2})?)$")
_WORD = re.compile(r"[A-Za-z]{4,}")


def keyboard_neighbours() -> dict[str, str]:
    """QWERTY neighbours of each letter (same row and the rows above and below).

    >>> keyboard_neighbours()["g"]
    'tyfhvb'
    """
    pos = {ch: (r, c) for r, row in enumerate(_ROWS) for c, ch in enumerate(row)}
    out: dict[str, str] = {}
    for ch, (r, c) in pos.items():
        near = [o for o, (r2, c2) in pos.items() if o != ch and abs(r2 - r) <= 1]
        # Staggered rows: the keys diagonally adjacent sit at c and c+1 above, c-1 and c below.
        out[ch] = "".join(
            o
            for o in near
            if (pos[o][0] == r and abs(pos[o][1] - c) == 1)
            or (pos[o][0] == r - 1 and pos[o][1] in (c, c + 1))
            or (pos[o][0] == r + 1 and pos[o][1] in (c - 1, c))
        )
    return out


_NEIGHBOURS = keyboard_neighbours()


def make_typos(text: str, *, seed: int = 0, rate: float = TYPO_RATE) -> str:
    """Misspell ``text`` like a hurried typist; the same text and seed give the same result.

    One edit in each chosen word (words of 4+ letters, ``rate`` of them, at least one):
    a letter replaced by a keyboard neighbour, a letter dropped, a letter doubled or two
    letters swapped. Each edit is at edit distance 1 or 2 (a swap), so the result is at
    most ``2 * words changed`` from the input. Text without such words is returned as is.

    >>> make_typos("refund policy for annual plans", seed=3) == make_typos("refund policy for annual plans", seed=3)
    True
    """
    words = list(_WORD.finditer(text))
    if not words:
        return text
    rng = random.Random(f"{seed}\x00{text}")
    count = min(len(words), max(1, round(len(words) * rate)))
    chosen = sorted(rng.sample(range(len(words)), count))
    out, last = [], 0
    for index in chosen:
        match = words[index]
        out.append(text[last : match.start()])
        out.append(_misspell(match.group(), rng))
        last = match.end()
    out.append(text[last:])
    return "".join(out)


def _misspell(word: str, rng: random.Random) -> str:
    # Keep the first letter: people rarely get it wrong, and it keeps the word recognisable.
    i = rng.randrange(1, len(word))
    kind = rng.choice(("neighbour", "drop", "double", "swap"))
    ch = word[i]
    if kind == "neighbour" and ch.lower() in _NEIGHBOURS:
        new = rng.choice(_NEIGHBOURS[ch.lower()])
        return word[:i] + (new.upper() if ch.isupper() else new) + word[i + 1 :]
    if kind == "double":
        return word[:i] + ch + word[i:]
    if kind == "swap" and i < len(word) - 1 and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + word[i + 1 :]  # drop


COLLOQUIAL_PROMPT = Prompt(
    name="variant-colloquial",
    version=1,
    system="You rewrite search questions the way a hurried, informal user would type them. "
    "Reply with JSON only.",
    user="Rewrite this question casually: short, lowercase is fine, informal words, maybe "
    "no question mark. Keep its meaning exactly.\nQuestion: {question}\n"
    'JSON: {{"rewrite": "..."}}',
    schema={
        "type": "object",
        "properties": {"rewrite": {"type": "string", "maxLength": 300}},
        "required": ["rewrite"],
    },
    max_tokens=200,
)

VOCAB_PROMPT = Prompt(
    name="variant-vocab",
    version=1,
    system="You rewrite search questions using different words with the same meaning. "
    "Reply with JSON only.",
    user="Rewrite this question so it asks exactly the same thing but uses none of these "
    "words (nor forms of them): {avoid}.\nQuestion: {question}\n"
    'JSON: {{"rewrite": "..."}}',
    schema=COLLOQUIAL_PROMPT.schema,
    max_tokens=200,
)

TRANSLATE_PROMPT = Prompt(
    name="variant-lang",
    version=1,
    system="You translate search questions faithfully and naturally. Reply with JSON only.",
    user="Translate this question into the language with code {lang}, as a native speaker "
    "would ask it. Keep product names and code as they are.\nQuestion: {question}\n"
    'JSON: {{"rewrite": "..."}}',
    schema=COLLOQUIAL_PROMPT.schema,
    max_tokens=200,
)


def parse_kinds(text: str | Sequence[str]) -> list[str]:
    """Parse ``typo,colloquial,vocab,lang:es`` into a list, rejecting unknown kinds.

    >>> parse_kinds("typo, lang:es")
    ['typo', 'lang:es']
    """
    parts = text.split(",") if isinstance(text, str) else list(text)
    kinds = [p.strip() for p in parts if p.strip()]
    for kind in kinds:
        if kind not in ("typo", "colloquial", "vocab") and not _LANG.match(kind):
            raise InputError(
                f"unknown variant kind {kind!r}; use typo, colloquial, vocab or lang:xx "
                "(a language code such as lang:es)"
            )
    if not kinds:
        raise InputError("no variant kinds given; use e.g. --kinds typo,colloquial")
    return list(dict.fromkeys(kinds))


def vocab_clashes(rewrite: str, passage: str) -> list[str]:
    """Content words of ``rewrite`` that also occur (stemmed) in ``passage``.

    >>> vocab_clashes("how long can I send it back", "Returns are accepted for 30 days.")
    []
    >>> vocab_clashes("when do returns close", "Returns are accepted for 30 days.")
    ['return']
    """
    return sorted(content_words(rewrite) & content_words(passage))


@dataclass
class VariantResult:
    """Variants made, and what was dropped and why."""

    items: list[GoldItem]
    dropped: list[str] = field(default_factory=list)  # "<parent>~<kind>: reason"


def _passage(item: GoldItem, documents: Mapping[str, Document] | None) -> str | None:
    quotes = [r.quote for r in item.relevant if r.quote]
    if quotes:
        return "\n".join(quotes)
    if documents:
        texts = [documents[r.doc_id].text for r in item.relevant if r.doc_id in documents]
        return "\n".join(texts) or None
    return None


def _variant(item: GoldItem, kind: str, question: str, status: str, **meta: Any) -> GoldItem:
    tags = tuple(dict.fromkeys((*item.tags, kind)))
    return GoldItem(
        id=f"{item.id}~{kind.replace(':', '-')}",
        question=question,
        relevant=item.relevant,
        answer_contains=item.answer_contains,
        tags=tags,
        source="adversarial",
        status=status,
        parent=item.id,
        metadata={k: v for k, v in meta.items() if v is not None},
    )


def generate_variants(
    gold: GoldSet,
    kinds: Sequence[str],
    *,
    complete: Complete | None = None,
    seed: int = 0,
    documents: Mapping[str, Document] | None = None,
) -> VariantResult:
    """Make one variant of each kind per item (variants of variants are skipped).

    ``complete`` is needed for the LLM kinds. ``documents`` lets the ``vocab`` check
    use whole relevant documents when an item has no quote.

    >>> gold = GoldSet.from_records([{"id": "q", "question": "How do I uninstall Python?",
    ...                               "relevant": ["py.md"]}])
    >>> [v.id for v in generate_variants(gold, ["typo"]).items]
    ['q~typo']
    """
    kinds = parse_kinds(kinds)
    llm_kinds = [k for k in kinds if k != "typo"]
    if llm_kinds and complete is None:
        raise InputError(f"variant kinds {', '.join(llm_kinds)} need an LLM: configure the judge")
    result = VariantResult(items=[])
    parents = [item for item in gold if item.parent is None]
    jobs: list[tuple[GoldItem, str]] = []
    for item in parents:
        for kind in kinds:
            if kind == "typo":
                typo = make_typos(item.question, seed=seed)
                if typo == item.question:
                    result.dropped.append(f"{item.id}~typo: no word long enough to misspell")
                else:
                    result.items.append(_variant(item, "typo", typo, "accepted", seed=seed))
            else:
                jobs.append((item, kind))
    if jobs:
        assert complete is not None  # checked above
        made = asyncio.run(_rewrite_all(jobs, complete, documents))
        for (item, kind), outcome in zip(jobs, made, strict=True):
            if isinstance(outcome, GoldItem):
                result.items.append(outcome)
            else:
                result.dropped.append(f"{item.id}~{kind}: {outcome}")
    order = {item.id: i for i, item in enumerate(gold)}
    result.items.sort(key=lambda v: (order.get(v.parent or "", 0), kinds.index(v.tags[-1])))
    return result


async def _rewrite_all(
    jobs: Sequence[tuple[GoldItem, str]],
    complete: Complete,
    documents: Mapping[str, Document] | None,
) -> list[GoldItem | str]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(item: GoldItem, kind: str) -> GoldItem | str:
        async with gate:
            try:
                return await _rewrite(item, kind, complete, documents)
            except Exception as error:  # one failed call drops one variant, not the batch
                return f"LLM call failed: {error}"

    return list(await asyncio.gather(*(one(i, k) for i, k in jobs)))


async def _rewrite(
    item: GoldItem, kind: str, complete: Complete, documents: Mapping[str, Document] | None
) -> GoldItem | str:
    async def ask(prompt: Prompt, **fields: Any) -> str:
        reply = await complete(prompt, {"question": item.question, **fields})
        return " ".join(str(reply.get("rewrite") or "").split())

    if kind == "colloquial":
        text = await ask(COLLOQUIAL_PROMPT)
        prompt = COLLOQUIAL_PROMPT
    elif kind == "vocab":
        passage = _passage(item, documents)
        avoid = sorted(content_words(passage or item.question))
        prompt = VOCAB_PROMPT
        text = await ask(prompt, avoid=", ".join(avoid) or "(none)")
        clashes = vocab_clashes(text, passage) if passage else []
        if text and clashes:
            text = await ask(prompt, avoid=", ".join(sorted(set(avoid) | set(clashes))))
            clashes = vocab_clashes(text, passage) if passage else []
            if clashes:
                return f"rewrite still uses the passage's words {', '.join(clashes)}"
        if text:
            checked = passage is not None
            return _variant(item, kind, text, "candidate", prompt=prompt.key, checked=checked)
    else:
        lang = kind.split(":", 1)[1]
        prompt = TRANSLATE_PROMPT
        text = await ask(prompt, lang=lang)
    if not text:
        return "empty rewrite"
    if normalise(text) == normalise(item.question):
        return "rewrite identical to the question"
    return _variant(item, kind, text, "candidate", prompt=prompt.key)
