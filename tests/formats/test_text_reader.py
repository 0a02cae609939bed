"""The one text/JSONL reader (``formats/text.py``) and the readers built on it."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ragmeter.corpus import load_corpus
from ragmeter.errors import ConfigError, CorpusError, GoldSetError
from ragmeter.formats.beir import read_beir_queries
from ragmeter.formats.text import (
    decode_text,
    iter_jsonl,
    numbered_lines,
    parse_json,
    read_jsonl,
    read_toml,
)
from ragmeter.gold.files import load_gold

BOM = b"\xef\xbb\xbf"


def test_numbered_lines_split_on_newline_only() -> None:
    """Issue 13.3: one line splitter: CRLF tolerated, U+2028 stays inside its line."""
    assert list(numbered_lines("a\r\nb\u2028c\n")) == [(1, "a"), (2, "b\u2028c"), (3, "")]


def test_read_jsonl_streams_gzip_with_line_numbers(tmp_path: Path) -> None:
    """Issue 13.3: the streaming reader numbers lines, skips blanks and reads .gz."""
    path = tmp_path / "d.jsonl.gz"
    path.write_bytes(gzip.compress(BOM + b'{"a": 1}\r\n\r\n{"a": 2}\n'))
    assert list(read_jsonl(path, "corpus", CorpusError)) == [(1, {"a": 1}), (3, {"a": 2})]


def test_decode_text_falls_back_to_cp1252_then_latin1() -> None:
    """Issue 13.3: the corpus fallback lives in the reader: cp1252, then latin-1."""
    assert decode_text(BOM + "é".encode()) == ("é", "utf-8")
    assert decode_text("€".encode("cp1252")) == ("€", "cp1252")
    assert decode_text(b"\x81") == ("\x81", "latin-1")  # undefined in cp1252


def test_one_json_error_wording_everywhere(tmp_path: Path) -> None:
    """Issue 13.3: gold, BEIR queries and corpus JSONL say the same thing about bad JSON."""
    (tmp_path / "g.jsonl").write_text('{"id": "a", "question": "?"}\n{"id": \n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "a", "text": "?"}\n{"_id": \n')
    (tmp_path / "c.jsonl").write_text('{"id": "a", "text": "?"}\n{"id": \n')
    wording = r"line 2: invalid JSON at column \d+: Expecting value"
    with pytest.raises(GoldSetError, match=wording):
        load_gold(tmp_path / "g.jsonl")
    with pytest.raises(GoldSetError, match=wording):
        read_beir_queries(tmp_path)
    with pytest.raises(CorpusError, match=wording):
        load_corpus(tmp_path / "c.jsonl")


def test_corpus_jsonl_bad_byte_names_line_and_column(tmp_path: Path) -> None:
    """Issue 13.3: a corpus JSONL that is not UTF-8 names the line and column (it named neither)."""
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a", "text": "ok"}\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(CorpusError) as caught:
        load_corpus(path)
    assert str(caught.value) == (
        f"corpus {path} line 2: not UTF-8 text (byte 0xe9 at column 25); save it as UTF-8"
    )


def test_bom_dropped_in_queries_and_corpus_jsonl(tmp_path: Path) -> None:
    """Issue 13.3: a BOM never becomes part of the first id, in any JSONL we read."""
    (tmp_path / "queries.jsonl").write_bytes(BOM + b'{"_id": "q1", "text": "?"}\n')
    assert list(read_beir_queries(tmp_path)) == ["q1"]
    path = tmp_path / "c.jsonl"
    path.write_bytes(BOM + b'{"id": "d1", "text": "x"}\n')
    assert list(load_corpus(path).documents) == ["d1"]


def test_iter_jsonl_objects_only() -> None:
    """Issue 13.3: JSONL of objects refuses other values, naming the line."""
    with pytest.raises(CorpusError, match="line 2: expected a JSON object, got list"):
        list(iter_jsonl([(1, "{}"), (2, "[1]")], "c.jsonl", "corpus", CorpusError))


def test_parse_json_multiline_error_line() -> None:
    """Issue 13.3: a syntax error in a multi-line JSON file names its own line."""
    with pytest.raises(GoldSetError, match=r"g.json line 3: invalid JSON at column 1"):
        parse_json('[\n{"id": "a"},\n]', "g.json", "gold set", GoldSetError)


def test_read_toml_drops_bom_and_names_bad_bytes(tmp_path: Path) -> None:
    """Issue 13.3: ragmeter.toml is read by the same decoder (BOM dropped, bad byte located)."""
    path = tmp_path / "ragmeter.toml"
    path.write_bytes(BOM + b"[health]\nmrr_good = 0.5\n")
    assert read_toml(path, "config", ConfigError) == {"health": {"mrr_good": 0.5}}
    path.write_bytes(b"[health]\n# caf\xe9\n")
    with pytest.raises(ConfigError, match=r"line 2: not UTF-8 text \(byte 0xe9 at column 6\)"):
        read_toml(path, "config", ConfigError)


def test_strict_yaml_is_shared_and_names_lines() -> None:
    """Issue 19.3: the strict YAML loader works for any reader (kind and error class given)."""
    from ragmeter.formats.strict_yaml import load_yaml

    value, node = load_yaml("name: p\ncreated: 2024-01-01\n", "p.yaml", "pipeline", ConfigError)
    assert value == {"name": "p", "created": "2024-01-01"} and node.start_mark.line == 0
    assert load_yaml("", "p.yaml", "pipeline", ConfigError) == (None, None)
    with pytest.raises(ConfigError, match=r'pipeline p.yaml: duplicate key "k" \(lines 1 and 3\)'):
        load_yaml("k: 1\nj: 2\nk: 3\n", "p.yaml", "pipeline", ConfigError)
    with pytest.raises(ConfigError, match=r"pipeline p.yaml line 2: YAML anchors and aliases"):
        load_yaml("a: 1\nb: &x [1]\nc: *x\n", "p.yaml", "pipeline", ConfigError)
