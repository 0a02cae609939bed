"""One id resolver for every retriever kind and the gold set (issue 24.2).

Each id shape a real pipeline produces (case, ``./``, NFD, Windows separators, URL-encoding,
file names without folders, ``docs/…`` prefixes, absolute paths) either scores exactly what
an independent position-ranked reference gives or stops with exit 2 naming the fix, with and
without the corpus. None ends with exit 0 and zeros.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml
from click.testing import CliRunner

import ragmeter
from _project import write_project
from ragmeter.cli import main
from ragmeter.errors import ConfigError, InputError
from ragmeter.evaluation.setup import RetrieverSetup, require_gold_docs
from ragmeter.gold.goldset import GoldSet
from ragmeter.retrievers import as_retriever
from ragmeter.retrievers.resolver import IdResolver, normalise_id

TOPICS = ["install", "cache", "python", "tools", "lock", "sync", "venv"]
# Accented names, so NFC and NFD spell them differently.
DOCS = {f"guide/{t}-café.md": f"# {t}\n\nHow to {t}.\n" for t in TOPICS} | {
    "index.md": "# uv\n",
    "misc/notes.md": "notes\n",
}
GOLD = [
    {"id": t, "question": f"how do I {t}?", "relevant": [{"doc": f"guide/{t}-café.md"}]}
    for t in TOPICS
]
K = 4


def _ranked(question: str) -> list[str]:
    """The right document at rank 1, 2 or 3 (by topic), the others after it."""
    topic = question.removeprefix("how do I ").rstrip("?")
    right = f"guide/{topic}-café.md"
    others = [d for d in sorted(DOCS) if d != right]
    at = TOPICS.index(topic) % 3
    return [*others[:at], right, *others[at:]][:K]


def reference_mrr() -> float:
    """Position-ranked: 1 / the position of the right document in the list returned."""
    ranks = [_ranked(item["question"]).index(item["relevant"][0]["doc"]) + 1 for item in GOLD]
    return sum(1 / r for r in ranks) / len(ranks)


Shape = Callable[[str], str]
SHAPES: dict[str, tuple[Shape, str | None, str | None]] = {
    # name: (how the retriever spells an id, outcome without corpus, with corpus); None = exact
    "exact": (lambda d: d, None, None),
    "case": (lambda d: d.upper(), None, None),
    "dot-slash": (lambda d: f"./{d}", None, None),
    "nfd": (lambda d: unicodedata.normalize("NFD", d), None, None),
    "windows": (lambda d: d.replace("/", "\\"), None, None),
    "url-encoded": (lambda d: quote(d), None, None),
    "file-name": (lambda d: Path(d).name, "pass --corpus DIR", None),
    "docs-prefix": (lambda d: f"docs/{d}", "pass --doc-root docs ", None),
    "absolute": (lambda d: f"/srv/site/docs/{d}", "pass --doc-root /srv/site/docs ", None),
}


@pytest.mark.parametrize("with_corpus", [False, True], ids=["no-corpus", "corpus"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_id_shape_scores_exactly_or_stops(shape: str, with_corpus: bool) -> None:
    """Issue 24.2: these shapes scored zeros (case, ./, NFD), 0.33 (Windows, URL-encoded) or
    zeros with no warning (file names, docs/ prefixes); each now equals the position-ranked
    reference, or stops with exit 2 and the fix when only the corpus could confirm it."""
    spell, no_corpus, corpus = SHAPES[shape]
    expected = corpus if with_corpus else no_corpus
    gold = GoldSet.from_records(GOLD)

    def search(question: str, k: int) -> list[dict[str, Any]]:
        return [{"doc": spell(doc), "text": "…"} for doc in _ranked(question)][:k]

    setup = RetrieverSetup(search, documents=DOCS if with_corpus else None)
    if expected is not None:
        with pytest.raises(ConfigError, match=expected) as caught:
            ragmeter.evaluate(gold, setup, k=K)
        assert caught.value.exit_code == 2
        return
    report = ragmeter.evaluate(gold, setup, k=K, metrics=["mrr", f"hit@{K}"])
    assert report.metrics["mrr"] == pytest.approx(reference_mrr())
    assert report.metrics[f"hit@{K}"] == 1.0
    assert report.warnings == []
    assert bool(report.notes) == (shape != "exact")  # what was mapped is said, once


@pytest.mark.parametrize(
    ("retrieved", "expected"),
    [
        ("Guide/Install.md", "guide/install.md"),
        ("./guide/install.md", "guide/install.md"),
        ("guide\\install.md", "guide/install.md"),
        ("guide/install%20notes.md", "guide/install notes.md"),
        ("file:///guide/install.md", "guide/install.md"),
        ("docs/guide/install.md", "guide/install.md"),
        ("install.md", "guide/install.md"),
        ("install notes.md", "guide/install notes.md"),
        ("notes.md", None),
    ],
)
def test_the_resolver_by_hand(retrieved: str, expected: str | None) -> None:
    """Issue 24.2: exact, then spelling and case, then a folder prefix, then a unique tail."""
    known = ["guide/install.md", "guide/install notes.md", "index.md"]
    resolver = IdResolver(gold=known[:1], corpus=known)
    found = resolver.resolve(retrieved)
    assert found.problem is None
    assert found.target == expected


def test_normalise_id_folds_both_sides_alike() -> None:
    """Issue 24.2: NFC, percent-decoding, separators and ./ are read one way on both sides."""
    assert normalise_id(".\\a\\caf%C3%A9.md") == normalise_id("./a/cafe\u0301.md") == "a/café.md"


def test_two_index_files_are_never_guessed(tmp_path: Path) -> None:
    """Issue 24.2: a file name two documents share stops with exit 2 listing both."""
    docs = tmp_path / "docs"
    for name in ("a/index.md", "b/index.md", "c/other.md"):
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(f"# {name}\n", encoding="utf-8")
    gold = [{"id": "q", "question": "index?", "relevant": [{"doc": "a/index.md"}]}]
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(gold), encoding="utf-8")
    (tmp_path / "flat.py").write_text(
        "def search(question, k):\n    return ['other.md', 'index.md']\n", encoding="utf-8"
    )
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--gold",
            str(tmp_path / "gold.yaml"),
            "--corpus",
            str(docs),
            "--retriever",
            f"{tmp_path / 'flat.py'}:search",
            "--store",
            f"sqlite:///{tmp_path / 'r.db'}",
        ],
    )
    assert result.exit_code == 2, result.output
    assert "'index.md' could be any of 'a/index.md', 'b/index.md'" in " ".join(
        result.output.split()
    )


def test_case_is_folded_only_where_unambiguous() -> None:
    """Issue 24.2: with README.md and readme.md both known, README.MD is no one's."""
    resolver = IdResolver(gold=["README.md"], corpus=["README.md", "readme.md"])
    assert resolver.resolve("README.MD").target is None
    assert resolver.resolve("readme.md").target == "readme.md"
    two = IdResolver(gold=["guide/a.md"], corpus=["guide/a.md"])
    assert two.resolve("GUIDE/A.md").target == "guide/a.md"
    assert two.resolve("guide/A.md").problem is not None  # two ids for one document


