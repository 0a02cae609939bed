"""Options and printing shared by the commands."""

from __future__ import annotations

import errno
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ragmeter.cli._safe import safe

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

F = TypeVar("F", bound=Callable[..., Any])

STORE_ENV = "RAGMETER_STORE"
CACHE_ENV = "RAGMETER_CACHE_DIR"
DEFAULT_CACHE_DIR = Path(".ragmeter") / "cache"


@functools.cache
def _console_class() -> type[Console]:
    """rich's console, leaving a closed pipe to the command group (exit 141, not 1).

    Made on the first console: a command printing ``--json`` never imports rich (issue 29.2).
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's default exits 1, which reads as "gate failed" (issue 24.6).
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the output's reader went away")

    return _Console


def console(stderr: bool = False, **options: Any) -> Console:
    """A console that wraps nothing when output is not a terminal (tests, pipes)."""
    stream = sys.stderr if stderr else sys.stdout
    # No highlighting: rich's highlighter scans every printed string (90 s for a 1 MB id).
    width = None if stream.isatty() else 120
    settings: dict[str, Any] = {"width": width, "soft_wrap": False, "highlight": False}
    return _console_class()(file=stream, **(settings | options))


def store_option(func: F) -> F:
    return click.option(
        "--store",
        "store_url",
        envvar=STORE_ENV,
        default=None,
        metavar="URL",
        help="Run store: a SQLite path or SQLAlchemy URL "
        "[env RAGMETER_STORE; default sqlite:///.ragmeter/ragmeter.db].",
    )(func)


def executor_options(func: F) -> F:
    """``--executor local|ray`` and ``--ray-address`` (eval, sweep, judge)."""
    func = click.option(
        "--ray-address", default=None, help="Ray cluster to join (default: RAY_ADDRESS or local)."
    )(func)
    return click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Where per-question work (retrieval, generation, judging) runs: "
        "here, or on a Ray cluster.",
    )(func)


def max_response_bytes_option(func: F) -> F:
    """``--max-response-bytes``: the HTTP retriever's body limit (after decompression)."""
    return click.option(
        "--max-response-bytes",
        type=click.IntRange(min=1),
        default=None,
        help="Largest HTTP retriever answer read, decompressed (default 32 MiB).",
    )(func)


def follow_symlinks_option(func: F) -> F:
    """``--follow-symlinks``, beside every ``--corpus`` (issue 19.5)."""
    return click.option(
        "--follow-symlinks",
        is_flag=True,
        help="Index files a corpus folder links to outside itself "
        "(devices, pipes and /proc, /sys, /dev are never read).",
    )(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(func)


@contextmanager
def open_store(url: str | None, *, read_only: bool = False) -> Iterator[Any]:
    """The store of ``--store``; commands that only read pass ``read_only=True``."""
    from ragmeter.store import DEFAULT_STORE_URL, Store

    with Store.open(url or DEFAULT_STORE_URL, read_only=read_only) as store:
        yield store


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def metric_header(name: str) -> str:
    return name.replace("_ms", " ms").replace("latency_", "")


def runs_table(runs: Sequence[Any], metrics: Sequence[str], title: str | None = None) -> Table:
    """A run per row, a metric per column, newest last.

    A ``warn`` column (how many warnings each run stored; ``ragmeter show RUN`` lists
    them) appears when any run has some.
    """
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    table.add_column("run", justify="right")
    table.add_column("name")
    table.add_column("change")
    warned = any(getattr(run, "warnings", None) for run in runs)
    if warned:
        table.add_column("warn", justify="right")
    for name in metrics:
        table.add_column(metric_header(name), justify="right")
    for run in runs:
        marker = [f"⚠ {len(run.warnings)}" if run.warnings else ""] if warned else []
        table.add_row(
            str(run.id),
            safe(run.name),
            safe(run.note or ""),
            *marker,
            *(fmt(run.metrics.get(name)) for name in metrics),
        )
    return table
