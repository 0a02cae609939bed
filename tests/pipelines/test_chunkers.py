"""Chunkers: spans exact, coverage complete, headings tracked, code fences kept whole."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _paths import SHARED
from ragmeter.corpus import load_corpus
from ragmeter.documents import Chunk, Document
from ragmeter.errors import ConfigError
from ragmeter.pipelines.chunkers import ChunkerConfig, chunk_corpus, chunk_document

DATA = SHARED / "data"
KINDS = ["markdown", "paragraph", "fixed", "sentence", "none"]


def _check_invariants(doc: Document, chunks: list[Chunk], cfg: ChunkerConfig) -> None:
    covered = [False] * len(doc.text)
    prev_start, prev_end = -1, -1
    for n, c in enumerate(chunks):
        assert c.doc_id == doc.id
        assert c.id == (doc.id if cfg.kind == "none" else f"{doc.id}#{n}")
        assert c.text == doc.text[c.start : c.end]
        assert c.start > prev_start and c.end > prev_end, "spans in document order"
        if cfg.kind != "none":
            assert 0 < len(c.text) <= cfg.size
            assert c.text == c.text.strip()
        for i in range(c.start, c.end):
            covered[i] = True
        prev_start, prev_end = c.start, c.end
    lost = [i for i, ch in enumerate(doc.text) if not ch.isspace() and not covered[i]]
    assert not lost, f"non-whitespace characters in no chunk: {lost[:10]}"


_pieces = st.sampled_from(
    [
        "# A",
        "## B c",
        "### ",
        "```",
        "~~~~",
        "\n",
        "\n\n",
        " ",
        "word",
        "Sentence. ",
        "x" * 70,
        "- item",
        "Done!",
        "\t",
        "\r\n",
        "é",
        "#nope",
    ]
)
_texts = st.one_of(st.text(max_size=400), st.lists(_pieces, max_size=80).map("".join))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=_texts,
    kind=st.sampled_from(KINDS),
    size=st.integers(20, 200),
    frac=st.floats(0, 0.5),
    doc_id=st.sampled_from(["a.md", "b.txt"]),
)
def test_chunks_cover_document_exactly(
    text: str, kind: str, size: int, frac: float, doc_id: str
) -> None:
    """Issue 3/4: for any text, text == doc.text[start:end], spans in order, full coverage."""
    cfg = ChunkerConfig(kind=kind, size=size, overlap=int(size * frac) // 1 if frac else 0)
    doc = Document(id=doc_id, text=text, title="T")
    _check_invariants(doc, chunk_document(doc, cfg), cfg)


MD = """# Install

## From PyPI

Use pip to install the package. It works on every platform that has a Python.

## From source

Clone the repository first.

```bash
# this is a comment, not a heading
git clone https://example.com/repo

make install
```

# Usage

