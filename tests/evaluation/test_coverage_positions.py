"""Issue 24.3: positions win whenever the chunk's place is known; an edge overlap of text alone
counts and is said.

Every count here is of folded characters (``fold_text``: NFC, case-folded, letters and digits
only), shown in the comments; the quote folds to 44:
"refundsareacceptedwithinthirtydaysofdelivery".
"""

from __future__ import annotations

import unicodedata

import pytest

import ragmeter
from ragmeter.documents import Document, Hit
from ragmeter.evaluation.passages import Evidence, covers, unplaced_warning
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.quotes import FoldedText, find_quote, fold_text
from ragmeter.store import Store

QUOTE = "Refunds are accepted within thirty days of delivery."
HEAD = "Note. Refunds are accepted within"  # folds to 28; the quote's first 24 end it
# The chunk text HEAD stands twice: at 0 (followed by "reason", not the quote) and at 42, where
# the quote (48-100) follows it.
TWICE = "Note. Refunds are accepted within reason. " + HEAD + QUOTE[27:] + " Keep the box."
DOCS = {"a.md": Document("a.md", TWICE)}
GOLD = GoldSet.from_records(
    [{"id": "q", "question": "refunds?", "relevant": [{"doc": "a.md", "quote": QUOTE}]}]
)
ITEM = GOLD["q"]


def test_the_hand_counts() -> None:
    """Issue 24.3: the offsets and folded lengths the tests below rest on."""
    assert TWICE.count(HEAD) == 2 and TWICE.index(HEAD, 1) == 42
    assert TWICE.index(QUOTE) == 48 and TWICE[48:75] == "Refunds are accepted within"
    assert len(fold_text(QUOTE)) == 44 and len(fold_text(HEAD)) == 28
    assert fold_text(HEAD).endswith(fold_text(QUOTE)[:24])


def test_a_chunk_located_twice_falls_back_to_text_and_is_unplaced() -> None:
    """Issue 24.3: HEAD's text stands twice in a.md, so the corpus cannot place it: the text rule
    decides (24 of the quote's 44 at its end >= max(14, 16): covers) and the cover is unplaced."""
    hit = Hit("h", "a.md", text=HEAD)
    for evidence in (Evidence(), Evidence(DOCS)):
        assert evidence.place(hit) is None
        assert covers(ITEM, hit, evidence) == ([0], False, 1)


def test_a_span_given_decides_by_positions() -> None:
    """Issue 24.3: the same text with its span: at 0-33 it shares nothing with the quote (48-100):
    no cover; at 42-75 it shares "Refunds are accepted within", 24 >= 16: covers. Neither warns."""
    first = Hit("h0", "a.md", text=HEAD, start=0, end=33)
    second = Hit("h1", "a.md", text=HEAD, start=42, end=75)
    assert covers(ITEM, first, Evidence(DOCS)) == ([], False, 0)
    assert covers(ITEM, second, Evidence(DOCS)) == ([0], False, 0)
    # Offsets alone, no text: the span is read from the document, the same answers.
    assert covers(ITEM, Hit("h0", "a.md", start=0, end=33), Evidence(DOCS)).entries == []
    assert covers(ITEM, Hit("h1", "a.md", start=42, end=75), Evidence(DOCS)).entries == [0]


def test_a_chunk_located_once_scores_as_its_span() -> None:
    """Issue 24.3: a text found exactly once is placed where it stands, as its span would place
    it: "reason. Note. Refunds are accepted within" (34-75) shares 24 of the quote (the chunk
    folds to 34: need max(17, 16) = 17): covers, by positions, no warning."""
    text = TWICE[34:75]
    assert TWICE.count(text) == 1 and len(fold_text(text)) == 34
    located = Evidence(DOCS).place(Hit("x", "a.md", text=text))
    spanned = Evidence(DOCS).place(Hit("x", "a.md", text=text, start=34, end=75))
    assert located is not None and spanned is not None and located.range == spanned.range
    assert covers(ITEM, Hit("x", "a.md", text=text), Evidence(DOCS)) == ([0], False, 0)
    assert covers(ITEM, Hit("x", "a.md", text=text), Evidence()) == ([0], False, 1)


def test_a_quote_twice_in_its_document_is_covered_at_either() -> None:
    """Issue 24.3: the quote stands at 7 and at 90; a chunk over the head of the second
    ("refundsareacceptedwithinthirty", 30 >= 16) covers it; one between them covers nothing;
    the quote's text alone is found twice (no place) but contains the quote: covers, no warning."""
    text = "Intro. " + QUOTE + " Then other words follow here for a while. " + QUOTE + " End."
    docs = {"a.md": Document("a.md", text)}
    second = text.index(QUOTE, 10)
    assert (text.index(QUOTE), second) == (7, 102)
    head = Hit("s", "a.md", start=second, end=second + len("Refunds are accepted within thirty"))
    between = Hit("b", "a.md", start=60, end=100)
    assert "Refunds" not in text[60:100]
    assert covers(ITEM, head, Evidence(docs)) == ([0], False, 0)
    assert covers(ITEM, between, Evidence(docs)) == ([], False, 0)
    assert covers(ITEM, Hit("w", "a.md", text=QUOTE), Evidence(docs)) == ([0], False, 0)


