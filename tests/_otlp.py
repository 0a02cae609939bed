"""What the OTLP end-to-end tests share: the ingest app under real uvicorn, and an exporter.

:func:`ingest_served` runs ``ragmeter ingest serve``'s app (``create_ingest_app``) under
uvicorn on a free loopback port in a thread (:func:`app_served` any app, the dashboard too); :func:`exporting_provider` is an OpenTelemetry
``TracerProvider`` whose spans go, one export request per span as it ends, to its
``/v1/traces``. Used by ``test_otlp_join.py`` and ``test_otlp_langchain.py``::

    with ingest_served(tmp_path / "logs.db") as base:
        provider = exporting_provider(base)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _net import free_port, wait_until
from ragmeter.web.ingest import create_ingest_app

#: Seconds uvicorn gets to start, and to stop.
START_TIMEOUT_S = 20.0


@contextmanager
def ingest_served(db: Path, **options: Any) -> Iterator[str]:
    """The ingest app over the store ``db``, under real uvicorn; yields its base URL.

    ``options`` go to ``create_ingest_app`` (``budget=``, ``token=``)."""
    with app_served(create_ingest_app(str(db), **options)) as base:
        yield base


@contextmanager
def app_served(app: Any) -> Iterator[str]:
    """Any ASGI app (the ingest app, the dashboard) under real uvicorn on a free loopback
    port in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, timeout=START_TIMEOUT_S, what="uvicorn to start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT_S)


def exporting_provider(base: str) -> Any:
    """A ``TracerProvider`` exporting each span, as it ends, to ``{base}/v1/traces``."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{base}/v1/traces")))
    return provider
