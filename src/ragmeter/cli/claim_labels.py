"""``ragmeter judge claim-labels export|import``: people's labels of the claim decisions."""

from __future__ import annotations

from pathlib import Path

import click

from ragmeter.cli._common import json_option, open_store, print_json, store_option
from ragmeter.cli._labels import export_options


@click.group("claim-labels")
def claim_labels() -> None:
    """Label the claims judge's decisions by hand, to correct the claim metrics.

    `export` writes a YAML file of a run's claims-judged questions with every decision
    null; people fill it in; `import` stores it. The run's claim metrics are then
    corrected by the labels (prediction-powered, with a 95% interval).
    """


@claim_labels.command("export")
@export_options(
    "among the claims-judged questions",
    "Only questions without stored labels (the next random round).",
)
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
    """Write RUN's claims for people to label: every decision null, never pre-filled."""
    from ragmeter.judging.claim_label_files import export_claim_labels

    with open_store(store_url) as store:
        result = export_claim_labels(
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
    click.echo(
        f"run {result.run_id}: {len(result.items)} of {result.population} question(s) "
        f"written to {result.path} ({result.already_labelled} already labelled)"
    )


@claim_labels.command("import")
@click.argument("run_ref", metavar="RUN")
@click.argument("labels_file", metavar="FILE", type=click.Path(path_type=Path))
@click.option(
    "--user", envvar="RAGMETER_USER", default=None,
    help="Who gave the labels [env RAGMETER_USER; default: local].",
)  # fmt: skip
@store_option
@json_option
def import_(
    run_ref: str, labels_file: Path, user: str | None, store_url: str | None, as_json: bool
) -> None:
    """Check a filled labels FILE against RUN's claims and store its fully labelled questions.

    Any problem (an unknown question, claims the judge has since replaced, a chunk id not
    among the question's) is named and nothing is stored. A question with a null left is
    skipped and counted. Importing the same file twice changes nothing.
    """
    from ragmeter.gold.edits import DEFAULT_USER
    from ragmeter.judging.claim_label_files import import_claim_labels

    with open_store(store_url) as store:
        result = import_claim_labels(store, run_ref, labels_file, who=user or DEFAULT_USER)
    if as_json:
        print_json(result.to_dict())
        return
    click.echo(
        f"run {result.run_id}: {result.stored} question(s) stored, {result.updated} updated, "
        f"{result.unchanged} unchanged"
    )
    if result.not_fully_labelled:
        names = ", ".join(result.not_fully_labelled)
        click.echo(
            f"{len(result.not_fully_labelled)} not fully labelled ({names}): "
            "replace every null and import again"
        )
