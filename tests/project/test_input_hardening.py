"""Issue 19 (3, 5, 10, 11): gold, corpus and JSONL parsing with bounded resources and clear errors.

Each test reproduces a red-team finding the way it was found: a real file on
disk (a 570-byte alias file, a real symlink, a FIFO...) through the real CLI,
which must exit 2 with one line naming the file, never a traceback or a hang.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ragmeter.cli import main
from ragmeter.corpus import load_corpus
from ragmeter.errors import CorpusError, GoldSetError
from ragmeter.formats.beir import read_beir_queries
from ragmeter.gold.files import load_gold

ITEM = '{"id": "q1", "question": "Why?"'


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _refused(result: Result, *fragments: str) -> None:
    """Exit 2, one ``Error:`` line holding every fragment, and no traceback."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert result.output.startswith("Error: "), result.output
    for fragment in fragments:
        assert fragment in result.output, result.output


def _laughs(path: Path) -> Path:
    """Nine levels of ten aliases: about 570 bytes that would expand to 10**9 strings."""
    lines = ["- id: q1", "  question: What?", "  metadata:"]
    lines.append(
        '    l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'
    )
    lines += [f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_yaml_billion_laughs_is_refused_at_the_first_alias(tmp_path: Path) -> None:
    """Issue 19.3: the 570-byte alias file ran 64 s to a MemoryError; now a clear exit 2,
    naming line 4, where the first alias is: nothing was expanded. (The time it takes is
    benchmarks/hot_paths.py's "YAML billion laughs" line: well under a second.)"""
    path = _laughs(tmp_path / "laughs.yaml")
    assert 540 <= path.stat().st_size <= 640
    with pytest.raises(GoldSetError, match="line 4: YAML anchors and aliases"):
        load_gold(path)
    result = _cli("gold", "check", str(path))
    _refused(result, f"gold set {path} line 4: YAML anchors and aliases are not supported")


def test_yaml_alias_of_a_scalar_is_refused(tmp_path: Path) -> None:
    """Issue 19.3: aliases are refused outright, not only when they are big."""
    path = tmp_path / "g.yaml"
    path.write_text("- id: &x q1\n  question: *x\n")
    with pytest.raises(GoldSetError, match="line 1: YAML anchors and aliases are not supported"):
        load_gold(path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("g.jsonl", '{"id": ' + "9" * 4301 + ', "question": "?"}\n', "line 1: an integer of 4301"),
        ("g.yaml", "- id: " + "9" * 5000 + "\n  question: x\n", "line 1: an integer of 5000"),
        ("g.json", '[{"id": "q", "question": "?", "metadata": {"n": ' + "1" * 9000 + "}}]", "an integer of 9000"),
    ],
    ids=["jsonl", "yaml", "json"],
)  # fmt: skip
def test_huge_integers_in_gold_are_exit_2(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    """Issue 19.11: integers over 4,300 digits were a ValueError traceback."""
    path = tmp_path / name
    path.write_text(text)
    _refused(_cli("gold", "check", str(path)), str(path), message, "(at most 4300)")


def test_huge_integer_in_corpus_jsonl_is_a_corpus_error(tmp_path: Path) -> None:
    """Issue 19.11: the same in a corpus JSONL, with file and line."""
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": ' + "7" * 5000 + ', "text": "y"}\n')
    with pytest.raises(CorpusError, match=r"docs.jsonl line 2: an integer of 5000 digits"):
        load_corpus(path)


@pytest.mark.parametrize("depth", [100, 100_000], ids=["over-limit", "recursion"])
def test_deeply_nested_jsonl_lines_are_exit_2(tmp_path: Path, depth: int) -> None:
    """Issue 19.11: deeply nested JSONL lines were a RecursionError traceback."""
    nested = "[" * depth + "]" * depth
    gold = tmp_path / "g.jsonl"
    gold.write_text(ITEM + ', "metadata": {"a": ' + nested + "}}\n")
    _refused(_cli("gold", "check", str(gold)), f"{gold} line 1: nested more than 64 levels deep")
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"id": "a", "text": "x", "metadata": {"a": ' + nested + "}}\n")
    with pytest.raises(CorpusError, match="line 1: nested more than 64 levels deep"):
        load_corpus(corpus)


def test_deeply_nested_yaml_is_exit_2(tmp_path: Path) -> None:
    """Issue 19.11: deep YAML nesting is refused before construction recurses."""
    path = tmp_path / "g.yaml"
    path.write_text("- id: q\n  question: x\n  metadata: {a: " + "[" * 200 + "]" * 200 + "}\n")
    _refused(_cli("gold", "check", str(path)), str(path), "nested")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("g.yaml", "- id: q1\n  question: first\n  tags: [a]\n  question: second\n",
         'duplicate key "question" (lines 2 and 4)'),
        ("g.json", '[\n  {"id": "q1",\n   "question": "first",\n   "question": "second"}\n]\n',
         'duplicate key "question" (lines 3 and 4)'),
        ("g.jsonl", ITEM + ', "question": "again"}\n', 'line 1: duplicate key "question"'),
    ],
    ids=["yaml", "json", "jsonl"],
)  # fmt: skip
def test_duplicate_keys_are_an_error_naming_both_lines(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    """Issue 19.10: duplicate YAML/JSON keys silently kept the last value."""
    path = tmp_path / name
    path.write_text(text)
    _refused(_cli("gold", "check", str(path)), str(path), message)


def test_duplicate_key_in_corpus_jsonl(tmp_path: Path) -> None:
    """Issue 19.10: a corpus line with "text" twice is refused, not half-read."""
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "one", "text": "two"}\n')
    with pytest.raises(CorpusError, match='docs.jsonl line 1: duplicate key "text"'):
        load_corpus(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (ITEM[:-1] + 'x\\ud800y"}', "line 1: item q1 question: holds a lone surrogate (U+D800)"),
        ('{"id": "q\\u001b[2J", "question": "?"}', 'line 1: item "q\\u001b[2J" id: holds a control'),
        (ITEM + ', "tags": ["ok", "b\\u0007"]}', "item q1 tags: entry 1 holds a control character"),
        (ITEM + ', "relevant": ["d\\u0000"]}', "item q1 relevant[0].doc: holds a control character"),
        (ITEM + ', "metadata": {"k": "\\udfff"}}', "metadata: holds a lone surrogate (U+DFFF)"),
    ],
    ids=["surrogate-question", "escape-in-id", "bell-in-tag", "nul-in-doc", "surrogate-metadata"],
)  # fmt: skip
def test_surrogates_and_control_characters_are_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    """Issue 19.10: "x\\ud800y" passed gold check, was stored, then broke show and /runs/N."""
    path = tmp_path / "g.jsonl"
    path.write_text(text + "\n")
    result = _cli("gold", "check", str(path))
    _refused(result, str(path), message)
    assert "\x1b" not in result.output


