"""The options every ``ragmeter judge *-labels export`` shares (claims and relevance)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ragmeter.cli._common import json_option, store_option

F = TypeVar("F", bound=Callable[..., Any])

#: Why ``--sample`` matters, said once for every labels export.
RANDOM_SAMPLE = (
    "The correction assumes the labelled questions are a random sample of the judged "
    "ones: never hand-pick them."
)


def export_options(population: str, unlabelled: str) -> Callable[[F], F]:
    """``RUN``, ``--out``, ``--sample``, ``--seed``, ``--unlabelled-only``, ``--force``,
    ``--store`` and ``--json`` of a labels export; ``population`` names what ``--sample``
    draws from, ``unlabelled`` what ``--unlabelled-only`` keeps."""

    def decorate(func: F) -> F:
        options = [
            click.argument("run_ref", metavar="RUN"),
            click.option(
                "--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
                help="The YAML file to write.",
            ),
            click.option(
                "--sample", type=click.IntRange(min=1), default=None,
                help=f"Draw N questions uniformly at random {population} (default: all). "
                f"{RANDOM_SAMPLE}",
            ),
            click.option(
                "--seed", type=int, default=0, show_default=True, help="Seed of the --sample draw."
            ),
            click.option("--unlabelled-only", is_flag=True, help=unlabelled),
            click.option("--force", is_flag=True, help="Replace --out if it exists."),
            store_option,
            json_option,
        ]  # fmt: skip
        for option in reversed(options):
            func = option(func)
        return func

    return decorate
