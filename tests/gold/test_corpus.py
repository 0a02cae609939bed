"""Corpus loading: folders, JSONL, BEIR folders, messy encodings, empty documents, errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from _paths import SHARED
from ragmeter.corpus import Corpus, load_corpus
from ragmeter.documents import Document
from ragmeter.errors import CorpusError

DATA = SHARED / "data"


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def test_folder_ids_titles_and_order(tmp_path: Path) -> None:
    """Issue 3: doc id = POSIX path relative to the folder; title = heading or stem."""
    _write(tmp_path / "guides" / "install.md", "intro\n\n# Installing\n\nRun it.\n")
    _write(tmp_path / "a.txt", "# not a title in a text file\nplain")
    _write(tmp_path / "notes.rst", "Release notes\n=============\n\nStuff.")
    _write(tmp_path / "fm.markdown", "---\ntitle: From front matter\n---\n# Heading\nx")
    _write(tmp_path / "ignored.py", "print('no')")
    _write(tmp_path / ".hidden" / "x.md", "# hidden")
    corpus = load_corpus(tmp_path)
    assert list(corpus.documents) == ["a.txt", "fm.markdown", "guides/install.md", "notes.rst"]
    assert corpus["guides/install.md"].title == "Installing"
    assert corpus["a.txt"].title == "a"
    assert corpus["notes.rst"].title == "Release notes"
    assert corpus["fm.markdown"].title == "From front matter"
    assert corpus["guides/install.md"].text == "intro\n\n# Installing\n\nRun it.\n"
    assert len(corpus) == 4 and "a.txt" in corpus
    assert corpus.warnings == () and corpus.n_empty == 0 and corpus.n_fallback_decoded == 0


def test_heading_inside_code_fence_is_not_the_title(tmp_path: Path) -> None:
    """Issue 3: the first heading outside fenced code is the title."""
    _write(tmp_path / "x.md", "```\n# comment\n```\n\n## Real title ##\n")
    assert load_corpus(tmp_path)["x.md"].title == "Real title"


def test_crlf_normalised_in_folder_files(tmp_path: Path) -> None:
    """Issue 3: line ends become \\n so gold quotes match whatever the platform."""
    _write(tmp_path / "w.txt", b"one\r\ntwo\rthree")
    assert load_corpus(tmp_path)["w.txt"].text == "one\ntwo\nthree"


def test_non_utf8_files_fall_back_and_are_reported_once(tmp_path: Path) -> None:
    """Issue 3: cp1252 bytes decode with a fallback, counted in ONE summary line."""
    _write(tmp_path / "a.txt", b"caf\xe9 au lait")
    _write(tmp_path / "b.txt", b"\x93quoted\x94")
    _write(tmp_path / "c.txt", b"undefined in cp1252: \x81")  # needs the latin-1 step
    _write(tmp_path / "ok.md", "caf\u00e9")
    _write(tmp_path / "bom.md", b"\xef\xbb\xbf# T\nx")
    corpus = load_corpus(tmp_path)
    assert corpus["a.txt"].text == "caf\u00e9 au lait"
    assert corpus["b.txt"].text == "\u201cquoted\u201d"
    assert corpus["c.txt"].text == "undefined in cp1252: \x81"
    assert corpus["bom.md"].text == "# T\nx"
    assert corpus.n_fallback_decoded == 3
    assert len(corpus.warnings) == 1
    assert corpus.warnings[0].startswith("3 files were not UTF-8 and were decoded as cp1252")
    assert corpus.warnings[0].endswith(": a.txt, b.txt, c.txt")


def test_empty_documents_skipped_and_counted(tmp_path: Path) -> None:
    """Issue 3/4: documents with no text are skipped, counted and named in a warning."""
    _write(tmp_path / "empty.md", "")
    _write(tmp_path / "blank.txt", "  \n\t\n")
    _write(tmp_path / "full.md", "# Hi\ntext")
    corpus = load_corpus(tmp_path)
    assert list(corpus.documents) == ["full.md"]
    assert corpus.n_empty == 2
    assert corpus.warnings == ("2 documents with no text were skipped: blank.txt, empty.md",)


def test_jsonl_documents(tmp_path: Path) -> None:
    """Issue 3: JSONL with id or _id, text, optional title and metadata; file order kept."""
    lines = [
        {"id": "z", "text": "last letter", "title": "Z", "metadata": {"lang": "en"}},
        {"_id": 7, "text": "numeric id"},
        {"id": "e", "text": ""},
    ]
    path = _write(tmp_path / "docs.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    corpus = load_corpus(path)
    assert list(corpus.documents) == ["z", "7"]
    assert corpus["z"] == Document(id="z", text="last letter", title="Z", metadata={"lang": "en"})
    assert corpus.n_empty == 1
    gz = tmp_path / "docs.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert load_corpus(gz).content_hash == corpus.content_hash


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: invalid JSON at column 2"),
        ('["a list"]', "line 2: expected a JSON object, got list"),
        ('{"text": "no id"}', 'line 2: missing "id" (or "_id")'),
        ('{"id": "b"}', 'line 2: missing "text"'),
        ('{"id": "b", "text": 5}', 'line 2: "text" must be a string, got int'),
        ('{"id": ["b"], "text": "x"}', 'line 2: "id" must be a string, got list'),
        ('{"id": "b", "text": "x", "title": 1}', 'line 2: "title" must be a string, got int'),
        ('{"id": "b", "text": "x", "metadata": []}', 'line 2: "metadata" must be an object'),
        ('{"id": "a", "text": "again"}', "duplicate document id 'a'"),
    ],
    ids=[
        "bad-json",
        "not-object",
        "no-id",
        "no-text",
        "text-int",
        "id-list",
        "title",
        "meta",
        "dup",
    ],
)
def test_jsonl_errors_name_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    """Issue 3: malformed JSONL is a CorpusError naming file, line and field."""
    path = _write(tmp_path / "docs.jsonl", '{"id": "a", "text": "fine"}\n' + line + "\n")
    with pytest.raises(CorpusError) as info:
        load_corpus(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_missing_path_and_empty_corpus_are_errors(tmp_path: Path) -> None:
    """Issue 3: a missing path, an empty folder, an all-empty corpus, a wrong file type."""
    with pytest.raises(CorpusError, match="no such file or directory"):
        load_corpus(tmp_path / "nope")
    with pytest.raises(CorpusError, match="no documents"):
        load_corpus(tmp_path)
    _write(tmp_path / "e.md", "\n")
    with pytest.raises(CorpusError, match=r"no documents \(1 had no text\)"):
        load_corpus(tmp_path)
    csv = _write(tmp_path / "x.csv", "a,b")
    with pytest.raises(CorpusError, match="not a folder, .jsonl or .jsonl.gz"):
        load_corpus(csv)


def test_beir_folder(tmp_path: Path) -> None:
    """Issue 3: a folder with corpus.jsonl is read as BEIR (_id, title, text)."""
    rows = [{"_id": "d1", "title": "T1", "text": "one"}, {"_id": "d2", "title": "", "text": "two"}]
    _write(tmp_path / "corpus.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    _write(tmp_path / "queries.jsonl", json.dumps({"_id": "q1", "text": "one?"}) + "\n")
    _write(tmp_path / "readme.md", "# not a document of a BEIR folder")
    corpus = load_corpus(tmp_path)
    assert list(corpus.documents) == ["d1", "d2"]
    assert corpus["d1"].title == "T1"


def test_content_hash_is_stable_and_content_sensitive() -> None:
    """Issue 3: the hash covers id, title and text (it keys the index cache)."""
    a = Corpus.from_documents([Document("x", "text", "T")])
    assert a.content_hash == Corpus.from_documents([Document("x", "text", "T")]).content_hash
    for other in (Document("y", "text", "T"), Document("x", "text!", "T"), Document("x", "text")):
        assert Corpus.from_documents([other]).content_hash != a.content_hash
    assert len(a.content_hash) == 64


def test_scifact_beir_corpus() -> None:
    """Issue 3: the shared SciFact BEIR folder loads all 5,183 documents."""
    folder = DATA / "scifact"
    if not folder.is_dir():
        pytest.skip(f"shared data not present: {folder}")
    corpus = load_corpus(folder)
    assert len(corpus) == 5183
    assert corpus.warnings == ()