def test_two_folders_for_one_document_are_never_guessed() -> None:
    """Issue 24.2: v1/x.md and v2/x.md cannot both be x.md."""
    resolver = IdResolver(gold=["x.md"], corpus=["x.md"])
    assert resolver.resolve("v1/x.md").target == "x.md"
    assert "'v1/x.md' and 'v2/x.md' would both be read as 'x.md'" in str(
        resolver.resolve("v2/x.md").problem
    )


def test_gold_spelling_wins_and_the_corpus_check_reads_it() -> None:
    """Issue 24.2: the gold set's ./guide/a.md is the corpus's guide/a.md: retrieved corpus
    ids resolve to the gold spelling, and the corpus check finds it."""
    resolver = IdResolver(gold=["./guide/a.md"], corpus=["guide/a.md", "b.md"])
    assert resolver.resolve("guide/a.md").target == "./guide/a.md"
    gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["./guide/a.md"]}])
    assert require_gold_docs(gold, ["guide/a.md", "b.md"], "docs/") == {}
    with pytest.raises(InputError):
        require_gold_docs(gold, ["b.md"], "docs/")


def test_a_stray_corpus_match_does_not_disarm_the_check() -> None:
    """Issue 24.2: one id that happens to be a corpus document (not a gold one) among
    unresolvable ids used to disarm the check (zeros plus a warning); the check counts gold
    documents found, so the run stops."""
    gold = GoldSet.from_records(GOLD)

    def search(question: str, k: int) -> list[str]:
        return ["index.md", *(f"{n:032x}" for n in range(k - 1))]

    with pytest.raises(ConfigError, match="is a document the gold set names") as caught:
        ragmeter.evaluate(gold, RetrieverSetup(search, documents=DOCS), k=K)
    assert "--doc-field" in str(caught.value)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_project(tmp_path, DOCS, GOLD, monkeypatch)
    ranked = {item["question"]: _ranked(item["question"]) for item in GOLD}
    (tmp_path / "loader.py").write_text(
        f"RANKED = {ranked!r}\n"
        "def search(question, k):\n"
        "    return [{'doc': f'docs/{d}', 'text': '…'} for d in RANKED[question]][:k]\n",
        encoding="utf-8",
    )
    return tmp_path


