"""``ragmeter review``: accept, edit or reject gold candidates one at a time."""

from __future__ import annotations

from pathlib import Path

import click

_LLM_ENV = ("RAGMETER_JUDGE_BASE_URL", "RAGMETER_JUDGE_MODEL", "RAGMETER_JUDGE_API_KEY")


@click.command()
@click.argument("candidates", type=click.Path(path_type=Path))
@click.option("--all", "include_skipped", is_flag=True, help="Show skipped items again too.")
@click.option("--reviewer", help="Name recorded with each decision.")
def review(candidates: Path, include_skipped: bool, reviewer: str | None) -> None:
    """Review CANDIDATES: [a]ccept, [e]dit, [r]eject, [s]kip, [q]uit.

    Each decision is written to the file as it is made, so stopping (q or
    Ctrl-C) loses nothing; run the command again to continue.
    """
    from ragmeter.cli._review_flow import run_review

    run_review(candidates, include_skipped=include_skipped, reviewer=reviewer)
