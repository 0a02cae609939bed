"""``ragmeter gold ...``: check a gold set before anything is evaluated against it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ragmeter.cli._common import console, follow_symlinks_option, open_store, store_option
from ragmeter.cli._safe import safe
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.imports.passages import DEFAULT_FUZZY_THRESHOLD
from ragmeter.gold.imports.sources import IMPORT_SOURCES

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
    from ragmeter.evaluation.setup import one_spelling

    gold_set = load_gold(file)
    loaded = None
    if corpus_path is not None:
        from ragmeter.corpus import load_corpus

        loaded = load_corpus(corpus_path, follow_symlinks=follow_symlinks).documents
    # One document spelled two ways: read as one (a note), or named when no corpus can tell.
    spelled, notes, warnings = one_spelling(gold_set, loaded)
    if loaded is not None:
        from ragmeter.evaluation.setup import gold_documents

        # Ids read as `eval` reads them: ./a.md or a\b.md name the corpus's a.md, a/b.md.
        documents = gold_documents(spelled, loaded) or {}
        spelled.quote_spans(documents)
        missing = spelled.missing_docs(documents.keys())
        if missing:
            warnings.append(_missing_warning(missing))
    from ragmeter.evaluation.unknowns import nothing_to_find

    warnings += nothing_to_find(gold_set)
    summary = gold_set.summary()
    from ragmeter.compare.power import gold_power

    plan = gold_power(gold_set, None)  # issue 26: what the set can detect, before any run
    if as_json:
        payload = {"path": str(file), "hash": gold_set.hash, "summary": summary}
        payload["power"] = plan.to_dict()
        click.echo(json.dumps(payload | {"notes": notes, "warnings": warnings}, indent=2))
    else:
        _print_summary(gold_set, summary, _detectable_row(plan.detectable))
    for note in notes:
        click.echo(f"Note: {note}", err=True)
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)


@gold.command("power")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--run",
    "run_ref",
    metavar="RUN",
    default=None,
    help="Take the per-question spread from this stored run (else an assumed 0.5).",
)
@click.option("-m", "--metric", default="hit@5", show_default=True, help="The metric to plan for.")
@click.option(
    "--effect",
    type=click.FloatRange(min=0, min_open=True, max=1),
    default=0.10,
    show_default=True,
    help="The drop a team wants to detect.",
)
@click.option(
    "--power",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
    help="How often it should be detected.",
)
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def power(
    file: Path,
    run_ref: str | None,
    metric: str,
    effect: float,
    power: float,
    store_url: str | None,
    as_json: bool,
) -> None:
    """What changes gold set FILE can detect, and how many questions (per tag) a team
    needs to detect a drop of --effect with --power.

    Example: ragmeter gold power gold.yaml --run main --effect 0.10
    """
    from ragmeter.compare.power import gold_power

    gold_set = load_gold(file)
    if run_ref is None:
        plan = gold_power(gold_set, None, metric=metric, effect=effect, power=power)
    else:
        with open_store(store_url) as store:
            plan = gold_power(gold_set, store, run_ref, metric=metric, effect=effect, power=power)
    if as_json:
        click.echo(json.dumps(plan.to_dict(), indent=2))
        return
    for line in plan.lines():
        console().print(safe(line), soft_wrap=True)


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


def _detectable_row(detectable: float | None) -> str:
    if detectable is None:
        return "none: too few questions (gold power)"
    return f"{detectable:.2f} at 80% power, assumed spread 0.5 (gold power)"


def _print_summary(gold_set: GoldSet, summary: dict[str, Any], detectable: str) -> None:
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
        ("items with only grade-0 judgments", str(len(summary["items_with_nothing_to_find"]))),
        ("items with answer checks", str(summary["items_with_answer_checks"])),
        ("quote-anchored judgments", str(summary["quote_relevance"])),
        ("chunk-id judgments", str(summary["chunk_relevance"])),
        ("items per grade", _counts(summary["items_per_grade"])),
        ("sources", _counts(summary["sources"])),
        ("tags", _counts(summary["tags"])),
        ("detectable drop", detectable),
    ]
    for row in rows:
        table.add_row(*row)
    console(soft_wrap=True, width=None, highlight=True).print(table)


@gold.command()
@click.argument("candidates", type=click.Path(path_type=Path))
@click.argument("into", type=click.Path(path_type=Path))
def merge(candidates: Path, into: Path) -> None:
    """Append the accepted items of CANDIDATES to the gold set INTO.

    Only items with status "accepted" are taken (see ``ragmeter review``); an id
    already in INTO is refused and nothing is written. INTO is created if missing.
    """
    from ragmeter.formats.output import output_errors
    from ragmeter.gold.review import merge_accepted

    with output_errors(into, kind="gold set"):
        result = merge_accepted(candidates, into)
    click.echo(
        f"merged {len(result.added)} accepted item(s) into {into} ({result.total} items); "
        f"{result.left_out} not accepted left in {candidates}"
    )


@gold.command("import")
@click.option(
    "--from",
    "source",
    type=click.Choice(IMPORT_SOURCES),
    required=True,
    help="The tool or format FILE comes from.",
)
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(path_type=Path),
    help="Corpus to locate each reference passage in (exact, folded, then fuzzy).",
)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Gold set to write.")
@click.option(
    "--map",
    "field_map",
    multiple=True,
    metavar="FIELD=NAME,...",
    help=(
        "Read FIELD (id, question, answer or reference_answer, passage or quote, doc, tags, "
        "relevant) from NAME (dotted for nesting)."
    ),
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True),
    default=DEFAULT_FUZZY_THRESHOLD,
    show_default=True,
    help="Least share of a passage's words a fuzzy match must hold.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what became of each passage as JSON.")
def import_(
    source: str,
    file: Path,
    corpus_path: Path | None,
    out: Path,
    field_map: tuple[str, ...],
    threshold: float,
    as_json: bool,
) -> None:
    """Import a RAGAS, DeepEval, LangSmith, CSV or JSONL test set FILE as a gold set.

    Reference passages become quote-anchored judgments {doc, quote}; fuzzy matches are listed
    with their score; passages found nowhere are listed and kept in the item's metadata.
    Every problem in FILE is reported at once (exit 2), and then nothing is written.
    """
    from ragmeter.gold.imports import import_gold, parse_map, write_records

    documents = None
    if corpus_path is not None:
        from ragmeter.corpus import load_corpus

        documents = load_corpus(corpus_path).documents
    mapping = parse_map(field_map)
    root = corpus_path if corpus_path is not None and corpus_path.is_dir() else None
    result = import_gold(
        file, source, documents=documents, mapping=mapping, threshold=threshold, root=root
    )
    write_records(out, result.records)
    fuzzy = [e for e in result.located if e.match.method == "fuzzy"]
    if as_json:
        payload = {
            "out": str(out),
            "counts": result.counts(),
            "fuzzy": [
                {
                    "id": e.item_id,
                    "doc": e.match.doc,
                    "score": e.match.score,
                    "quote": e.match.quote,
                }
                for e in fuzzy
            ],
            "not_found": [{"id": i, "passage": p} for i, p in result.unlocated],
            "warnings": result.warnings,
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    counts = result.counts()
    click.echo(
        f"wrote {counts['items']} items to {out}: passages {counts['exact']} exact, "
        f"{counts['folded']} folded, {counts['fuzzy']} fuzzy, {counts['unverified']} unverified "
        f"(no --corpus), {counts['not_found']} not found"
    )
    for e in fuzzy:
        click.echo(
            f"fuzzy {e.match.score:.3f} {e.item_id} -> {e.match.doc}: {e.match.quote[:80]!r}"
        )
    for item_id, passage in result.unlocated:
        click.echo(f"Warning: {item_id}: passage not found: {passage[:120]!r}", err=True)
    for warning in result.warnings:
        click.echo(f"Warning: {warning}", err=True)


@gold.command("edits")
@store_option
@click.option("--run", "run_ref", metavar="RUN", default=None, help="Only this run's edits.")
@click.option("--json", "as_json", is_flag=True, help="Print the edits as JSON.")
def edits_(store_url: str | None, run_ref: str | None, as_json: bool) -> None:
    """List the gold edits made on the dashboard from missed questions, oldest first.

    Each edit says who made it and when, on which run and question, and what it
    changes: a document (or a quoted passage of it) relevant with a grade, or an
    expected document that is not relevant. ragmeter gold apply-edits writes them.
    """
    with open_store(store_url, read_only=True) as store:
        run_id = store.get_run(run_ref).id if run_ref is not None else None
        found = store.gold_edits(run_id)
    if as_json:
        click.echo(
            json.dumps({"edits": [e.to_dict() for e in found]}, indent=2, ensure_ascii=False)
        )
        return
    if not found:
        click.echo("no gold edits" + (f" on run {run_id}" if run_id is not None else ""))
    for edit in found:
        click.echo(f"{edit.created}  {safe(edit.describe())}")


@gold.command("apply-edits")
@click.argument("file", type=click.Path(path_type=Path))
@store_option
@click.option("--run", "run_ref", metavar="RUN", default=None, help="Only this run's edits.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the result here.")
@click.option("--in-place", is_flag=True, help="Rewrite FILE itself.")
@click.option("--exclude", multiple=True, type=int, metavar="ID", help="Leave this edit out.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was applied as JSON.")
def apply_edits(
    file: Path,
    store_url: str | None,
    run_ref: str | None,
    out: Path | None,
    in_place: bool,
    exclude: tuple[int, ...],
    dry_run: bool,
    as_json: bool,
) -> None:
    """Write the stored gold edits into the gold set FILE (YAML or JSONL).

    Other items stay as they are. Edits that disagree (two grades for one passage, a
    document both relevant and wrong) are listed and nothing is written: leave one out
    with --exclude ID. Applying the same edits again changes nothing.
    """
    from ragmeter.formats.output import output_errors
    from ragmeter.gold.edits import apply_edits_to_file, select_edits

    if out is not None and in_place:
        raise click.UsageError("give --out FILE or --in-place, not both")
    if out is None and not in_place and not dry_run:
        raise click.UsageError("give --out FILE or --in-place (or --dry-run to only look)")
    with open_store(store_url, read_only=True) as store:
        run_id = store.get_run(run_ref).id if run_ref is not None else None
        chosen = select_edits(store.gold_edits(), run_id=run_id, exclude=exclude)
    with output_errors(out or file, kind="gold set"):
        result = apply_edits_to_file(file, chosen, out=out, dry_run=dry_run)
    if as_json:
        click.echo(
            json.dumps(result.to_dict() | {"dry_run": dry_run}, indent=2, ensure_ascii=False)
        )
    else:
        target = "nothing written (dry run)" if dry_run else f"wrote {out or file}"
        verb = "would apply" if dry_run else "applied"
        click.echo(f"{verb} {len(result.applied)} gold edit(s) to {file}; {target}")
        for edit in result.applied:
            click.echo(f"  {safe(edit.describe())}")
        if result.unchanged:
            click.echo(f"{len(result.unchanged)} already in the gold set:")
            for edit in result.unchanged:
                click.echo(f"  {safe(edit.describe())}")
    for warning in result.warnings:
        click.echo(f"Warning: {safe(warning)}", err=True)
