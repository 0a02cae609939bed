"""Hits are ranked by position, always (issue 24.1).

Two hits are one ranked unit only when they are the same chunk (same id and same text/span);
a hit without an id of its own, or whose id is repeated with other content, gets a
generated ``doc#rankN`` id and keeps its position. Every number here is checked against
:func:`reference`, a scorer written for these tests: it ranks hits by their position in the
list the retriever returned and looks quotes up by plain string search.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import ragmeter
from _servers import JsonHandler, serve_handler
from ragmeter.cli import main
from ragmeter.documents import Hit
from ragmeter.gold.goldset import GoldSet
from ragmeter.retrievers.units import rank_units

QUOTE = "the refund window is thirty days"
HAND_GOLD = [{"id": "q", "question": "refunds?", "relevant": [{"doc": "b.md", "quote": QUOTE}]}]


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def reference(
    gold: Sequence[Mapping[str, Any]],
    ranked: Mapping[str, Sequence[tuple[str, str]]],
    k: int,
) -> dict[str, float]:
    """mrr, hit@k and recall@k from ``(doc, text)`` hits in the order returned (position = rank).

    An entry (a document, or a document + quote) is found at the first position whose hit
    names its document and, for a quote, whose text holds the quote.
    """
    mrr = hit = recall = 0.0
    for item in gold:
        entries = item["relevant"]
        first: dict[int, int] = {}
        for position, (doc, text) in enumerate(ranked.get(item["id"], ()), start=1):
            for index, entry in enumerate(entries):
                quote = entry.get("quote")
                if doc == entry["doc"] and (quote is None or _squash(quote) in _squash(text)):
                    first.setdefault(index, position)
        best = min(first.values(), default=None)
        mrr += 1 / best if best else 0.0
        hit += float(best is not None and best <= k)
        recall += sum(p <= k for p in first.values()) / len(entries)
    n = len(gold)
    return {"mrr": mrr / n, f"hit@{k}": hit / n, f"recall@{k}": recall / n}


def _metrics(k: int) -> list[str]:
    return ["mrr", f"hit@{k}", f"recall@{k}"]


def _hand_hits() -> list[tuple[str, str]]:
    return [("a.md", "nothing"), ("a.md", "still nothing"), ("b.md", f"yes: {QUOTE}.")]


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param(lambda d, t, n: {"doc": d, "text": t}, id="only-doc"),
        pytest.param(lambda d, t, n: {"id": f"{d}#{n}", "doc": d, "text": t}, id="chunk-ids"),
        pytest.param(lambda d, t, n: {"id": "file-1", "doc": d, "text": t}, id="shared-id"),
    ],
)
def test_hand_checkable_repeated_document(shape: Any) -> None:
    """Issue 24.1: [a.md "nothing", a.md "still nothing", b.md <the quote>] ranks the quote
    3rd: mrr 1/3 and hit@2 0, whatever ids the hits carry (they used to merge: mrr 0.5)."""
    gold = GoldSet.from_records(HAND_GOLD)
    hits = [shape(doc, text, n) for n, (doc, text) in enumerate(_hand_hits())]
    report = ragmeter.evaluate(gold, lambda q, k: hits, k=3, metrics=["mrr", "hit@2", "hit@3"])
    assert report.metrics == {"mrr": pytest.approx(1 / 3), "hit@2": 0.0, "hit@3": 1.0}
    expected = reference(HAND_GOLD, {"q": _hand_hits()}, 2)
    assert report.metrics["mrr"] == pytest.approx(expected["mrr"])
    assert report.metrics["hit@2"] == expected["hit@2"]


def test_generated_ids_are_stable_and_stored() -> None:
    """Issue 24.1: a missing or shared id becomes doc#rank (the same list, the same ids); a
    unique id is kept."""
    hits = [
        Hit("a.md", "a.md", text="x"),
        Hit("f1", "b.md", text="one"),
        Hit("a.md", "a.md", text="y"),
        Hit("f1", "b.md", text="two"),
        Hit("c.md#0", "c.md", text="z"),
    ]
    ids = [h.id for h in rank_units(hits)]
    assert ids == ["a.md#rank1", "b.md#rank2", "a.md#rank3", "b.md#rank4", "c.md#0"]
    assert [h.id for h in rank_units(hits)] == ids
    assert rank_units(rank_units(hits)) == rank_units(hits)


def test_the_same_chunk_twice_is_one_unit() -> None:
    """Issue 24.1: the same chunk id with the same text is one unit, ranked once (as a run
    file's trec_eval rule would have it): the quote is then the 2nd unit."""
    gold = GoldSet.from_records(HAND_GOLD)
    hits = [
        {"id": "c1", "doc": "a.md", "text": "nothing"},
        {"id": "c1", "doc": "a.md", "text": "nothing"},
        {"id": "c2", "doc": "b.md", "text": QUOTE},
    ]
    report = ragmeter.evaluate(gold, lambda q, k: hits, k=3, metrics=["mrr"])
    assert report.metrics["mrr"] == 0.5


def test_a_generated_id_never_meets_a_gold_chunk_id() -> None:
    """Issue 24.1: a generated id cannot be taken for a listed chunk (b.md#1 is not b.md's
    2nd hit): the gold chunk entry stays unfound."""
    gold = GoldSet.from_records(
        [{"id": "q", "question": "?", "relevant": [{"chunk": "b.md#1"}, {"doc": "z.md"}]}]
    )
    hits = [{"doc": "b.md", "text": "one"}, {"doc": "b.md", "text": "two"}, {"doc": "z.md"}]
    report = ragmeter.evaluate(gold, lambda q, k: hits, k=3, metrics=["recall@3", "mrr"])
    assert report.metrics == {"recall@3": 0.5, "mrr": pytest.approx(1 / 3)}


def test_run_file_duplicates_are_still_refused(tmp_path: Path) -> None:
    """Issue 24.1: a run file keeps trec_eval's rule: a document listed twice is refused."""
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(HAND_GOLD), encoding="utf-8")
    run = tmp_path / "dup.trec"
    run.write_text("q Q0 a.md 1 2.0 x\nq Q0 a.md 2 1.0 x\n", encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--gold",
            str(tmp_path / "gold.yaml"),
            "--retriever",
            f"run:{run}",
            "--store",
            f"sqlite:///{tmp_path / 'r.db'}",
        ],
    )
    assert result.exit_code == 2
    assert "appears twice" in result.output