def test_tab_and_newline_stay_allowed(tmp_path: Path) -> None:
    """Issue 19.10: only other control characters are refused."""
    path = tmp_path / "g.jsonl"
    path.write_text(ITEM[:-1] + 'a\\tb\\nc"}\n')
    assert load_gold(path)["q1"].question == "Why?a\tb\nc"


def test_surrogates_refused_in_corpus_and_beir(tmp_path: Path) -> None:
    """Issue 19.10: corpus text and ids, and BEIR query ids, refuse what cannot be printed."""
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "bad \\ud800 text"}\n')
    with pytest.raises(CorpusError, match=r'line 1: "text" holds a lone surrogate'):
        load_corpus(path)
    path.write_text('{"id": "a\\u001b", "text": "x"}\n')
    with pytest.raises(CorpusError, match=r'line 1: "id" holds a control character \(U\+001B\)'):
        load_corpus(path)
    (tmp_path / "queries.jsonl").write_text('{"_id": "q\\ud800", "text": "?"}\n')
    with pytest.raises(GoldSetError, match=r'queries .* line 1: "_id" holds a lone surrogate'):
        read_beir_queries(tmp_path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("g.jsonl", ITEM + ', "metadata": {"score": NaN}}', "line 1: NaN is not a number JSON allows"),
        ("g.jsonl", ITEM + ', "metadata": {"s": Infinity}}', "Infinity is not a number JSON allows"),
        ("g.jsonl", ITEM + ', "metadata": {"s": 1e999}}', "number 1e999 is out of range"),
        ("g.yaml", "- id: q1\n  question: x\n  metadata: {s: .inf}\n", "line 3: .inf is not a number"),
    ],
    ids=["nan", "infinity", "overflow", "yaml-inf"],
)  # fmt: skip
def test_nan_and_infinity_are_refused(tmp_path: Path, name: str, text: str, message: str) -> None:
    """Issue 19.10: NaN and infinite numbers are not JSON; they were accepted."""
    path = tmp_path / name
    path.write_text(text + "\n")
    _refused(_cli("gold", "check", str(path)), str(path), message)


