"""``ragmeter demo``: the bundled example, offline."""

from __future__ import annotations

from pathlib import Path

import click

from ragmeter.cli import _render
from ragmeter.cli._common import (
    cache_dir,
    console,
    open_store,
    print_json,
)


@click.command("demo")
@click.option(
    "--store",
    "store_url",
    default=None,
    metavar="URL",
    help="Run store [default: .ragmeter/demo.db].",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def demo(store_url: str | None, as_json: bool) -> None:
    """Evaluate BM25 on whole documents and on sections of the bundled uv docs (offline)."""
    from ragmeter.demo import run_demo

    url = store_url or f"sqlite:///{Path('.ragmeter') / 'demo.db'}"
    with open_store(url) as store, _render.progress_bar(disabled=as_json) as progress:
        result = run_demo(
            store,
            cache_dir=cache_dir(),
            progress=progress,
            say=None if as_json else console().print,
        )
    if as_json:
        print_json(result.to_dict())
    else:
        _render.print_demo(result)
