"""The terminal review flow of ``ragmeter review`` (decisions go through ``ragmeter.gold.review``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.panel import Panel

from ragmeter.cli._common import console
from ragmeter.gold.goldset import GoldItem
from ragmeter.gold.review import ReviewError, decide, load_candidates, pending

_KEYS = {"a": "accept", "e": "edit", "r": "reject", "s": "skip", "q": "quit"}
_PASSAGE_CHARS = 1_200  # of a retrieved chunk shown to the reviewer


def run_review(path: Path, *, include_skipped: bool = False, reviewer: str | None = None) -> None:
    """Show each pending item and write each decision to ``path`` at once."""
    out = console()
    todo = pending(load_candidates(path), include_skipped=include_skipped)
    if not todo:
        out.print(f"nothing to review in {path}")
        return
    done = 0
    try:
        for number, item in enumerate(todo, 1):
            _show(out, item, number, len(todo))
            if not _one(path, item, reviewer):
                break
            done += 1
    except (KeyboardInterrupt, click.Abort):
        out.print()
    left = len(pending(load_candidates(path), include_skipped=include_skipped))
    out.print(f"{done} decision(s) saved to {path}; {left} still to review")


def _show(out: Any, item: GoldItem, number: int, total: int) -> None:
    meta = item.metadata
    lines = [f"[bold]{item.question}[/bold]"]
    if meta.get("count"):
        lines.append(f"asked {meta['count']} time(s); other phrasings: {meta.get('variants')}")
    if meta.get("overlap") is not None:
        lines.append(f"overlap with the passage: {meta['overlap']}")
    for rel in item.relevant:
        where = rel.doc or rel.chunk
        lines.append(f"\n[cyan]{where}[/cyan] (grade {rel.grade})")
        if rel.quote:
            lines.append(f"  “{rel.quote}”")
    if item.answer_contains:
        lines.append(f"answer contains: {', '.join(item.answer_contains)}")
    for index, hit in enumerate(meta.get("retrieved") or [], 1):
        text = " ".join(str(hit.get("text") or "").split())[:_PASSAGE_CHARS]
        lines.append(f"\n[cyan][{index}] {hit['id']}[/cyan]\n  {text}")
    for comment in meta.get("comments") or []:
        lines.append(f"user said: {comment}")
    title = f"{number}/{total} · {item.id} · {item.source or ''} {', '.join(item.tags)}"
    out.print(Panel("\n".join(lines), title=title, title_align="left"))


def _one(path: Path, item: GoldItem, reviewer: str | None) -> bool:
    """Ask until one decision is written; False when the reviewer quits."""
    while True:
        key = click.prompt(
            "[a]ccept [e]dit [r]eject [s]kip [q]uit",
            type=click.Choice(list(_KEYS)),
            show_choices=False,
        )
        decision = _KEYS[key]
        if decision == "quit":
            return False
        fields: dict[str, Any] = {}
        if decision in ("accept", "edit") and not item.relevant:
            fields["relevant"] = _ask_relevant(item)
        if decision == "edit":
            fields["question"] = click.prompt("question", default=item.question)
            if item.relevant and "relevant" not in fields:
                docs = ", ".join(r.doc or r.chunk or "" for r in item.relevant)
                changed = click.prompt("relevant documents (comma-separated)", default=docs)
                if changed != docs:
                    fields["relevant"] = _split(changed)
            answers = click.prompt(
                "answer contains (comma-separated, '-' for none)",
                default=", ".join(item.answer_contains) or "-",
            )
            fields["answer_contains"] = [] if answers.strip() == "-" else _split(answers)
        try:
            decide(path, item.id, decision, reviewer=reviewer, **fields)
            return True
        except ReviewError as error:
            click.echo(f"Error: {error}", err=True)


def _ask_relevant(item: GoldItem) -> list[Any]:
    """Which retrieved chunk (by number) or document id holds the answer."""
    retrieved = item.metadata.get("retrieved") or []
    answer = click.prompt(
        "relevant: numbers of the retrieved chunks above and/or document ids "
        "(comma-separated, '-' for none)",
        default="-",
    )
    out: list[Any] = []
    for part in _split(answer):
        if part == "-":
            continue
        if part.isdigit() and 1 <= int(part) <= len(retrieved):
            # The document, not the chunk id or text: the service's chunk text may not be
            # the document's verbatim, and a document label survives any chunker.
            out.append({"doc": retrieved[int(part) - 1]["doc"]})
        else:
            out.append({"doc": part})
    return out


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]
