"""Issue 7: adversarial variants — the seeded typo generator and the LLM rewrite plumbing."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.errors import InputError
from ragmeter.feedback.variants import (
    generate_variants,
    keyboard_neighbours,
    make_typos,
    parse_kinds,
    vocab_clashes,
)
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge.prompting import Prompt


def levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


GOLD = GoldSet.from_records(
    [
        {
            "id": "refund",
            "question": "How long is the refund window for annual plans?",
            "relevant": [{"doc": "billing.md", "quote": "Refunds are accepted within 30 days."}],
            "answer_contains": ["30 days"],
            "tags": ["billing"],
        },
        {"id": "short", "question": "Why?", "relevant": ["faq.md"]},
    ]
)


def test_typos_are_deterministic_and_seeded() -> None:
    """Issue 7: the same text and seed give the same typos; other seeds give others."""
    text = "How do I configure the package index credentials for private registries?"
    assert make_typos(text, seed=7) == make_typos(text, seed=7)
    outputs = {make_typos(text, seed=s) for s in range(20)}
    assert len(outputs) > 10 and text not in outputs


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEF ?,.-", max_size=80), st.integers(0, 99))
def test_typo_edit_distance(text: str, seed: int) -> None:
    """Issue 7: each changed word is one edit (a swap is two) and the rest is untouched."""
    out = make_typos(text, seed=seed)
    long_words = [w for w in __import__("re").findall(r"[A-Za-z]{4,}", text)]
    if not long_words:
        assert out == text
        return
    changed = min(len(long_words), max(1, round(len(long_words) * 0.15)))
    distance = levenshtein(text, out)
    assert 1 <= distance <= 2 * changed
    assert out.split(" ")[0][:1] == text.split(" ")[0][:1]


def test_keyboard_neighbours_are_adjacent_keys() -> None:
    """Issue 7: neighbour swaps use keys next to the intended one."""
    near = keyboard_neighbours()
    assert set(near["s"]) == set("awedxz")
    assert all(a in near[b] for a in near for b in near[a])  # adjacency is symmetric


def test_typo_variants_keep_parent_relevance() -> None:
    """Issue 7: a variant keeps relevance and answer checks, gets kind tag and parent."""
    result = generate_variants(GOLD, ["typo"], seed=3)
    [variant] = result.items
    parent = GOLD["refund"]
    assert variant.id == "refund~typo" and variant.parent == "refund"
    assert variant.relevant == parent.relevant
    assert variant.answer_contains == parent.answer_contains
    assert variant.tags == ("billing", "typo") and variant.source == "adversarial"
    assert variant.question != parent.question
    assert result.dropped == ["short~typo: no word long enough to misspell"]


def test_parse_kinds() -> None:
    """Issue 7: kinds are typo, colloquial, vocab and lang:xx."""
    assert parse_kinds("typo,lang:es, vocab") == ["typo", "lang:es", "vocab"]
    with pytest.raises(InputError, match="unknown variant kind 'slang'"):
        parse_kinds("typo,slang")
    with pytest.raises(InputError, match="need an LLM"):
        generate_variants(GOLD, ["colloquial"])


def test_vocab_clashes_use_stems() -> None:
    """Issue 7: the vocab check compares stemmed content words with the quoted passage."""
    passage = "Refunds are accepted within 30 days."
    assert vocab_clashes("how long can I get my money back", passage) == []
    assert vocab_clashes("when do refund requests close", passage) == ["refund"]


class ScriptedModel:
    """A stand-in model *function* at the documented seam (not a mock of a server)."""

    def __init__(self, replies: Mapping[str, list[str]]) -> None:
        self.replies = {k: list(v) for k, v in replies.items()}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, prompt: Prompt, fields: Mapping[str, Any]) -> Mapping[str, Any]:
        await asyncio.sleep(0)
        self.calls.append((prompt.key, dict(fields)))
        return {"rewrite": self.replies[prompt.name].pop(0)}


def test_llm_variants_and_vocab_retry() -> None:
    """Issue 7: LLM kinds are candidates; a vocab rewrite reusing passage words is retried once."""
    model = ScriptedModel(
        {
            "variant-colloquial": ["refund window yearly plan??"],
            "variant-vocab": ["when do refunds stop being accepted", "how long to get money back"],
            "variant-lang": ["¿Cuánto dura el plazo de reembolso del plan anual?"],
        }
    )
    gold = GoldSet([GOLD["refund"]])
    result = generate_variants(gold, ["colloquial", "vocab", "lang:es"], complete=model)
    by_id = {v.id: v for v in result.items}
    assert set(by_id) == {"refund~colloquial", "refund~vocab", "refund~lang-es"}
    assert by_id["refund~vocab"].question == "how long to get money back"
    assert by_id["refund~vocab"].metadata == {"prompt": "variant-vocab@v1", "checked": True}
    assert all(v.status == "candidate" and v.parent == "refund" for v in result.items)
    assert by_id["refund~lang-es"].tags[-1] == "lang:es"
    vocab_calls = [f for key, f in model.calls if key == "variant-vocab@v1"]
    assert "refund" in vocab_calls[1]["avoid"]  # the retry names the clashing word
    assert len(vocab_calls) == 2


def test_vocab_variant_dropped_when_it_keeps_clashing() -> None:
    """Issue 7: a rewrite that still shares the passage's words is dropped with a reason."""
    model = ScriptedModel({"variant-vocab": ["refund accepted when", "refunds accepted until"]})
    result = generate_variants(GoldSet([GOLD["refund"]]), ["vocab"], complete=model)
    assert result.items == []
    assert result.dropped == ["refund~vocab: rewrite still uses the passage's words accept, refund"]


def test_failed_llm_call_drops_one_variant() -> None:
    """Issue 7: a failing call is reported per variant, the others are kept."""

    async def broken(prompt: Prompt, fields: Mapping[str, Any]) -> Mapping[str, Any]:
        raise TimeoutError("model timed out")

    result = generate_variants(GoldSet([GOLD["refund"]]), ["typo", "colloquial"], complete=broken)
    assert [v.id for v in result.items] == ["refund~typo"]
    assert result.dropped == ["refund~colloquial: LLM call failed: model timed out"]
