"""Issue 24.3: one coverage rule, the same from spans, from the corpus and from text alone.

Every expected value here is counted by hand in folded characters (NFC, case-folded, letters
and digits only); the comments show the folded strings.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ragmeter
from ragmeter.cli import main
from ragmeter.documents import Document, Hit
from ragmeter.errors import ConfigError
from ragmeter.evaluation.passages import Evidence, covers
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.quotes import fold_text, quote_overlap
from ragmeter.retrievers import coerce_hits
from ragmeter.store import Store

# The quote folds to 49 characters: "theuvcachedirvariablesetswherethecachelivesondisk".
QUOTE = "The `UV_CACHE_DIR` variable sets where the cache lives on disk."
BEFORE = "Caching avoids downloads. Tools like uv keep one cache for every project. "
AFTER = " Clearing it is safe: uv fills it again on the next install."
TEXT = BEFORE + QUOTE + AFTER
DOCS = {"cache.md": Document("cache.md", TEXT)}
GOLD = GoldSet.from_records(
    [
        {
            "id": "q",
            "question": "where is the cache?",
            "relevant": [{"doc": "cache.md", "quote": QUOTE}],
        }
    ]
)
ITEM = GOLD["q"]


def _hit(start: int, end: int, *, text: bool = True, span: bool = True) -> Hit:
    return Hit(
        f"cache.md@{start}",
        "cache.md",
        text=TEXT[start:end] if text else None,
        start=start if span else None,
        end=end if span else None,
    )


def _covered(hit: Hit, documents: dict[str, Document] | None) -> bool:
    return covers(ITEM, hit, Evidence(documents))[0] == [0]


def _all_paths(start: int, end: int) -> set[bool]:
    """Coverage of one chunk by text alone, text + corpus, text + spans + corpus, spans + corpus."""
    return {
        _covered(_hit(start, end, span=False), None),
        _covered(_hit(start, end, span=False), DOCS),
        _covered(_hit(start, end), DOCS),
        _covered(_hit(start, end, text=False), DOCS),
    }


def test_folded_lengths_the_other_tests_count_with() -> None:
    """Issue 24.3: the hand counts below rest on these folded strings."""
    assert fold_text(QUOTE) == "theuvcachedirvariablesetswherethecachelivesondisk"
    assert len(fold_text(QUOTE)) == 49


def test_three_characters_of_a_49_character_quote_do_not_cover() -> None:
    """Issue 24.3: a chunk ending with "The" of the quote holds 3 of 49 characters: no cover,
    by spans and by text alike (before, any span overlap covered)."""
    end = len(BEFORE) + len("The")
    assert quote_overlap(fold_text(TEXT[:end]), fold_text(QUOTE)) == 3
    assert _all_paths(0, end) == {False}


def test_a_quote_split_by_a_chunk_boundary_counts_for_the_piece_holding_half() -> None:
    """Issue 24.3: the boundary after "variable sets" leaves 25 of 49 characters in the first
    chunk (>= 24.5: covers) and 24 in the second (< 24.5: does not), on every evidence path."""
    cut = len(BEFORE) + QUOTE.index(" where the cache")
    first, second = (0, cut), (cut, len(TEXT))
    assert fold_text(TEXT[slice(*first)]).endswith("theuvcachedirvariablesets")  # 25
    assert quote_overlap(fold_text(TEXT[slice(*first)]), fold_text(QUOTE)) == 25
    assert quote_overlap(fold_text(TEXT[slice(*second)]), fold_text(QUOTE)) == 24
    assert _all_paths(*first) == {True}
    assert _all_paths(*second) == {False}


def test_min_overlap_changes_the_share() -> None:
    """Issue 24.3: at --min-overlap 0.6 the 25-of-49 piece needs 30 characters: no cover."""
    cut = len(BEFORE) + QUOTE.index(" where the cache")
    hit = _hit(0, cut)
    assert covers(ITEM, hit, Evidence(None, 0.5))[0] == [0]
    assert covers(ITEM, hit, Evidence(None, 0.6))[0] == []
    assert covers(ITEM, hit, Evidence(DOCS, 0.6))[0] == []


def test_a_chunk_inside_a_long_quote_covers_it_and_a_heading_does_not() -> None:
    """Issue 24.3: the shorter of the two is the chunk: a 20-character chunk wholly inside the
    quote covers it; a 9-character one ("uvcachedi" is under the 16-character floor) does not."""
    inside = len(BEFORE) + QUOTE.index("variable sets")
    piece = (inside, inside + len("variable sets where the"))  # "variablesetswherethe": 20
    assert fold_text(TEXT[slice(*piece)]) == "variablesetswherethe"
    assert _all_paths(*piece) == {True}
    start = len(BEFORE) + QUOTE.index("UV_CACHE")
    short = Hit("h", "cache.md", text="UV_CACHE_DI")  # 9 folded characters
    assert fold_text(short.text or "") == "uvcachedi"
    assert not _covered(short, None) and not _covered(_hit(start, start + 11), DOCS)


def test_a_markdown_stripped_chunk_matches_the_quote_from_the_file() -> None:
    """Issue 24.3: Haystack's MarkdownToDocument drops backticks, emphasis, heading marks and
    link syntax; the quote copied from the .md file still covers (before: a silent miss)."""
    quote = (
        "Use `uv cache clean` to remove **all** entries, see [the cache docs](../cache.md#clean)."
    )
    gold = GoldSet.from_records(
        [{"id": "q", "question": "?", "relevant": [{"doc": "c.md", "quote": quote}]}]
    )
    stripped = "Cache\nUse uv cache clean to remove all entries, see the cache docs.\nMore."
    assert fold_text(quote) in fold_text(stripped)
    assert covers(gold["q"], Hit("c.md#0", "c.md", text=stripped), Evidence())[0] == [0]


def test_an_nfd_chunk_matches_an_nfc_quote() -> None:
    """Issue 24.3: text stored decomposed (NFD) is folded to NFC before comparing."""
    quote = "Le café se règle à la caisse avant la dégustation."
    gold = GoldSet.from_records(
        [{"id": "q", "question": "?", "relevant": [{"doc": "f.md", "quote": quote}]}]
    )
    chunk = unicodedata.normalize("NFD", "Menu. " + quote + " Merci.")
    assert chunk != "Menu. " + quote + " Merci."
    assert covers(gold["q"], Hit("f.md#0", "f.md", text=chunk), Evidence())[0] == [0]


def test_a_span_that_disagrees_with_the_text_is_not_used() -> None:
    """Issue 24.3: offsets into another text (a converter's, a section's) are ignored when the
    hit's text does not lie within them; a snippet inside its span reads the whole span."""
    wrong = Hit("w", "cache.md", text=QUOTE, start=0, end=40)  # the span holds BEFORE's text
    assert Evidence(DOCS).chunk_text(wrong) == QUOTE
    assert _covered(wrong, DOCS)
    start = len(BEFORE)
    snippet = Hit("s", "cache.md", text="UV_CACHE_DIR", start=start, end=start + len(QUOTE))
    assert Evidence(DOCS).chunk_text(snippet) == QUOTE
    assert Evidence(None).chunk_text(snippet) == "UV_CACHE_DIR"
    beyond = Hit("b", "cache.md", start=len(TEXT) - 2, end=len(TEXT) + 50)  # past the end
    assert Evidence(DOCS).chunk_text(beyond) is None