def test_markdown_stripped_and_nfd_chunks_are_placed_in_the_file() -> None:
    """Issue 24.3: a converter's text (backticks and link syntax gone) and an NFD text are found
    in the file folded, and their place decides."""
    quote = "Run `uv cache clean` to empty the [cache](cache.md) of every project."
    text = "Intro line here. " + quote + " Café notes follow."
    docs = {"c.md": Document("c.md", text)}
    gold = GoldSet.from_records(
        [{"id": "q", "question": "?", "relevant": [{"doc": "c.md", "quote": quote}]}]
    )
    stripped = Hit("m", "c.md", text="Run uv cache clean to empty the cache of every project.")
    placed = Evidence(docs).place(stripped)
    assert placed is not None
    assert covers(gold["q"], stripped, Evidence(docs)) == ([0], False, 0)
    nfd = Hit("n", "c.md", text=unicodedata.normalize("NFD", "every project. Café notes"))
    assert Evidence(docs).place(nfd) is not None


def test_the_warning_names_the_first_questions_and_the_count() -> None:
    """Issue 24.3: one warning for the run: covers counted, questions named (ten, then how many
    more), and the fix, which names --corpus only when no corpus was given."""
    counts = {f"q{n}": 1 for n in range(12)} | {"none": 0, "q0": 2}
    (text,) = unplaced_warning(counts, corpus=False)
    assert text.startswith("13 covers rest on a quote's head or tail at a chunk's edge, which")
    named = ", ".join(f"q{n}" for n in range(10))
    assert f"in 12 question(s): {named} and 2 more." in text and "--corpus DIR" in text
    (with_corpus,) = unplaced_warning({"q": 1}, corpus=True)
    assert "1 cover rests" in with_corpus and "--corpus" not in with_corpus
    assert "start/end offsets" in with_corpus
    assert unplaced_warning({"q": 0}, corpus=False) == []


def test_evaluate_stores_the_warning_and_the_corpus_moves_only_that_cover() -> None:
    """Issue 24.3: the located-twice chunk ranked first: without the corpus and with it (it is
    not placed either way) hit@1 is 1.0 and the run warns; with its span (0-33) and the corpus,
    positions say no: hit@1 0.0, no warning."""

    def search(spans: bool) -> object:
        def retrieve(question: str, k: int) -> list[dict[str, object]]:
            hit: dict[str, object] = {"id": "a.md#0", "doc": "a.md", "text": HEAD}
            return [{**hit, "start": 0, "end": 33} if spans else hit]

        return retrieve

    def run(spans: bool, corpus: object) -> tuple[float, list[str]]:
        report = ragmeter.evaluate(
            GOLD, search(spans), k=1, store=Store.memory(), metrics=["hit@1"], corpus=corpus
        )
        return report.metrics["hit@1"], report.warnings

    bare, located, placed = run(False, None), run(False, DOCS), run(True, DOCS)
    assert bare[0] == located[0] == 1.0 and placed == (0.0, [])
    assert "in 1 question(s): q." in bare[1][0] and "--corpus DIR" in bare[1][0]
    assert "in 1 question(s): q." in located[1][0] and "start/end offsets" in located[1][0]


@pytest.mark.parametrize(
    ("text", "quote", "span"),
    [
        ("Use `uv cache clean` now.", "Use uv cache clean now", (0, 24)),
        ("Le café ouvre.", unicodedata.normalize("NFD", "le CAFÉ"), (0, 7)),
        (unicodedata.normalize("NFD", "Le café ouvre."), "café ouvre", (3, 14)),
    ],
    ids=["markdown-stripped-quote", "nfd-quote", "nfd-document"],
)
def test_find_quote_folds_as_the_coverage_rule(
    text: str, quote: str, span: tuple[int, int]
) -> None:
    """Issue 24.3: gold check --corpus and gold edits find a quote folded as coverage folds it
    (before: case and spacing only, so these were "not found"); the span is the raw text's."""
    cache: dict[str, FoldedText] = {}
    assert find_quote(text, quote, "d", cache) == span
    assert fold_text(text[span[0] : span[1]]) == fold_text(quote)
    gold = GoldSet.from_records(
        [{"id": "q", "question": "?", "relevant": [{"doc": "d", "quote": quote}]}]
    )
    assert gold.quote_spans({"d": Document("d", text)}) == {("q", 0): span}


def test_folded_text_equals_fold_text_on_the_bundled_docs() -> None:
    """Issue 24.3: the folding with offsets is fold_text's, character for character, on every
    bundled document (so positions are usable), and each folded character maps back to a raw
    character that folds to it."""
    from ragmeter.corpus import load_corpus
    from ragmeter.examples import example_corpus_dir

    documents = load_corpus(example_corpus_dir()).documents
    for doc in documents.values():
        folded = FoldedText.of(doc.text)
        assert folded.exact and folded.folded == fold_text(doc.text), doc.id
        for i in range(0, len(folded.folded), 97):
            start, end = folded.span(i, i + 1)
            assert folded.folded[i] in fold_text(doc.text[start:end])
