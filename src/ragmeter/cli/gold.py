"""``ragmeter gold ...``: check a gold set before anything is evaluated against it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ragmeter.cli._common import follow_symlinks_option
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldSet

_SHOWN_MISSING = 10  # missing documents named in the warning before "and N more"


@click.group()
def gold() -> None:
    """Work with gold sets (questions and the documents that answer them)."""


@gold.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(path_type=Path),
    help="Corpus to check against: quotes must be found, missing documents are listed.",
)
@follow_symlinks_option
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def check(file: Path, corpus_path: Path | None, follow_symlinks: bool, as_json: bool) -> None:
    """Validate FILE (YAML, JSON, JSONL or a BEIR folder) and summarize it.

    Exits 2 with one message naming the file, line or item and field on the
    first problem; with --corpus, a quote not found in its document is a problem
    too and documents missing from the corpus are listed in a warning.
    """
    gold_set = load_gold(file)
    warnings: list[str] = []
    if corpus_path is not None:
        from ragmeter.corpus import load_corpus

        documents = load_corpus(corpus_path, follow_symlinks=follow_symlinks).documents
        gold_set.quote_spans(documents)
        missing = gold_set.missing_docs(documents.keys())
        if missing:
            warnings.append(_missing_warning(missing))
    summary = gold_set.summary()
    if as_json:
        payload = {"path": str(file), "hash": gold_set.hash, "summary": summary}
        click.echo(json.dumps(payload | {"warnings": warnings}, indent=2))
    else:
        _print_summary(gold_set, summary)
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)


def _missing_warning(missing: dict[str, list[str]]) -> str:
    shown = [
        f"{doc} (item{'s' * (len(ids) > 1)} {', '.join(ids)})"
        for doc, ids in list(missing.items())[:_SHOWN_MISSING]
    ]
    more = f", and {len(missing) - _SHOWN_MISSING} more" if len(missing) > _SHOWN_MISSING else ""
    count = f"{len(missing)} document{'s' * (len(missing) > 1)}"
    return f"{count} named by the gold set not in the corpus: {'; '.join(shown)}{more}"


def _counts(counts: dict[Any, int]) -> str:
    return ", ".join(f"{key}: {value}" for key, value in counts.items()) or "none"


def _print_summary(gold_set: GoldSet, summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    judged = dict(summary["judged_per_item"])
    if float(judged["median"]).is_integer():
        judged["median"] = int(judged["median"])
    table = Table(title=f"gold set {gold_set.path}: OK", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    rows = [
        ("items", str(summary["items"])),
        ("hash", gold_set.hash[:12]),
        (
            "judged per question",
            f"min {judged['min']}, median {judged['median']}, max {judged['max']}",
        ),
        ("items without judgments", str(summary["items_without_judgments"])),
        ("items with answer checks", str(summary["items_with_answer_checks"])),
        ("quote-anchored judgments", str(summary["quote_relevance"])),
        ("chunk-id judgments", str(summary["chunk_relevance"])),
        ("items per grade", _counts(summary["items_per_grade"])),
        ("sources", _counts(summary["sources"])),
        ("tags", _counts(summary["tags"])),
    ]
    for row in rows:
        table.add_row(*row)
    Console(soft_wrap=True).print(table)


@gold.command()
@click.argument("candidates", type=click.Path(path_type=Path))
@click.argument("into", type=click.Path(path_type=Path))
def merge(candidates: Path, into: Path) -> None:
    """Append the accepted items of CANDIDATES to the gold set INTO.

    Only items with status "accepted" are taken (see ``ragmeter review``); an id
    already in INTO is refused and nothing is written. INTO is created if missing.
    """
    from ragmeter.gold.review import merge_accepted

    result = merge_accepted(candidates, into)
    click.echo(
        f"merged {len(result.added)} accepted item(s) into {into} ({result.total} items); "
        f"{result.left_out} not accepted left in {candidates}"
    )