# --- real shapes: LangServe and the OpenAI vector-store preset on a loopback server ----------

DOCS = {
    "guide/refunds.md": [
        "Orders ship in two days.",
        "Returns need the receipt.",
        f"Remember that {QUOTE} from delivery.",
    ],
    "guide/shipping.md": ["Shipping is free above 50 euros.", "We ship to the EU only."],
    "guide/account.md": ["Reset your password from settings.", "Delete the account by mail."],
}
SERVICE_GOLD = [
    {"id": "refunds", "question": "refund window?", "relevant": [{"doc": "guide/refunds.md", "quote": QUOTE}]},
    {"id": "eu", "question": "where do you ship?", "relevant": [{"doc": "guide/shipping.md", "quote": "We ship to the EU only."}]},
    {"id": "password", "question": "password reset?", "relevant": [{"doc": "guide/account.md", "quote": "Reset your password"}]},
]  # fmt: skip
# Each question's chunks in the order the service returns them: the relevant chunk comes
# after other chunks of the same document, which the old merging moved up.
RANKED = {
    "refund window?": [("guide/refunds.md", 0), ("guide/refunds.md", 1), ("guide/shipping.md", 0), ("guide/refunds.md", 2)],
    "where do you ship?": [("guide/shipping.md", 0), ("guide/refunds.md", 0), ("guide/shipping.md", 1)],
    "password reset?": [("guide/account.md", 1), ("guide/account.md", 0), ("guide/refunds.md", 1)],
}  # fmt: skip
QUESTIONS = {item["id"]: item["question"] for item in SERVICE_GOLD}


