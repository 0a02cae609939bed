"""``ragmeter serve``: the dashboard on 127.0.0.1 (needs the ``[web]`` extra)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import click

from ragmeter.cli._common import store_option
from ragmeter.errors import ConfigError

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@click.command()
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    envvar="RAGMETER_TOKEN",
    default=None,
    help="Require this token on every page and API call [env RAGMETER_TOKEN]; "
    "needed to bind anything but loopback.",
)
@click.option(
    "--candidates",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Synthetic candidates file (YAML/JSONL) for the review page.",
)
@click.option(
    "--allowed-host",
    "allowed",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host is NAME (repeatable; '*' for any). "
    "Default: the bound host and localhost/127.0.0.1/[::1].",
)
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="Corpus whose documents a review edit may name (default: only those a candidate "
    "retrieved or names).",
)
@click.option(
    "--user",
    envvar="RAGMETER_USER",
    default=None,
    help="Who makes the gold edits of this dashboard [env RAGMETER_USER; default: "
    "[dashboard] user of ragmeter.toml, else local].",
)
@click.option(
    "--get", "get_path", metavar="PATH", default=None, help="Print one response and exit."
)
def serve(
    store_url: str | None,
    host: str,
    port: int,
    token: str | None,
    candidates: Path | None,
    allowed: tuple[str, ...],
    corpus_path: Path | None,
    user: str | None,
    get_path: str | None,
) -> None:
    """Start the dashboard: runs, run detail, diffs, labelling and review.

    Binds 127.0.0.1 by default. Any other address needs --token, and then every
    page and API call needs it (Authorization: Bearer TOKEN, or ?token=TOKEN once
    in the browser). Requests naming another Host get 421 (DNS rebinding);
    --allowed-host adds names. --get /api/runs prints one response without
    starting a server.
    """
    if not is_loopback(host) and not token:
        raise click.UsageError(
            f"--host {host} is reachable from other machines: pass --token TOKEN "
            "(every page and API call will then require it), or bind 127.0.0.1"
        )
    try:
        from ragmeter.web.app import create_app
    except ImportError as error:  # pragma: no cover - depends on the installed extras
        raise ConfigError(
            f"the dashboard needs the web extra: pip install 'ragmeter[web]' ({error})"
        ) from None
    from ragmeter.config import load_config
    from ragmeter.store import DEFAULT_STORE_URL
    from ragmeter.web.guard import allowed_hosts

    corpus_docs = None
    if corpus_path is not None:
        from ragmeter.corpus import load_corpus

        corpus_docs = load_corpus(corpus_path).documents.keys()
    config = load_config()
    app = create_app(
        store_url or DEFAULT_STORE_URL,
        token,
        thresholds=config.health,
        candidates=candidates,
        hosts=allowed_hosts(host, allowed),
        user=user or config.user,
        corpus_docs=corpus_docs,
    )
    if get_path is not None:
        from fastapi.testclient import TestClient

        headers = {"authorization": f"Bearer {token}"} if token else {}
        base = f"http://127.0.0.1:{port}"
        with TestClient(app, base_url=base, raise_server_exceptions=False) as client:
            response = client.get(get_path, headers=headers)
        click.echo(response.text)
        if response.status_code >= 400:
            # Exit codes are STYLE.md's: a bad path or reference is an input error (2),
            # a server error means the page could not be produced (3); 1 is "gate failed".
            click.get_current_context().exit(2 if response.status_code < 500 else 3)
        return
    import uvicorn

    click.echo(f"ragmeter dashboard on http://{host}:{port}/ (Ctrl-C to stop)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