def test_corpus_with_no_indexable_word_is_a_clear_error(tmp_path: Path) -> None:
    """Issue 19.11: bm25 over punctuation only was `max() arg is an empty sequence`."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("!!! ... ???\n")
    result = _cli("retrieve", "anything", "--corpus", str(tmp_path / "docs"))
    _refused(result, "bm25: no indexable word in the corpus (1 chunks")
    assert "max()" not in result.output


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses file names that are not UTF-8")
def test_file_names_that_are_not_utf8_are_skipped_and_reported(tmp_path: Path) -> None:
    """Issue 19.11: a name with byte 0xe9 became a surrogate id that broke printing."""
    (tmp_path / "ok.md").write_text("# Fine\nfine text\n")
    (tmp_path / os.fsdecode(b"caf\xe9.md")).write_text("# Bad name\ntext\n")
    corpus = load_corpus(tmp_path)
    assert list(corpus.documents) == ["ok.md"]
    assert corpus.warnings == (
        "1 file was skipped because the name is not valid UTF-8 text or holds a control "
        "character: 'caf\\xe9.md'",
    )


# --- issue 19.5: corpus folders stay inside the folder -------------------------------------


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """A corpus folder with one document and a link to a file outside it."""
    (tmp_path / "outside.md").write_text("# Outside\nsecret outside text\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "in.md").write_text("# Inside\ninside text\n")
    (folder / "leak.md").symlink_to(Path("..") / "outside.md")
    return folder


def test_symlink_out_of_the_folder_is_refused(linked: Path) -> None:
    """Issue 19.5: docs/leak.md -> ../outside.md was indexed and shown."""
    with pytest.raises(CorpusError) as caught:
        load_corpus(linked)
    assert str(caught.value) == (
        f"corpus {linked / 'leak.md'}: a link to {(linked.parent / 'outside.md').resolve()}, "
        "outside the corpus folder; pass --follow-symlinks (follow_symlinks=True) to index it"
    )
    result = _cli("retrieve", "secret", "--corpus", str(linked))
    _refused(result, "outside the corpus folder")
    assert "secret outside text" not in result.output


def test_follow_symlinks_indexes_the_outside_file(linked: Path) -> None:
    """Issue 19.5: --follow-symlinks (follow_symlinks=True) is the explicit way to allow it."""
    assert sorted(load_corpus(linked, follow_symlinks=True).documents) == ["in.md", "leak.md"]
    result = _cli("retrieve", "secret outside", "--corpus", str(linked), "--follow-symlinks")
    assert result.exit_code == 0, result.output
    assert "leak.md#0" in result.output


def test_link_inside_the_folder_is_fine(linked: Path) -> None:
    """Issue 19.5: a link that resolves inside the folder is an ordinary document."""
    (linked / "leak.md").unlink()
    (linked / "alias.md").symlink_to("in.md")
    assert sorted(load_corpus(linked).documents) == ["alias.md", "in.md"]


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("follow", [False, True], ids=["default", "follow-symlinks"])
def test_link_to_proc_environ_is_refused_even_when_following(linked: Path, follow: bool) -> None:
    """Issue 19.5: env.md -> /proc/self/environ put the environment into the store."""
    (linked / "leak.md").unlink()
    (linked / "env.md").symlink_to("/proc/self/environ")
    with pytest.raises(CorpusError, match=r"env.md: a link to /proc/.*never indexed"):
        load_corpus(linked, follow_symlinks=follow)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_in_the_folder_is_refused_not_read(linked: Path) -> None:
    """Issue 19.5: a FIFO would block the reader forever; it is refused before opening."""
    (linked / "leak.md").unlink()
    os.mkfifo(linked / "pipe.md")
    with pytest.raises(CorpusError, match=r"pipe.md: not a regular file"):
        load_corpus(linked, follow_symlinks=True)


def test_link_to_a_folder_outside_is_followed_only_when_asked(linked: Path) -> None:
    """Issue 19.5: folder links are not walked by default, and walked once when following."""
    (linked / "leak.md").unlink()
    (linked.parent / "more").mkdir()
    (linked.parent / "more" / "m.md").write_text("# M\nmore text\n")
    (linked / "more").symlink_to(linked.parent / "more")
    (linked.parent / "more" / "loop").symlink_to(linked)  # a cycle back into the corpus
    assert sorted(load_corpus(linked).documents) == ["in.md"]
    following = load_corpus(linked, follow_symlinks=True)
    assert sorted(following.documents) == ["in.md", "more/m.md"]


def test_every_yaml_file_refuses_aliases(tmp_path: Path) -> None:
    """Issue 19.3: pipeline files, sweep grids and calibration sets use the strict loader too."""
    from ragmeter.errors import ConfigError, InputError
    from ragmeter.evaluation.sweep import load_grid
    from ragmeter.judging.calibration import load_calibration_set
    from ragmeter.pipelines.pipeline import load_pipeline_file

    laughs = _laughs(tmp_path / "laughs.yaml")
    for loader, error in (
        (load_pipeline_file, ConfigError),
        (load_grid, ConfigError),
        (load_calibration_set, InputError),
    ):
        with pytest.raises(error, match="YAML anchors and aliases are not supported"):
            loader(laughs)
    duplicated = tmp_path / "p.yaml"
    duplicated.write_text("retriever: bm25\nretriever: dense\n")
    with pytest.raises(ConfigError, match="retriever"):
        load_pipeline_file(duplicated)
