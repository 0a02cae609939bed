"""``ragmeter ingest serve``: the query-log ingest endpoint."""

from __future__ import annotations

import click

from ragmeter.cli._common import console, store_option
from ragmeter.web.budget import BURST_S, BYTES_PER_S, ROWS_PER_S

_LLM_ENV = ("RAGMETER_JUDGE_BASE_URL", "RAGMETER_JUDGE_MODEL", "RAGMETER_JUDGE_API_KEY")


@click.group()
def ingest() -> None:
    """The HTTP endpoint services use to log queries and feedback."""


@ingest.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8766, show_default=True, type=int)
@click.option("--token", envvar="RAGMETER_INGEST_TOKEN", help="Bearer token required on calls.")
@click.option(
    "--allowed-host",
    "allowed",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host is NAME (repeatable; '*' for any). "
    "Default: the bound host and localhost/127.0.0.1/[::1].",
)
@click.option(
    "--max-rows-per-s",
    "rows_per_s",
    default=ROWS_PER_S,
    show_default=True,
    type=click.IntRange(min=0),
    help=f"Store rows one client address may write a second (bursts of {BURST_S} s' worth; "
    "0: no limit). Over it: 429 with Retry-After.",
)
@click.option(
    "--max-bytes-per-s",
    "bytes_per_s",
    default=BYTES_PER_S,
    show_default=True,
    type=click.IntRange(min=0),
    help="Request body bytes one client address may send a second (0: no limit).",
)
@store_option
def serve(
    host: str,
    port: int,
    token: str | None,
    allowed: tuple[str, ...],
    rows_per_s: int,
    bytes_per_s: int,
    store_url: str | None,
) -> None:
    """Serve POST /api/log, /api/feedback and OTLP /v1/traces (token needed beyond loopback).

    A 200 means the row is committed; 503 means retry. Requests must be
    Content-Type: application/json (/v1/traces: OTLP protobuf or JSON) and name an
    allowed Host. POST /v1/span_annotations takes Phoenix span annotations as feedback.
    Each client address has a budget of rows and bytes a second; behind a proxy all
    clients share one.
    """
    from ragmeter.store import DEFAULT_STORE_URL
    from ragmeter.web.budget import Budget
    from ragmeter.web.guard import allowed_hosts
    from ragmeter.web.ingest import check_bind, create_ingest_app

    check_bind(host, token)
    import uvicorn

    app = create_ingest_app(
        store_url or DEFAULT_STORE_URL,
        token,
        hosts=allowed_hosts(host, allowed),
        budget=Budget(rows_per_s=rows_per_s, bytes_per_s=bytes_per_s),
    )
    console(stderr=True).print(f"ingest on http://{host}:{port}/api/log (Ctrl-C stops)")
    uvicorn.run(app, host=host, port=port)
