"""``ragmeter ingest serve``: the query-log ingest endpoint."""

from __future__ import annotations

import click

from ragmeter.cli._common import console, store_option

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
@store_option
def serve(
    host: str, port: int, token: str | None, allowed: tuple[str, ...], store_url: str | None
) -> None:
    """Serve POST /api/log, /api/feedback and OTLP /v1/traces (token needed beyond loopback).

    A 200 means the row is committed; 503 means retry. Requests must be
    Content-Type: application/json (/v1/traces: OTLP protobuf or JSON) and name an
    allowed Host. POST /v1/span_annotations takes Phoenix span annotations as feedback.
    """
    from ragmeter.store import DEFAULT_STORE_URL
    from ragmeter.web.guard import allowed_hosts
    from ragmeter.web.ingest import check_bind, create_ingest_app

    check_bind(host, token)
    import uvicorn

    app = create_ingest_app(
        store_url or DEFAULT_STORE_URL, token, hosts=allowed_hosts(host, allowed)
    )
    console(stderr=True).print(f"ingest on http://{host}:{port}/api/log (Ctrl-C stops)")
    uvicorn.run(app, host=host, port=port)