def test_framework_offsets_become_the_hit_span() -> None:
    """Issue 24.3: LangChain metadata.start_index and Haystack meta.split_idx_start are read;
    LangChain's -1 (a chunk it could not find again) is no span."""
    from haystack import Document as HaystackDocument
    from langchain_core.documents import Document as LangChainDocument

    lc = LangChainDocument(page_content=QUOTE, metadata={"source": "cache.md", "start_index": 74})
    lost = LangChainDocument(page_content=QUOTE, metadata={"source": "cache.md", "start_index": -1})
    hs = HaystackDocument(content=QUOTE, meta={"file_path": "cache.md", "split_idx_start": 74})
    hits = coerce_hits([lc, lost, hs], source="test")
    assert [(h.start, h.end) for h in hits] == [(74, 74 + len(QUOTE)), (None, None), (74, 137)]
    assert len(BEFORE) == 74 and TEXT[74:137] == QUOTE


def _split_retriever(question: str, k: int) -> list[dict[str, Any]]:
    cut = len(BEFORE) + QUOTE.index(" where the cache")
    return [
        {"id": "cache.md#1", "doc": "cache.md", "text": TEXT[cut:], "start": cut, "end": len(TEXT)},
        {"id": "cache.md#0", "doc": "cache.md", "text": TEXT[:cut], "start": 0, "end": cut},
    ][:k]


