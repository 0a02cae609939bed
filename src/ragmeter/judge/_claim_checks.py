"""Entailment of claims by passages through a model: batched per passage, cached per pair.

One request asks about up to ``MAX_CLAIMS_PER_CHECK`` claims against one passage (the
model reads the passage once); each answer is then cached on its own, under the key of
``(claim, passage)`` and the repeat, so a claim met again with the same chunk — in another
question, another run, a later pass — costs nothing, and changing one claim re-asks only
that claim. With ``repeats = N`` each pair is decided N times (cached per repeat) and the
decision is the majority (ties: not entailed, see :mod:`ragmeter.judge.stability`).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.judge._types import JudgeRequest, Usage, request_key
from ragmeter.judge.prompts import CLAIM_CHECK, MAX_CLAIMS_PER_CHECK
from ragmeter.judge.stability import Stability, stability

__all__ = ["PairChecks", "check_pairs", "once"]

Pair = tuple[str, str]  # (claim, premise)


@dataclass
class PairChecks:
    """Every pair's decision (majority over repeats), the failed pairs and the votes."""

    entailed: dict[Pair, bool] = field(default_factory=dict)
    errors: dict[Pair, str] = field(default_factory=dict)
    stability: dict[Pair, Stability] = field(default_factory=dict)


def once(client: Any) -> Any:
    """A copy of ``client`` that sends each request once, with the same cache and executor."""
    single = copy.copy(client)  # JudgeClient.__copy__ keeps the cache and the executor
    single.repeats = 1
    return single


def _numbered(claims: Sequence[str]) -> str:
    return "\n".join(f"{i}. {claim}" for i, claim in enumerate(claims, start=1))


def _key(client: Any, pair: Pair, repeat: int) -> str:
    return request_key(
        client.model,
        CLAIM_CHECK.version,
        {"claim": pair[0], "premise": pair[1]},
        temperature=client.temperature,
        seed=client.seed,
        repeat=repeat,
    )


def _send(sender: Any, requests: list[JudgeRequest], sizes: list[int], usage: Usage) -> list[Any]:
    """Send the requests grouped by their number of claims, each group with a schema that
    asks for exactly that many values (servers that enforce schemas, such as llama.cpp's,
    then cannot return a list of the wrong length); results come back in request order."""
    out: list[Any] = [None] * len(requests)
    for size in sorted(set(sizes)):
        picked = [i for i, n in enumerate(sizes) if n == size]
        entailed = {**CLAIM_CHECK.schema["properties"]["entailed"], "minItems": size}
        schema = {**CLAIM_CHECK.schema, "properties": {"entailed": {**entailed, "maxItems": size}}}
        results, spent = sender.judge_many(
            [requests[i] for i in picked], schema=schema, prompt_version=CLAIM_CHECK.version
        )
        usage.add(spent)
        for i, result in zip(picked, results, strict=True):
            out[i] = result
    return out


def check_pairs(client: Any, pairs: Sequence[Pair], usage: Usage) -> PairChecks:
    """Decide every ``(claim, premise)`` pair; requests and cache hits are added to ``usage``.

    A pair that fails in any repeat is an error (a majority of the survivors would be a
    smaller vote than the one configured), as in ``JudgeClient``.
    """
    unique = list(dict.fromkeys(pairs))
    # pair -> its vote in each repeat, filled from the cache or a reply (issue 17.4)
    votes: dict[Pair, list[bool | None]] = {pair: [None] * client.repeats for pair in unique}
    out = PairChecks()
    # The pair cache is ours, so the batch request is not cached; the copy keeps the
    # executor, so with executor="ray" the checks run on the workers.
    sender = copy.copy(client)
    sender.cache, sender.repeats = None, 1
    batches: list[tuple[int, str, list[str]]] = []  # (repeat, premise, claims)
    for repeat in range(client.repeats):
        missing: dict[str, list[str]] = defaultdict(list)
        for pair in unique:
            hit = client.cache.judge_cache_get(_key(client, pair, repeat)) if client.cache else None
            if hit is not None and isinstance(hit.get("entailed"), bool):
                usage.cached += 1
                votes[pair][repeat] = hit["entailed"]
            else:
                missing[pair[1]].append(pair[0])
        batches += [
            (repeat, premise, claims[start : start + MAX_CLAIMS_PER_CHECK])
            for premise, claims in missing.items()
            for start in range(0, len(claims), MAX_CLAIMS_PER_CHECK)
        ]
    # Every repeat's checks go out as one batch: on an executor they spread together.
    requests = [
        JudgeRequest(
            id=str(number),
            messages=CLAIM_CHECK.messages(premise=premise, claims=_numbered(claims)),
            inputs={"premise": premise, "claims": claims, "repeat": repeat},
        )
        for number, (repeat, premise, claims) in enumerate(batches)
    ]
    results = _send(sender, requests, [len(claims) for _, _, claims in batches], usage)
    for result, (repeat, premise, claims) in zip(results, batches, strict=True):
        answers = (result.value or {}).get("entailed")
        if not isinstance(answers, list) or len(answers) != len(claims):
            got = "no reply" if answers is None else f"{len(answers)} values"
            problem = result.error or f"{got} for {len(claims)} claims"
            for claim in claims:
                out.errors.setdefault((claim, premise), problem)
            continue
        for claim, answer in zip(claims, answers, strict=True):
            votes[(claim, premise)][repeat] = bool(answer)
            if client.cache is not None:
                client.cache.judge_cache_put(
                    _key(client, (claim, premise), repeat),
                    model=client.model,
                    prompt_version=CLAIM_CHECK.version,
                    value={"entailed": bool(answer)},
                )
    for pair in unique:
        if pair in out.errors:
            continue
        cast = [vote for vote in votes[pair] if vote is not None]
        if len(cast) < client.repeats:  # not expected: every repeat is a hit, a vote or an error
            out.errors[pair] = f"{client.repeats - len(cast)} of {client.repeats} repeats undecided"
            continue
        decided = stability(cast)
        out.entailed[pair] = bool(decided.label)
        if client.repeats > 1:
            out.stability[pair] = decided
    return out
