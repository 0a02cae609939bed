"""``ragmeter store ...``: look after run stores (copy history between them)."""

from __future__ import annotations

import click


@click.group()
def store() -> None:
    """Manage run stores (SQLite files and PostgreSQL databases)."""


@store.command()
@click.argument("source", metavar="SRC")
@click.argument("destination", metavar="DST")
def copy(source: str, destination: str) -> None:
    """Copy all history from the store SRC into the empty store DST.

    SRC and DST are SQLite paths or database URLs, e.g. moving a team's history
    into PostgreSQL:

        ragmeter store copy .ragmeter/ragmeter.db postgresql://me@db/ragmeter

    Gold sets, runs, results, metrics and every other table are copied with
    their ids unchanged, in one transaction: on any error DST stays empty.
    DST is created and migrated if needed; it must hold no rows yet.
    """
    import os

    from ragmeter.errors import StoreError
    from ragmeter.store import Store

    # A missing SQLite file would be created empty; that is never what was meant.
    if "://" not in source and not os.path.exists(source):
        raise StoreError(f"store {source} does not exist")
    with Store.open(source) as src, Store.open(destination) as dst:
        copied = src.copy_to(dst)
    total = sum(copied.values())
    click.echo(f"Copied {total:,} rows from {src.url} to {dst.url}:")
    for table, n in copied.items():
        click.echo(f"  {table:<18} {n:>10,}")