def test_evaluate_takes_a_corpus_and_it_changes_nothing(tmp_path: Path) -> None:
    """Issue 24.3: evaluate(..., corpus=...) exists (a folder, a Corpus or a mapping); the split
    quote counts at rank 2 with and without it; min_overlap is stored with the run. Without
    the corpus the cover rests on the quote's head at the chunk's end, which text alone
    cannot place: the run says so (issue 24.3, unplaced edge overlaps)."""
    (tmp_path / "cache.md").write_text(TEXT, encoding="utf-8")
    values = []
    for corpus in (None, str(tmp_path), ragmeter.load_corpus(tmp_path), DOCS):
        report = ragmeter.evaluate(
            GOLD, _split_retriever, k=5, store=Store.memory(), corpus=corpus, metrics=["mrr"]
        )
        assert report.run.level == "passage"
        if corpus is None:
            (warning,) = report.warnings
            assert warning.startswith("1 cover rests on a quote's head or tail at a chunk's")
            assert "in 1 question(s): q." in warning and "--corpus DIR" in warning
        else:
            assert report.warnings == []
        values.append(report.metrics["mrr"])
    assert values == [0.5, 0.5, 0.5, 0.5]
    strict = ragmeter.evaluate(
        GOLD, _split_retriever, k=5, store=Store.memory(), min_overlap=0.6, metrics=["mrr"]
    )
    assert strict.metrics["mrr"] == 0.0 and strict.run.config["min_overlap"] == 0.6
    with pytest.raises(ConfigError, match="min overlap must be a share"):
        ragmeter.evaluate(GOLD, _split_retriever, store=Store.memory(), min_overlap=1.5)


def test_eval_cli_min_overlap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24.3: `ragmeter eval --min-overlap` sets the share; `--corpus` changes nothing."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "cache.md").write_text(TEXT, encoding="utf-8")
    (tmp_path / "split_search.py").write_text(_module_source(), encoding="utf-8")
    GOLD.save(tmp_path / "gold.yaml")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    base = ["eval", "--gold", "gold.yaml", "--retriever", "split_search:search", "-m", "mrr"]
    out = {}
    for label, extra in (
        ("bare", []),
        ("corpus", ["--corpus", "docs"]),
        ("strict", ["--min-overlap", "0.6"]),
    ):
        result = CliRunner().invoke(main, [*base, *extra, "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        out[label] = json.loads(result.stdout)["metrics"]["mrr"]
    assert out == {"bare": 0.5, "corpus": 0.5, "strict": 0.0}
    refused = CliRunner().invoke(main, [*base, "--min-overlap", "0"])
    assert refused.exit_code == 2 and "--min-overlap" in refused.output


def _module_source() -> str:
    cut = len(BEFORE) + QUOTE.index(" where the cache")
    return (
        f"TEXT = {TEXT!r}\nCUT = {cut}\n"
        "def search(question, k):\n"
        "    return [\n"
        '        {"id": "cache.md#1", "doc": "cache.md", "text": TEXT[CUT:]},\n'
        '        {"id": "cache.md#0", "doc": "cache.md", "text": TEXT[:CUT]},\n'
        "    ][:k]\n"
    )


def test_a_chunk_starting_with_the_last_word_of_a_short_quote_does_not_cover_it() -> None:
    """Issue 24.3: docs/levels.md's chance overlap, from the bundled docs: a chunk that starts
    with `requirements.txt` shares 15 of the 29 characters of "uv export --format
    requirements.txt" (half, 14.5, is met; the 16-character floor is not)."""
    quote = "uv export --format requirements.txt"
    gold = GoldSet.from_records(
        [{"id": "q", "question": "?", "relevant": [{"doc": "e.md", "quote": quote}]}]
    )
    chunk = "`requirements.txt`. If you find yourself exporting a `uv.lock` file, open an issue."
    assert quote_overlap(fold_text(chunk), fold_text(quote)) == 15 and len(fold_text(quote)) == 29
    assert covers(gold["q"], Hit("e.md#3", "e.md", text=chunk), Evidence())[0] == []
    held = "Run: uv export --format requirem"  # 22 of the 29 characters, at the chunk end
    assert covers(gold["q"], Hit("e.md#2", "e.md", text=held), Evidence())[0] == [0]


def test_runs_judged_with_different_min_overlap_are_not_compared(store: Store) -> None:
    """Issue 24.3: a delta between runs covered at 0.5 and at 0.6 would be the rule's, not the
    retriever's: diff refuses it, as it refuses different levels."""
    from ragmeter.compare.comparable import not_comparable

    a = ragmeter.evaluate(GOLD, _split_retriever, k=5, store=store, metrics=["mrr"])
    b = ragmeter.evaluate(
        GOLD, _split_retriever, k=5, store=store, metrics=["mrr"], min_overlap=0.6
    )
    c = ragmeter.evaluate(
        GOLD, _split_retriever, k=5, store=store, metrics=["mrr"], min_overlap=0.5
    )
    assert not_comparable(a.run, b.run) == ["different --min-overlap (0.6 vs 0.5) — not compared"]
    assert not_comparable(a.run, c.run) == []


def test_docstring_examples() -> None:
    """Issue 24.3: the examples in the coverage rule's modules' docstrings hold."""
    import doctest

    from ragmeter.compare import comparable
    from ragmeter.evaluation import passages, setup
    from ragmeter.gold import quotes
    from ragmeter.retrievers import framework_docs

    for module in (quotes, passages, setup, comparable, framework_docs):
        failures, tried = doctest.testmod(module)
        assert failures == 0 and tried > 0, module.__name__