Run it.
"""


def test_markdown_headings_paths_and_fences() -> None:
    """Issue 3: sections split on headings outside fences; heading path kept; a heading
    alone is merged into the next section."""
    doc = Document(id="guide.md", text=MD, title="Install")
    chunks = chunk_document(doc, ChunkerConfig(size=1000, overlap=100, min_size=40))
    assert [c.metadata["heading_path"] for c in chunks] == [
        ["Install", "From PyPI"],
        ["Install", "From source"],
        ["Usage"],
    ]
    assert chunks[0].text.startswith("# Install\n\n## From PyPI")
    assert "# this is a comment" in chunks[1].text and chunks[1].text.endswith("```")
    assert chunks[2].text == "# Usage\n\nRun it."
    assert all(c.metadata["title"] == "Install" for c in chunks)


def test_long_section_split_at_paragraphs_with_overlap_not_inside_code() -> None:
    """Issue 3: long sections split at blank lines, fences kept whole, small overlap
    snapped to a line or word start."""
    para = "Lorem ipsum dolor sit amet consectetur. " * 4
    code = "```python\n" + "\n\n".join(f"x{i} = {i}" for i in range(12)) + "\n```"
    text = f"# Big\n\n{para}\n\n{code}\n\n{para}\n\n{para}"
    doc = Document(id="big.md", text=text)
    cfg = ChunkerConfig(size=300, overlap=40)
    chunks = chunk_document(doc, cfg)
    _check_invariants(doc, chunks, cfg)
    assert len(chunks) >= 3
    fence = (text.index("```python"), text.rindex("```") + 3)
    assert any(c.start <= fence[0] and c.end >= fence[1] for c in chunks), "code block cut"
    assert not any(fence[0] < c.end < fence[1] for c in chunks), "a chunk ends inside code"
    for prev, c in zip(chunks, chunks[1:], strict=False):
        assert c.start < prev.end, "consecutive pieces overlap"
        assert prev.end - c.start <= cfg.overlap
        assert c.start == 0 or text[c.start - 1].isspace(), "overlap starts at a word"
        assert c.metadata["heading_path"] == ["Big"]


def test_plain_text_documents_split_by_paragraph() -> None:
    """Issue 3: .txt documents are packed by paragraphs; '#' lines are not headings."""
    text = "# not heading\n\n" + "\n\n".join(f"Paragraph {i} has some words." for i in range(6))
    doc = Document(id="notes.txt", text=text)
    chunks = chunk_document(doc, ChunkerConfig(size=70, overlap=0))
    assert all(c.metadata["heading_path"] == [] for c in chunks)
    assert [c.text for c in chunks][:2] == [
        "# not heading\n\nParagraph 0 has some words.",
        "Paragraph 1 has some words.\n\nParagraph 2 has some words.",
    ]


def test_chunker_none_keeps_documents_whole() -> None:
    """Issue 3: --chunker none: one chunk per document, chunk id == doc id."""
    docs = [Document("a", "alpha " * 500), Document("b", "beta")]
    chunks = chunk_corpus(docs, ChunkerConfig(kind="none"))
    assert [(c.id, c.doc_id, c.start, c.end) for c in chunks] == [
        ("a", "a", 0, 3000),
        ("b", "b", 0, 4),
    ]


def test_fixed_and_sentence_chunkers() -> None:
    """Issue 4: fixed windows overlap and keep words whole; sentence chunks end at sentences."""
    text = " ".join(f"Sentence number {i} is here." for i in range(20))
    doc = Document(id="s.txt", text=text)
    fixed = chunk_document(doc, ChunkerConfig(kind="fixed", size=100, overlap=20))
    assert all(re.fullmatch(r"\S.*\S", c.text) for c in fixed)
    assert all(b.start < a.end for a, b in zip(fixed, fixed[1:], strict=False))
    sent = chunk_document(doc, ChunkerConfig(kind="sentence", size=100, overlap=0))
    assert all(c.text.endswith("here.") and c.text.startswith("Sentence") for c in sent)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "semantic"}, "unknown kind 'semantic'"),
        ({"size": 5}, "size must be an integer >= 20"),
        ({"size": 100, "overlap": 60}, "overlap must be an integer from 0 to size/2"),
        ({"size": 100, "min_size": 101}, "min_size must be an integer from 0 to size"),
    ],
    ids=["kind", "size", "overlap", "min-size"],
)
def test_bad_config_is_config_error(kwargs: dict[str, object], message: str) -> None:
    """Issue 4: a wrong chunker config is a ConfigError (exit 2) saying what is allowed."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        ChunkerConfig(**kwargs)  # type: ignore[arg-type]


def test_config_key_is_stable_and_distinct() -> None:
    """Issue 3: the key feeds cache keys: equal configs equal keys, any change differs."""
    assert ChunkerConfig().key() == ChunkerConfig(kind="markdown", size=1000, overlap=100).key()
    keys = {
        ChunkerConfig().key(),
        ChunkerConfig(size=500).key(),
        ChunkerConfig(overlap=0).key(),
        ChunkerConfig(kind="paragraph").key(),
        ChunkerConfig(kind="none").key(),
    }
    assert len(keys) == 5
    assert ChunkerConfig(kind="none", size=50).key() == ChunkerConfig(kind="none").key()


def test_uv_docs_chunk_cleanly() -> None:
    """Issue 3: the demo knowledge base chunks with every invariant and a heading path."""
    folder = DATA / "uv-docs"
    if not folder.is_dir():
        pytest.skip(f"shared data not present: {folder}")
    corpus = load_corpus(folder)
    cfg = ChunkerConfig()
    chunks = chunk_corpus(corpus, cfg)
    for doc in corpus:
        _check_invariants(doc, [c for c in chunks if c.doc_id == doc.id], cfg)
    md = [c for c in chunks if c.doc_id.endswith(".md")]
    with_path = sum(1 for c in md if c.metadata["heading_path"])
    assert with_path / len(md) > 0.9
