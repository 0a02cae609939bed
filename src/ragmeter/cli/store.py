"""``ragmeter store ...``: look after run stores (copy history, redact old secrets)."""

from __future__ import annotations

import os

import click

from ragmeter.cli._common import json_option, open_store, print_json, store_option


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


@store.command()
@click.option("--dry-run", is_flag=True, help="Count what would be hidden; change nothing.")
@click.option(
    "--secret-env",
    "secret_envs",
    multiple=True,
    metavar="NAME",
    help="Also hide every copy of this environment variable's value (repeatable), e.g. a "
    "token a service echoed into stored errors; the value is never given on the command line.",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for other readers of the store to let go before failing (exit 3).",
)
@store_option
@json_option
def redact(
    dry_run: bool,
    secret_envs: tuple[str, ...],
    wait: float,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Hide secrets that a store written by an older ragmeter still holds.

    Stored retriever specs, run, judge and calibration configs, results' chunk
    texts, contexts and errors, and the query log's meta and hits pass through
    the same redaction every new row gets (URL passwords, key/token query
    parameters and keys, Authorization-like headers); then the SQLite file is rebuilt
    (VACUUM, write-ahead log emptied) so the old values leave no copy behind. While
    another connection reads the store (a dashboard, a script) that cannot finish: after
    --wait seconds the command fails with exit 3 and names the processes holding it.
    --secret-env NAME also hides each copy of that variable's value (a token that a
    service echoed into stored error messages), wherever it appears.

        ragmeter store redact --dry-run
        ragmeter store redact --store .ragmeter/ragmeter.db
    """
    from ragmeter._redact import remember_secret

    for name in secret_envs:
        if not os.environ.get(name):
            raise click.UsageError(f"--secret-env {name}: the variable is not set or empty")
        remember_secret(os.environ[name])
    with open_store(store_url) as opened:
        changed = opened.redact_secrets(dry_run=dry_run, wait=wait)
    if as_json:
        print_json({"store": opened.url, "dry_run": dry_run, "redacted": changed})
        return
    total = sum(changed.values())
    verb = "Would redact" if dry_run else "Redacted"
    click.echo(f"{verb} {total:,} stored values in {opened.url}" + (":" if changed else "."))
    for column, n in changed.items():
        click.echo(f"  {column:<26} {n:>8,}")
