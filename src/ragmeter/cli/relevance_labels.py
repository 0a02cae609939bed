"""``ragmeter judge relevance-labels``: people grade the chunks the judge graded (issue 17.2)."""

from __future__ import annotations

from pathlib import Path

import click

from ragmeter.cli._common import console, json_option, open_store, print_json, store_option
from ragmeter.cli._labels import export_options


@click.group("relevance-labels")
def relevance_labels() -> None:
    """People's grades for judge-graded chunks: corrected judge-filled metrics.

    Export a run's judge-graded chunks (grade: null, never the judge's grade), fill in
    0-3, import. A run rescored with `judge relevance --fill-with-judge` then gets
    corrected estimates with 95% intervals. The correction assumes the labelled
    questions are a random sample: export with --sample and label every question.
    """


@relevance_labels.command("export")
@export_options("among those with judge-graded chunks", "Only questions not yet fully labelled.")
def export(
    run_ref: str,
    out: Path,
    sample: int | None,
    seed: int,
    unlabelled_only: bool,
    force: bool,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Write RUN's judge-graded chunks to a YAML file for people to grade 0-3."""
    from ragmeter.cli._safe import safe
    from ragmeter.judging.relevance_labels import export_relevance_labels

    with open_store(store_url, read_only=True) as store:
        result = export_relevance_labels(
            store,
            run_ref,
            out,
            sample=sample,
            seed=seed,
            unlabelled_only=unlabelled_only,
            overwrite=force,
        )
    if as_json:
        print_json(result.to_dict())
        return
    console().print(
        f"run {result.run.id} ({safe(result.run.name)}): {result.questions} question(s), "
        f"{result.chunks} chunk(s) of {result.eligible} eligible question(s) written to "
        f"{safe(str(result.path))}"
    )


@relevance_labels.command("import")
@click.argument("run_ref", metavar="RUN")
@click.argument("file", type=click.Path(path_type=Path))
@store_option
@json_option
def import_command(run_ref: str, file: Path, store_url: str | None, as_json: bool) -> None:
    """Validate FILE and store the grades of every fully labelled question of RUN."""
    from ragmeter.cli._safe import safe
    from ragmeter.judging.relevance_labels_import import (
        describe_import,
        import_relevance_labels,
    )

    with open_store(store_url) as store:
        result = import_relevance_labels(store, run_ref, file)
    if as_json:
        print_json(result.to_dict())
        return
    for line in describe_import(result):
        console().print(safe(line))
