"""Issue 18.4: a real LangChain retriever, traced by openinference-instrumentation-langchain,
exports to `ragmeter ingest serve` on loopback; `flywheel export` returns the failed query."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from _langchain import community
from _otlp import exporting_provider, ingest_served
from ragmeter.gold.files import load_gold
from ragmeter.store import Store

pytest.importorskip("openinference.instrumentation.langchain")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
community("langchain_community.retrievers")


@pytest.fixture
def ingest_url(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The ingest app under real uvicorn on a free loopback port, and its store file."""
    db = tmp_path / "logs.db"
    with ingest_served(db) as base:
        yield base, db


@pytest.mark.slow
def test_instrumented_langchain_retriever_to_flywheel_export(
    ingest_url: tuple[str, Path], tmp_path: Path
) -> None:
    """Issue 18.4: LangChainInstrumentor traces a real BM25Retriever; its RETRIEVER span
    (query, documents with content and metadata) reaches /v1/traces; a thumbs-down sent with
    the query id to /api/feedback makes `flywheel export` return the query and its hits."""
    import httpx

    BM25Retriever = community("langchain_community.retrievers").BM25Retriever
    from langchain_core.documents import Document
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from ragmeter.cli.flywheel import flywheel

    base, db = ingest_url
    provider = exporting_provider(base)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        retriever = BM25Retriever.from_documents(
            [
                Document(page_content="uv cache clean removes cached wheels",
                         metadata={"source": "cache.md"}),
                Document(page_content="install uv with the standalone installer",
                         metadata={"source": "install.md"}),
                Document(page_content="pin a python version for the project",
                         metadata={"source": "python.md"}),
                Document(page_content="tools are installed into their own environments",
                         metadata={"source": "tools.md"}),
            ],
            k=2,
        )  # fmt: skip
        found = retriever.invoke("how do I clean the cache")
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    assert found[0].metadata["source"] == "cache.md"
    with Store.open(db) as store:
        (logged,) = store.logged_queries()
    assert logged.query == "how do I clean the cache"
    # What the retriever returned, in its order, document named by metadata["source"].
    assert [(h["doc"], h.get("text")) for h in logged.hits] == [
        (d.metadata["source"], d.page_content) for d in found
    ]
    sent = httpx.post(
        f"{base}/api/feedback", json={"query_id": logged.id, "thumbs_up": False, "comment": "old"}
    )
    assert sent.status_code == 200, sent.text
    out = tmp_path / "c.yaml"
    result = CliRunner().invoke(
        flywheel, ["export", "--since", "1d", "--out", str(out), "--store", str(db)]
    )
    assert result.exit_code == 0, result.output
    (item,) = load_gold(out).items
    assert item.question == "how do I clean the cache"
    assert [h["doc"] for h in item.metadata["retrieved"]] == [d.metadata["source"] for d in found]
    assert item.metadata["comments"] == ["old"]