def _chunks(question: str) -> list[tuple[str, str]]:
    return [(doc, DOCS[doc][n]) for doc, n in RANKED[question]]


class _Services(JsonHandler):
    def answer(self, path: str, body: Any) -> Any:
        if path.endswith("/invoke"):  # LangServe: serialised LangChain documents, id None
            return {
                "output": [
                    {
                        "page_content": text,
                        "metadata": {"source": doc},
                        "type": "Document",
                        "id": None,
                    }
                    for doc, text in _chunks(body["input"])
                ]
            }
        # OpenAI vector store: every chunk of a file carries the file's id
        chunks = _chunks(body["query"])[: body["max_num_results"]]
        return {
            "object": "vector_store.search_results.page",
            "data": [
                {
                    "file_id": f"file-{sorted(DOCS).index(doc)}",
                    "filename": doc,
                    "score": 1.0 - n / 10,
                    "attributes": {},
                    "content": [{"type": "text", "text": text}],
                }
                for n, (doc, text) in enumerate(chunks)
            ],
        }


@pytest.fixture
def services() -> Iterator[str]:
    with serve_handler(_Services) as url:
        yield url


@pytest.mark.parametrize(
    ("path", "preset"),
    [("/v1/vector_stores/vs_1/search", "openai-vector-store"), ("/chain/invoke", "langserve")],
    ids=["openai-vector-store", "langserve"],
)
@pytest.mark.parametrize("with_corpus", [False, True], ids=["no-corpus", "corpus"])
def test_presets_rank_every_chunk_by_position(
    tmp_path: Path, services: str, path: str, preset: str, with_corpus: bool
) -> None:
    """Issue 24.1: the OpenAI preset (one file_id per file) and LangServe (Document.id None)
    used to merge a file's chunks, moving the relevant one up; through the CLI, with and
    without --corpus, they now equal the position-ranked reference."""
    for doc, parts in DOCS.items():
        file = tmp_path / "docs" / doc
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(SERVICE_GOLD), encoding="utf-8")
    k = 4
    args = [
        "eval",
        "--gold",
        str(tmp_path / "gold.yaml"),
        "--retriever",
        f"{services}{path}",
        "--http-preset",
        preset,
        "-k",
        str(k),
        "--json",
        "--store",
        f"sqlite:///{tmp_path / 'r.db'}",
    ]
    for metric in _metrics(k):
        args += ["-m", metric]
    if with_corpus:
        args += ["--corpus", str(tmp_path / "docs")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    expected = reference(SERVICE_GOLD, {i: _chunks(q) for i, q in QUESTIONS.items()}, k)
    assert expected["mrr"] == pytest.approx((1 / 4 + 1 / 3 + 1 / 2) / 3)  # not merged
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value), name


def test_miss_lists_show_documents_not_chunk_ids(tmp_path: Path) -> None:
    """Issue 24.6: a missed question lists the documents that came back, not the chunk UUIDs
    most frameworks give (those stay in --json and detail views)."""
    gold = [
        {"id": "q", "question": "refunds?", "relevant": [{"doc": "b.md"}]},
        {"id": "r", "question": "other?", "relevant": [{"doc": "a.md"}]},
    ]
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(gold), encoding="utf-8")
    (tmp_path / "uuids.py").write_text(
        "def search(question, k):\n"
        "    return [{'id': '8f2c1a4e-6b7d-4e2a-9c3f-1a2b3c4d5e6f', 'doc': 'a.md', 'text': 'x'}]\n",
        encoding="utf-8",
    )
    store = f"sqlite:///{tmp_path / 'r.db'}"
    gold_file = str(tmp_path / "gold.yaml")
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--gold",
            gold_file,
            "--retriever",
            f"{tmp_path / 'uuids.py'}:search",
            "--store",
            store,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "    1. a.md" in result.stdout
    assert "8f2c1a4e" not in result.stdout
