"""``ragmeter flywheel``: production queries out as gold candidates, and back in."""

from __future__ import annotations

from pathlib import Path

import click

from ragmeter.cli._common import store_option

_LLM_ENV = ("RAGMETER_JUDGE_BASE_URL", "RAGMETER_JUDGE_MODEL", "RAGMETER_JUDGE_API_KEY")


@click.group()
def flywheel() -> None:
    """Turn failed production queries into gold candidates."""


@flywheel.command("export")
@click.option("--since", default=None, metavar="DURATION", help="e.g. 7d, 12h (default: all).")
@click.option("--negative-only", is_flag=True, help="Only thumbs-down queries.")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Candidates file.")
@store_option
def export(since: str | None, negative_only: bool, out: Path, store_url: str | None) -> None:
    """Write failed queries as candidates, most frequent first."""
    from ragmeter.cli._common import open_store
    from ragmeter.feedback.flywheel import export_candidates, parse_duration
    from ragmeter.formats.output import output_errors
    from ragmeter.gold.review import save_items

    window = parse_duration(since) if since else None
    with open_store(store_url) as store:
        items = export_candidates(store, since=window, negative_only=negative_only)
    with output_errors(out, kind="candidates"):
        save_items(out, items)
    total = sum(int(item.metadata["count"]) for item in items)
    click.echo(f"{len(items)} candidates ({total} failed queries) written to {out}")


@flywheel.command("import")
@click.argument("file", type=click.Path(path_type=Path))
@store_option
def import_(file: Path, store_url: str | None) -> None:
    """Import logged queries and feedback from a JSONL FILE (all lines or none)."""
    from ragmeter.cli._common import open_store
    from ragmeter.feedback.querylog import import_jsonl

    with open_store(store_url) as store:
        queries, feedback, skipped = import_jsonl(file, store)
    click.echo(f"imported {queries} queries and {feedback} feedback rows")
    if skipped:
        click.echo(f"skipped {skipped} queries whose id was already stored", err=True)
