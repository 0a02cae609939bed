"""A gold set naming one document two ways scores every spelling (issue 24).

``docs/a.md`` in one item, ``a.md`` in another, ``./a.md``, another case, NFD beside NFC:
only the spelling the hits resolved to used to match, so the other items missed without a
word. Gold ids now go through the one id resolver: spellings the corpus confirms are one
document are scored as one; two that nothing confirms stay two, with a warning (and
``gold check`` names them).
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import ragmeter
from ragmeter.cli import main
from ragmeter.documents import Document
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store

NFC = unicodedata.normalize("NFC", "caf\u00e9.md")
NFD = unicodedata.normalize("NFD", NFC)
SPELLINGS = {  # item -> the id its gold entry spells, written by hand
    "plain": "a.md",
    "folder": "docs/a.md",
    "dot": "./a.md",
    "percent": "a%2Emd",
    "case": "A.md",
    "nfc": NFC,
    "nfd": NFD,
    "other": "b.md",
}
GOLD = GoldSet.from_records(
    [{"id": i, "question": f"{i}?", "relevant": [{"doc": d}]} for i, d in SPELLINGS.items()]
)
CORPUS = {d: Document(d, f"text of {d}") for d in ("a.md", "b.md", NFC, "guide/c.md")}
RETURNED = ["b.md", "a.md", NFC]  # every question gets these, in this order
METRICS = ["hit@1", "hit@2", "mrr"]


def _search(question: str, k: int) -> list[dict[str, Any]]:
    return [{"doc": d, "text": CORPUS[d].text} for d in RETURNED[:k]]


def _document(gold_id: str) -> str:
    """The document a gold id means, by a plain rule written here: NFC, %2E, ./, the
    docs/ folder the ids were written from, and case."""
    text = unicodedata.normalize("NFC", gold_id).replace("%2E", ".")
    text = text.removeprefix("./").removeprefix("docs/")
    return text.casefold()


def reference() -> dict[str, dict[str, float]]:
    """Position ranking: the rank of the first returned document the item's gold id means."""
    out = {}
    for item, gold_id in SPELLINGS.items():
        ranks = [r for r, d in enumerate(RETURNED, 1) if d.casefold() == _document(gold_id)]
        first = ranks[0] if ranks else None
        out[item] = {
            "hit@1": float(first == 1),
            "hit@2": float(first is not None and first <= 2),
            "mrr": 1 / first if first else 0.0,
        }
    return out


def _values(report: Any) -> dict[str, dict[str, float]]:
    return {i: {m: report.per_query[m][i] for m in METRICS} for i in SPELLINGS}


def test_with_the_corpus_every_spelling_scores_its_document() -> None:
    """Issue 24: with the corpus all five spellings of a.md (and NFD/NFC) are one document;
    every value equals the position reference (folder and case used to score 0)."""
    report = ragmeter.evaluate(GOLD, _search, k=3, metrics=METRICS, corpus=CORPUS,
                               store=Store.memory())  # fmt: skip
    expected = reference()
    assert sum(v["hit@2"] for v in expected.values()) == 6  # a.md x5 and b.md, not café
    assert _values(report) == expected
    assert not report.run.warnings
    (note,) = [n for n in report.notes if "more than one way" in n]
    assert "'docs/a.md' -> 'a.md'" in note and "'A.md' -> 'a.md'" in note


def test_without_the_corpus_only_spelling_merges_and_the_rest_is_said() -> None:
    """Issue 24: without a corpus ./a.md, a%2Emd and NFD are still a.md and café.md (pure
    spelling), while docs/a.md and A.md may be other documents: they stay apart, and the
    run stores a warning naming each pair instead of a silent miss."""
    report = ragmeter.evaluate(GOLD, _search, k=3, metrics=METRICS, store=Store.memory())
    expected = reference()
    got = _values(report)
    apart = {"folder", "case"}
    assert {i: v for i, v in got.items() if i not in apart} == {
        i: v for i, v in expected.items() if i not in apart
    }
    assert all(got[i]["mrr"] == 0.0 < expected[i]["mrr"] for i in apart)
    said = [w for w in report.run.warnings if "may be one document" in w]
    assert len(said) == 2
    assert any("'docs/a.md' and 'a.md'" in w for w in said)
    assert any("'a.md' and 'A.md'" in w for w in said)
    assert all("pass --corpus DIR, or spell them one way" in w for w in said)


@pytest.fixture
def gold_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\ntext of a\n", encoding="utf-8")
    (docs / "guide" / "c.md").write_text("# C\n\ntext of c\n", encoding="utf-8")
    records = [
        {"id": "one", "question": "?", "relevant": ["docs/a.md"]},
        {"id": "two", "question": "?", "relevant": ["a.md"]},
        {"id": "three", "question": "?", "relevant": ["guide/c.md"]},
    ]
    path = tmp_path / "gold.yaml"
    path.write_text(yaml.safe_dump(records), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return path


def test_gold_check_names_the_two_spellings(gold_file: Path) -> None:
    """Issue 24: `gold check` names two spellings no corpus confirms; with --corpus it says
    they are read as one, and the folder spelling is no longer a missing document."""
    runner = CliRunner()
    alone = runner.invoke(main, ["gold", "check", str(gold_file), "--json"])
    assert alone.exit_code == 0, alone.output
    warnings = json.loads(alone.stdout)["warnings"]
    assert any("names 'docs/a.md' and 'a.md', which may be one document" in w for w in warnings)
    with_corpus = runner.invoke(main, ["gold", "check", str(gold_file), "--corpus", "docs",
                                       "--json"])  # fmt: skip
    assert with_corpus.exit_code == 0, with_corpus.output
    data = json.loads(with_corpus.stdout)
    assert data["warnings"] == []
    assert data["notes"] == [
        "the gold set spells 1 document(s) more than one way, scored as one: 'docs/a.md' -> 'a.md'"
    ]