def test_doc_root_strips_a_relative_prefix(project: Path) -> None:
    """Issue 24.2: DirectoryLoader("docs") ids (docs/guide/…) with the printed fix
    --doc-root docs used to stay zeros (only absolute paths were rewritten); now they score
    the reference, and the mapping is a note, not a stored warning."""
    runner = CliRunner()
    base = ["eval", "--gold", "gold.yaml", "--retriever", "loader.py:search", "-k", str(K)]
    stopped = runner.invoke(main, [*base, "--json"])
    assert stopped.exit_code == 2 and "--doc-root docs" in stopped.output
    result = runner.invoke(main, [*base, "--doc-root", "docs"])
    assert result.exit_code == 0, result.output
    assert "note: document paths under docs were read as corpus-relative ids" in " ".join(
        result.stderr.split()
    )
    assert "warning" not in result.stderr
    data = json.loads(runner.invoke(main, ["show", "latest", "--json"]).stdout)
    assert data["metrics"]["mrr"] == pytest.approx(reference_mrr())
    assert data["warnings"] == [] and len(data["notes"]) == 1


def test_run_files_go_through_the_same_resolver(project: Path) -> None:
    """Issue 24.2: a TREC run file's ids are read like any retriever's: Windows separators
    and NFD spellings resolve; a docs/ prefix needs --doc-root docs, which strips it."""
    lines = []
    for item in GOLD:
        for rank, doc in enumerate(_ranked(item["question"]), start=1):
            spelled = unicodedata.normalize("NFD", doc).replace("/", "\\")
            lines.append(f"{item['id']} Q0 {spelled} {rank} {10 - rank} mine")
    (project / "win.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    prefixed = [line.replace(" guide\\", " docs/guide\\") for line in lines]
    (project / "prefixed.trec").write_text("\n".join(prefixed) + "\n", encoding="utf-8")
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(main, ["eval", "--gold", "gold.yaml", "-k", str(K), "--json", *args])

    for result in (
        run("--retriever", "run:win.trec"),
        run("--retriever", "run:prefixed.trec", "--doc-root", "docs"),
    ):
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["metrics"]["mrr"] == pytest.approx(reference_mrr())
    assert run("--retriever", "run:prefixed.trec").exit_code == 2


@pytest.mark.parametrize("with_corpus", [False, True], ids=["no-corpus", "corpus"])
def test_the_stop_names_the_doc_field_that_would_work(with_corpus: bool) -> None:
    """Issue 24.2: hits named by chunk UUIDs whose metadata holds the path stop with the
    exact fix: the field, and the folder to drop when only the corpus could confirm it."""
    gold = GoldSet.from_records(GOLD)

    def search(question: str, k: int) -> list[dict[str, Any]]:
        return [
            {
                "id": f"{n:08x}-0000-4000-8000-{n:012x}",
                "text": "…",
                "metadata": {"path": f"/srv/docs/{d}"},
            }
            for n, d in enumerate(_ranked(question))
        ][:k]

    setup = RetrieverSetup(search, documents=DOCS if with_corpus else None)
    with pytest.raises(ConfigError) as caught:
        ragmeter.evaluate(gold, setup, k=K)
    fix = "pass --doc-field metadata.path" + ("." if with_corpus else " --doc-root /srv/docs.")
    assert fix in str(caught.value)
    # ... and the fix works: the reference's numbers.
    root = None if with_corpus else "/srv/docs"
    fixed = as_retriever(search, doc_field="metadata.path", doc_root=root)
    report = ragmeter.evaluate(gold, RetrieverSetup(fixed, documents=setup.documents), k=K)
    assert report.metrics["mrr"] == pytest.approx(reference_mrr())


def test_a_corpus_id_under_a_folder_named_like_the_corpus_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24.2: --corpus docs drops its folder from absolute paths only: docs/inner.md is
    a corpus id of its own (the file docs/docs/inner.md), never read as inner.md."""
    docs = {"docs/inner.md": "# inner\n", "inner.md": "# top\n"}
    gold = [{"id": "q", "question": "inner?", "relevant": [{"doc": "docs/inner.md"}]}]
    write_project(tmp_path, docs, gold, monkeypatch)
    (tmp_path / "nested.py").write_text(
        "def search(question, k):\n    return ['inner.md', 'docs/inner.md']\n", encoding="utf-8"
    )
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--gold",
            "gold.yaml",
            "--corpus",
            "docs",
            "--retriever",
            "nested.py:search",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["metrics"]["mrr"] == 0.5


def test_gold_check_reads_gold_ids_like_eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24.2: `gold check --corpus` finds a gold id spelled ./a\\b.md (NFD) in the
    corpus's a/b.md, quote included, as `eval` does; a truly absent one is still listed."""
    spelled = [
        {
            "id": t,
            "question": "?",
            "relevant": [
                {
                    "doc": "./" + unicodedata.normalize("NFD", f"guide\\{t}-café.md"),
                    "quote": f"How to {t}.",
                }
            ],
        }
        for t in TOPICS
    ] + [{"id": "gone", "question": "?", "relevant": ["guide/gone.md"]}]
    write_project(tmp_path, DOCS, spelled, monkeypatch)
    assert len(spelled) == len(TOPICS) + 1
    result = CliRunner().invoke(main, ["gold", "check", "gold.yaml", "--corpus", "docs", "--json"])
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["warnings"]
    assert warnings == [
        "1 document named by the gold set not in the corpus: guide/gone.md (item gone)"
    ]
