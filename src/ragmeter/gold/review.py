"""Review gold candidates one decision at a time, and merge the accepted ones into a gold set.

A candidates file is a gold set file (YAML or JSONL) whose items carry
``status: candidate`` (written by ``ragmeter generate``, ``generate variants`` and
``flywheel export``). Each decision rewrites the whole file at once — a temporary
file in the same folder, then ``os.replace`` — so an interrupted review (Ctrl-C,
a crash) leaves either the old file or the new one, never half of one, and every
decision made so far is kept. A decision reads and rewrites the file under its lock
(``ragmeter.gold._write``), so decisions made at the same moment are all kept.

Decisions: ``accept`` (status ``accepted``), ``edit`` (change the question,
relevance or answer checks, then accept), ``reject`` (status ``rejected``) and
``skip`` (stays a candidate; the skip is recorded). The decision, its time and the
reviewer are kept under ``metadata.review``.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "c.yaml"
>>> save_items(path, [GoldItem(id="q1", question="Why?", relevant=[{"doc": "a.md"}],
...                            status="candidate")])
>>> decide(path, "q1", "accept").status
'accepted'
>>> load_candidates(path).items[0].status
'accepted'
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from ragmeter.errors import GoldSetError, ReviewError, located
from ragmeter.gold._write import locked, write_atomically
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import YAML_SUFFIXES, GoldItem, GoldSet
from ragmeter.gold.items import explain

__all__ = [
    "DECISIONS",
    "MergeResult",
    "ReviewError",
    "decide",
    "dump_items",
    "load_candidates",
    "merge_accepted",
    "pending",
    "save_items",
]

Decision = Literal["accept", "edit", "reject", "skip"]
DECISIONS: tuple[str, ...] = ("accept", "edit", "reject", "skip")
#: Known documents listed in the "no such document" message.
_SHOWN_DOCS = 10
_STATUS = {"accept": "accepted", "edit": "accepted", "reject": "rejected", "skip": "candidate"}


def load_candidates(path: str | Path) -> GoldSet:
    """Load a candidates file (any gold set file)."""
    return load_gold(path)


def pending(gold: GoldSet, *, include_skipped: bool = False) -> list[GoldItem]:
    """The items still to review: status ``candidate`` (or unset), skipped ones last or left out.

    >>> gold = GoldSet.from_records([{"id": "a", "question": "?", "status": "candidate"},
    ...                              {"id": "b", "question": "?", "status": "accepted"}])
    >>> [i.id for i in pending(gold)]
    ['a']
    """
    fresh = [i for i in gold if i.status in (None, "candidate") and not _skipped(i)]
    skipped = [i for i in gold if i.status in (None, "candidate") and _skipped(i)]
    return fresh + (skipped if include_skipped else [])


def _skipped(item: GoldItem) -> bool:
    review = item.metadata.get("review")
    return isinstance(review, dict) and review.get("decision") == "skip"


def save_items(path: str | Path, items: Iterable[GoldItem]) -> None:
    """Write items as a gold set file (YAML or JSONL by suffix), atomically.

    The text goes to a temporary file in the same folder, is flushed to disk, then
    replaces ``path`` in one ``os.replace``: readers and an interrupted writer see
    the old file or the new one, never a mix. An existing file keeps its permissions.
    """
    path = Path(path)
    write_atomically(path, dump_items(path, items))


def dump_items(path: Path, items: Iterable[GoldItem]) -> str:
    """The text of a gold set file of ``items``, YAML or JSONL by ``path``'s suffix."""
    records = GoldSet(items).to_records()
    suffix = path.suffix.lower()
    if suffix in YAML_SUFFIXES:
        import yaml

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return str(yaml.dump(records, Dumper=dumper, sort_keys=False, allow_unicode=True))
    if suffix == ".jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    raise GoldSetError(located("gold set", path, None, "save as .yaml, .yml or .jsonl"))


def decide(
    path: str | Path,
    item_id: str,
    decision: str,
    *,
    question: str | None = None,
    relevant: Sequence[Any] | None = None,
    answer_contains: Sequence[str] | None = None,
    reviewer: str | None = None,
    note: str | None = None,
    known_docs: Collection[str] | None = None,
) -> GoldItem:
    """Apply one decision to item ``item_id`` of the candidates file and write it at once.

    ``edit`` takes the new ``question``, ``relevant`` (judgments as in a gold file:
    ``["faq.md"]``, ``[{"doc": "faq.md", "quote": "..."}]``) and ``answer_contains``;
    what is not given stays. ``accept`` also takes ``relevant`` — how a reviewer marks
    which retrieved chunk of a flywheel candidate was the relevant one. An item is
    only accepted with at least one relevance judgment, since one without can never
    be found. With ``known_docs``, a judgment naming any other document is refused
    (issue 15.4: a typo in an edit would make a question nothing can ever find).
    Returns the updated item.

    >>> decide("candidates.yaml", "syn-3f2a", "edit", question="How long is the refund window?")  # doctest: +SKIP
    """
    if decision not in DECISIONS:
        raise ReviewError(f"unknown decision {decision!r}; use one of {', '.join(DECISIONS)}")
    path = Path(path)
    # Read, change and rewrite under the file's lock: a decision made at the same moment
    # (another reviewer, another tab) is read here, not overwritten (issue 27.2).
    with locked(path):
        return _decide(path, item_id, decision, question=question, relevant=relevant,
                       answer_contains=answer_contains, reviewer=reviewer, note=note,
                       known_docs=known_docs)  # fmt: skip


def _decide(
    path: Path,
    item_id: str,
    decision: str,
    *,
    question: str | None,
    relevant: Sequence[Any] | None,
    answer_contains: Sequence[str] | None,
    reviewer: str | None,
    note: str | None,
    known_docs: Collection[str] | None,
) -> GoldItem:
    gold = load_candidates(path)
    if item_id not in gold:
        raise ReviewError(located("candidates", path, f"item {item_id}", "no such item"))
    old = gold[item_id]
    record = old.model_dump(exclude_none=True)
    if decision in ("edit", "accept"):
        if question is not None:
            record["question"] = question
        if relevant is not None:
            record["relevant"] = list(relevant)
        if answer_contains is not None:
            record["answer_contains"] = list(answer_contains)
    elif any(v is not None for v in (question, relevant, answer_contains)):
        raise ReviewError(f"{decision}: question, relevant and answer_contains need edit")
    review: dict[str, Any] = {"decision": decision, "at": _now()}
    if reviewer:
        review["reviewer"] = reviewer
    if note:
        review["note"] = note
    if decision == "edit":
        review["original_question"] = old.question
    record["metadata"] = {**old.metadata, "review": review}
    record["status"] = _STATUS[decision]
    try:
        new = GoldItem.model_validate(record)
    except ValidationError as error:
        message = explain(error)
        raise ReviewError(located("candidates", path, f"item {item_id}", message)) from None
    if known_docs is not None and relevant is not None:
        unknown = [d for d in dict.fromkeys(r.doc_id for r in new.relevant) if d not in known_docs]
        if unknown:
            listed = ", ".join(sorted(known_docs)[:_SHOWN_DOCS]) or "none"
            raise ReviewError(
                located(
                    "candidates",
                    path,
                    f"item {item_id}",
                    f"no document {unknown[0]!r}: name one this candidate retrieved or "
                    f"already names ({listed}), or start the dashboard with --corpus DIR "
                    "to name any document of the corpus",
                )
            )
    if new.status == "accepted" and not new.relevant:
        raise ReviewError(
            located(
                "candidates",
                path,
                f"item {item_id}",
                "cannot accept an item without relevance: mark the relevant document "
                "(edit, or accept with relevant=...), or reject it",
            )
        )
    save_items(path, [new if item.id == item_id else item for item in gold])
    return new


@dataclass(frozen=True)
class MergeResult:
    """What ``merge_accepted`` did."""

    added: tuple[str, ...]
    left_out: int  # candidates not accepted (pending, skipped, rejected)
    total: int  # items in the gold file afterwards


def merge_accepted(candidates: str | Path, into: str | Path) -> MergeResult:
    """Append the accepted items of ``candidates`` to the gold set file ``into``.

    ``into`` is created when it does not exist. An accepted id that is already in
    ``into`` is refused (every clash is listed and nothing is written); rename the
    candidate or drop it. Merged items lose ``status`` and keep the rest, including
    ``metadata.review``.

    >>> merge_accepted("candidates.yaml", "gold.yaml")  # doctest: +SKIP
    MergeResult(added=('syn-3f2a',), left_out=4, total=41)
    """
    into = Path(into)
    with locked(into):
        return _merge(candidates, into)


def _merge(candidates: str | Path, into: Path) -> MergeResult:
    cand = load_candidates(candidates)
    accepted = [item for item in cand if item.status == "accepted"]
    existing = list(load_gold(into)) if into.exists() else []
    ids = {item.id for item in existing}
    clashes = [item.id for item in accepted if item.id in ids]
    if clashes:
        listed = ", ".join(clashes[:20]) + (" ..." if len(clashes) > 20 else "")
        raise ReviewError(
            f"cannot merge {candidates} into {into}: {len(clashes)} accepted item id(s) "
            f"already in {into}: {listed}. Rename them in {candidates} (or reject them) "
            "and merge again; nothing was written"
        )
    merged = existing + [item.model_copy(update={"status": None}) for item in accepted]
    if accepted:
        save_items(into, merged)
    return MergeResult(
        added=tuple(item.id for item in accepted),
        left_out=len(cand) - len(accepted),
        total=len(merged),
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
