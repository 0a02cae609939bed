"""A resumed run scores its rest as its first part: a setting it would ignore is refused (issue 24).

``--min-overlap`` (and ``-k``, ``--level``, ``-m``, ``--chunker``) given with ``--resume`` used
to be dropped without a word; the resumed questions were scored with the run's own settings,
or (``evaluate(resume=..., k=...)``) retrieved at another depth. So were the run's inputs
(``--retriever``, ``--gold``, ``--corpus``, ``--split``, ``--doc-field``/``--doc-root``,
``--timeout``), and ``evaluate(resume=…)`` scored the rest against the stored gold set
whatever it was given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from sqlalchemy import delete
from tests._servers import JsonHandler, serve_handler

import ragmeter
from ragmeter.cli import main
from ragmeter.documents import Document
from ragmeter.errors import ConfigError
from ragmeter.evaluation.job import EvalJob
from ragmeter.evaluation.setup import RetrieverSetup
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store, schema

# The chunk ends with the quote's first four words: 22 of the quote's 33 letters (0.67 of the
# shorter text), so it covers the quote at share 0.5 and not at 0.7.
QUOTE = "alpha bravo charlie delta echo foxtrot"
HEAD_ONLY = "Unrelated words before it here. alpha bravo charlie delta"
GOLD = [
    {"id": "first", "question": "first?", "relevant": [{"doc": "a.md", "quote": QUOTE}]},
    {"id": "second", "question": "second?", "relevant": [{"doc": "a.md", "quote": QUOTE}]},
]


def _letters(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def test_the_case_sits_between_the_two_shares() -> None:
    """The hand count behind the case: the quote's head inside the chunk, by plain search."""
    quote, chunk = _letters(QUOTE), _letters(HEAD_ONLY)
    shared = max(n for n in range(len(quote) + 1) if chunk.endswith(quote[:n]))
    assert (shared, len(quote)) == (22, 33) and 0.5 < shared / min(len(quote), len(chunk)) < 0.7


def _search(question: str, k: int) -> list[dict[str, Any]]:
    return [{"id": "a.md#0", "doc": "a.md", "text": HEAD_ONLY}]


def _interrupted(store: Store, name: str, min_overlap: float) -> None:
    def stop_at_second(question: str, k: int) -> list[dict[str, Any]]:
        if question == "second?":
            raise KeyboardInterrupt
        return _search(question, k)

    with pytest.raises(KeyboardInterrupt):
        ragmeter.evaluate(GoldSet.from_records(GOLD), stop_at_second, k=2, store=store,
                          concurrency=1, name=name, min_overlap=min_overlap)  # fmt: skip
    assert store.get_run(name).status == "interrupted"


def test_resume_scores_with_the_share_stored_on_the_run() -> None:
    """Issue 24: the resumed question is scored at the run's 0.7, as a fresh 0.7 run scores it.

    The resumed run also stays at passage level: its hits read back from the store keep their
    texts apart, and used to look text-less, so the run fell back to doc level (hit@1 1.0)."""
    store = Store.memory()
    _interrupted(store, "strict", 0.7)
    resumed = ragmeter.evaluate(GoldSet.from_records(GOLD), _search, k=2, store=store,
                                resume="strict")  # fmt: skip
    gold = GoldSet.from_records(GOLD)
    fresh = {share: ragmeter.evaluate(gold, _search, k=2, min_overlap=share)
             for share in (0.5, 0.7)}  # fmt: skip
    assert resumed.run.config["min_overlap"] == 0.7 and resumed.run.level == "passage"
    assert resumed.per_query["hit@1"]["second"] == fresh[0.7].per_query["hit@1"]["second"] == 0.0
    assert fresh[0.5].per_query["hit@1"]["second"] == 1.0


def test_resume_told_another_share_or_k_is_refused_in_python() -> None:
    """Issue 24: evaluate(resume=…) refuses a share, level or k other than the run's."""
    store = Store.memory()
    _interrupted(store, "strict", 0.7)
    gold = GoldSet.from_records(GOLD)
    with pytest.raises(ConfigError, match=r"--min-overlap 0\.7 .*--min-overlap 0\.5 was given"):
        ragmeter.evaluate(gold, _search, k=2, store=store, resume="strict", min_overlap=0.5)
    with pytest.raises(ConfigError, match=r"-k 2 .*-k 5 was given"):
        ragmeter.evaluate(gold, _search, k=5, store=store, resume="strict")
    with pytest.raises(ConfigError, match=r"--level passage .*--level doc was given"):
        ragmeter.evaluate(gold, _search, k=2, store=store, resume="strict", level="doc")
    report = ragmeter.evaluate(gold, _search, k=2, store=store, resume="strict", min_overlap=0.7)
    assert report.run.status == "complete"


def test_resume_asks_for_as_many_hits_as_the_run_did() -> None:
    """Issue 24: evaluate(resume=…) at the default k retrieves the run's k, not 10."""
    store = Store.memory()
    _interrupted(store, "strict", 0.7)
    asked: list[int] = []

    def counting(question: str, k: int) -> list[dict[str, Any]]:
        asked.append(k)
        return _search(question, k)

    ragmeter.evaluate(GoldSet.from_records(GOLD), counting, store=store, resume="strict")
    assert asked == [2]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(f"# A\n\n{QUOTE}.\n")
    (docs / "b.md").write_text("# B\n\nnothing of note here.\n")
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(GOLD, sort_keys=False))
    _interrupted_cli(tmp_path, monkeypatch, ["second"], "--gold", "gold.yaml", "--corpus", "docs",
                     "-k", "2", "--min-overlap", "0.7", "-m", "ndcg@2", "--chunker", "paragraph")  # fmt: skip
    return tmp_path


def _interrupted_cli(
    folder: Path, monkeypatch: pytest.MonkeyPatch, left: list[str], *first: str, name: str = "r"
) -> None:
    """Run ``name`` made in ``folder`` by ``ragmeter eval *first``, then marked interrupted
    with the questions ``left`` to do (their results deleted)."""
    monkeypatch.chdir(folder)
    monkeypatch.setenv("RAGMETER_STORE", f"sqlite:///{folder / 'runs.db'}")
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(folder / "cache"))
    made = _cli("eval", *first, "--name", name)
    assert made.exit_code == 0, made.output
    with Store.open(folder / "runs.db") as store:
        run = store.get_run(name)
        results = schema.results.c
        store._write(lambda conn: conn.execute(
            delete(schema.results).where(results.run_id == run.id, results.item_id.in_(left))
        ))  # fmt: skip
        store.update_run(run.id, status="interrupted")


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize(
    ("told", "said"),
    [
        (["--min-overlap", "0.5"], "run 1 was made with --min-overlap 0.7 and --resume finishes "
         "it with that; --min-overlap 0.5 was given"),
        (["-k", "10"], "run 1 was made with -k 2 and --resume finishes it with that; -k 10 was"),
        (["--level", "doc"], "--level passage and --resume finishes it with that; --level doc"),
        (["-m", "rprec"], "; -m rprec was given"),
        (["--chunker", "fixed"], "--chunker/--chunk-size/--chunk-overlap paragraph (size 1000"),
        (["--chunk-size", "300"], "; --chunker/--chunk-size/--chunk-overlap markdown (size 300"),
    ],
    ids=["min-overlap", "k-at-its-default", "level", "metric", "chunker", "chunk-size"],
)  # fmt: skip
def test_cli_resume_told_another_setting_exits_2(project: Path, told: list[str], said: str) -> None:
    """Issue 24: each setting --resume would ignore, told another value, stops with both values."""
    result = _cli("eval", "--resume", "r", *told)
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.split())


def test_cli_resume_told_the_same_settings_finishes(project: Path) -> None:
    """Issue 24: repeating the run's own settings is no conflict; the share stays 0.7."""
    result = _cli("eval", "--resume", "r", "--min-overlap", "0.7", "-k", "2", "-m", "ndcg@2",
                  "--level", "passage", "--chunker", "paragraph", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["run"]["status"] == "complete"
    with Store.open(project / "runs.db") as store:
        run = store.get_run("r")
    assert run.config["min_overlap"] == 0.7 and run.level == "passage" and run.k == 2


# --- The run's inputs (issue 24): retriever, gold set, corpus, split, ids, timeout ----------
#
# ``--resume`` used to take the run's stored --retriever, --gold, --corpus, --split,
# --doc-field/--doc-root and --timeout without a word when another value was given.

TEXTS = {
    "a.md": "alpha bravo charlie delta echo foxtrot",
    "b.md": "golf hotel india juliet kilo lima",
    "c.md": "mike november oscar papa quebec romeo",
}
# (id, question, gold document): q3's gold document is not the one holding its words.
ASKED = [("q1", "alpha bravo?", "a.md"), ("q2", "golf hotel?", "b.md"),
         ("q3", "mike november?", "a.md"), ("q4", "oscar papa?", "c.md")]  # fmt: skip
SEARCH = """
from pathlib import Path


def search(question, k):
    words = question.strip("?").split()
    found = [p for p in sorted(Path("docs").glob("*.md")) if all(w in p.read_text() for w in words)]
    return [{"id": p.name + "#0", "text": p.read_text(), "meta": {"source": str(p.resolve())}}
            for p in found][:k]
"""
FIRST = ["--gold", "gold.yaml", "--corpus", "docs", "--retriever", "resume_search:search",
         "--doc-field", "meta.source", "--doc-root", "docs", "--timeout", "30", "-k", "2"]  # fmt: skip


def _gold_records(asked: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [{"id": qid, "question": question, "relevant": [{"doc": doc, "quote": TEXTS[doc]}]}
            for qid, question, doc in asked]  # fmt: skip


def _reference_hit1() -> dict[str, float]:
    """hit@1 by plain search: the one document holding every word of the question."""
    top = {qid: next(d for d, text in TEXTS.items() if all(w in text for w in q[:-1].split()))
           for qid, q, _ in ASKED}  # fmt: skip
    return {qid: float(top[qid] == doc) for qid, _, doc in ASKED}


def _write_docs(folder: Path, texts: Mapping[str, str]) -> None:
    folder.mkdir()
    for name, text in texts.items():
        (folder / name).write_text(f"# {name}\n\n{text}.\n")


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run "r" made with every input given, then interrupted with q3 and q4 left to do."""
    _write_docs(tmp_path / "docs", TEXTS)
    _write_docs(tmp_path / "docs-copy", TEXTS)
    _write_docs(tmp_path / "docs-other", {**TEXTS, "b.md": "golf hotel and something else"})
    (tmp_path / "resume_search.py").write_text(SEARCH)
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(_gold_records(ASKED), sort_keys=False))
    (tmp_path / "gold-copy.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in _gold_records(ASKED))
    )
    other = [(qid, q, "c.md" if qid == "q3" else doc) for qid, q, doc in ASKED]
    (tmp_path / "gold-other.yaml").write_text(yaml.safe_dump(_gold_records(other)))
    spelled = _gold_records(ASKED)
    spelled[0]["relevant"][0]["doc"] = "./a.md"  # q3 names it a.md: one document, two ways
    (tmp_path / "gold-spelled.yaml").write_text(yaml.safe_dump(spelled))
    monkeypatch.syspath_prepend(str(tmp_path))
    _interrupted_cli(tmp_path, monkeypatch, ["q3", "q4"], *FIRST)
    return tmp_path


def _scores(db: Path, name: str) -> tuple[dict[str, float], dict[str, float]]:
    """A run's means (latency left out) and its hit@1 per question, read back."""
    from ragmeter.evaluation.report import build_report

    with Store.open(db) as store:
        report = build_report(store, name)
    means = {m: v for m, v in report.metrics.items() if not m.startswith("latency")}
    return means, dict(report.per_query["hit@1"])


def _left_alone(db: Path) -> None:
    """A refused resume changed nothing: the run is still interrupted, with its 2 results."""
    with Store.open(db) as store:
        run = store.get_run("r")
        assert run.status == "interrupted" and len(store.completed_items(run.id)) == 2


@pytest.mark.parametrize(
    ("told", "ours", "theirs"),
    [
        (["--retriever", "resume_search:other"], "--retriever resume_search:search",
         "--retriever resume_search:other"),
        (["--gold", "gold-other.yaml"], "--gold gold.yaml (content hash",
         "--gold gold-other.yaml (content hash"),
        (["--corpus", "docs-other"], "--corpus docs (content hash",
         "--corpus docs-other (content hash"),
        (["--split", "dev"], "--split test", "--split dev"),
        (["--doc-field", "meta.path"], "--doc-field meta.source", "--doc-field meta.path"),
        (["--doc-root", "elsewhere"], "--doc-root docs", "--doc-root elsewhere"),
        (["--timeout", "5"], "--timeout 30.0", "--timeout 5.0"),
    ],
    ids=["retriever", "gold", "corpus", "split", "doc-field", "doc-root", "timeout"],
)  # fmt: skip
def test_cli_resume_told_another_input_exits_2(
    inputs: Path, told: list[str], ours: str, theirs: str
) -> None:
    """Issue 24: each input --resume used to take from the run without a word, given another
    value, stops with exit 2 naming both values and how to start a new run instead."""
    result = _cli("eval", "--resume", "r", *told)
    said = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert f"run 1 was made with {ours}" in said, said
    assert f"; {theirs}" in said and "start a new run with it" in said, said
    _left_alone(inputs / "runs.db")


def test_cli_resume_told_a_gold_file_changed_since_exits_2(inputs: Path) -> None:
    """Issue 24: --gold naming the run's own file, edited since, is refused by content; left
    out, the run's stored gold set scores the rest, as a fresh run of the first file does."""
    (inputs / "gold.yaml").write_text((inputs / "gold-other.yaml").read_text())
    refused = _cli("eval", "--resume", "r", "--gold", "gold.yaml")
    said = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "--gold gold.yaml (content hash" in said, said
    assert said.count("content hash") == 2
    _left_alone(inputs / "runs.db")
    assert _cli("eval", "--resume", "r").exit_code == 0
    (inputs / "gold.yaml").write_text(yaml.safe_dump(_gold_records(ASKED)))  # the first set
    assert _cli("eval", *FIRST, "--name", "fresh").exit_code == 0
    assert _scores(inputs / "runs.db", "r") == _scores(inputs / "runs.db", "fresh")


@pytest.mark.parametrize(
    "told",
    [
        [],
        ["--retriever", "resume_search:search", "--gold", "gold-copy.jsonl", "--split", "test",
         "--doc-field", "meta.source", "--doc-root", "./docs", "--timeout", "30.0"],
        ["--corpus", "ABSOLUTE"],
        ["--corpus", "docs-copy"],
    ],
    ids=["nothing-given", "same-values", "corpus-absolute-path", "corpus-same-content"],
)  # fmt: skip
def test_cli_resume_told_the_same_inputs_finishes(inputs: Path, told: list[str]) -> None:
    """Issue 24: values equal to the run's once normalised as the run did (a path resolved,
    a gold set or corpus by its content) resume, and the numbers equal a fresh run's and
    the plain-search reference."""
    told = [str(inputs / "docs") if arg == "ABSOLUTE" else arg for arg in told]
    result = _cli("eval", "--resume", "r", *told)
    assert result.exit_code == 0, result.output
    assert _cli("eval", *FIRST, "--name", "fresh").exit_code == 0
    resumed, fresh = _scores(inputs / "runs.db", "r"), _scores(inputs / "runs.db", "fresh")
    assert resumed == fresh
    assert resumed[1] == _reference_hit1() and resumed[0]["hit@1"] == 0.75


def test_cli_resume_compares_a_gold_set_as_the_run_unified_its_spellings(
    inputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: a run stores its gold set with one spelling per document; the file it was
    made from (./a.md and a.md) is the same set, and so is one spelled a.md throughout."""
    spelled = [a if a != "gold.yaml" else "gold-spelled.yaml" for a in FIRST]
    _interrupted_cli(inputs, monkeypatch, ["q3", "q4"], *spelled, name="s")
    with Store.open(inputs / "runs.db") as store:
        stored = store.get_run("s").gold_hash
    assert (
        stored != GoldSet.from_records(yaml.safe_load(Path("gold-spelled.yaml").read_text())).hash
    )
    result = _cli("eval", "--resume", "s", "--gold", "gold-spelled.yaml")
    assert result.exit_code == 0, result.output
    assert _scores(inputs / "runs.db", "s")[1] == _reference_hit1()
    assert _cli("eval", "--resume", "r", "--gold", "gold-spelled.yaml").exit_code == 0


def test_cli_resume_never_prints_a_secret_of_the_spec_given(inputs: Path) -> None:
    """Issue 24: the refusal names the given retriever with its secrets hidden."""
    spec = "http://user:hunter2-pass@127.0.0.1:9/search?api_key=KEY-0123456789abcdef"
    result = _cli("eval", "--resume", "r", "--retriever", spec)
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "--retriever http://user:***@127.0.0.1:9/search?api_key=***" in said, said
    assert "hunter2" not in result.output and "0123456789abcdef" not in result.output


# --- The same in Python: evaluate(resume=…)'s gold set, retriever spec, timeout, corpus ------


def _pgold(asked: list[tuple[str, str, str]] = ASKED) -> GoldSet:
    return GoldSet.from_records(_gold_records(asked))


def _psearch(question: str, k: int) -> list[dict[str, Any]]:
    words = question.strip("?").split()
    found = [d for d, text in TEXTS.items() if all(w in text for w in words)]
    return [{"id": f"{d}#0", "doc": d, "text": TEXTS[d]} for d in found][:k]


def _pinterrupted(store: Store, **given: Any) -> None:
    def stop_at_q3(question: str, k: int) -> list[dict[str, Any]]:
        if question == "mike november?":
            raise KeyboardInterrupt
        return _psearch(question, k)

    with pytest.raises(KeyboardInterrupt):
        ragmeter.evaluate(_pgold(), RetrieverSetup(stop_at_q3, spec="mine:v1"), k=2, store=store,
                          concurrency=1, name="p", **given)  # fmt: skip
    assert store.get_run("p").status == "interrupted"


def _corpus(texts: Mapping[str, str] = TEXTS) -> dict[str, Document]:
    return {doc: Document(doc, f"# {doc}\n\n{text}.\n") for doc, text in texts.items()}


def test_python_resume_told_another_gold_spec_timeout_or_corpus_is_refused(store: Store) -> None:
    """Issue 24: evaluate(resume=…) used to score the rest against the stored gold set
    whatever it was given; a gold set, spec, timeout or corpus other than the run's stops."""
    _pinterrupted(store, timeout=30, corpus=_corpus())
    setup = RetrieverSetup(_psearch, spec="mine:v1")
    other = _pgold([(q, t, "c.md" if q == "q3" else d) for q, t, d in ASKED])
    given: dict[str, Any] = {"k": 2, "store": store, "resume": "p", "timeout": 30}
    with pytest.raises(ConfigError, match=r"--gold \(content hash \w+\) .*; --gold \(content"):
        ragmeter.evaluate(other, setup, corpus=_corpus(), **given)
    with pytest.raises(ConfigError, match=r"--retriever mine:v1 .*; --retriever mine:v2 was"):
        ragmeter.evaluate(_pgold(), RetrieverSetup(_psearch, spec="mine:v2"), corpus=_corpus(),
                          **given)  # fmt: skip
    with pytest.raises(ConfigError, match=r"--timeout 30 .*; --timeout 5 was given"):
        ragmeter.evaluate(_pgold(), setup, corpus=_corpus(), **{**given, "timeout": 5})
    with pytest.raises(ConfigError, match=r"with corpus= \(content hash \w+\) .*; no corpus="):
        ragmeter.evaluate(_pgold(), setup, **given)
    changed = _corpus({**TEXTS, "b.md": "golf hotel and something else"})
    with pytest.raises(ConfigError, match=r"; corpus= \(content hash \w+\) was given"):
        ragmeter.evaluate(_pgold(), setup, corpus=changed, **given)
    assert store.get_run("p").status == "interrupted"


def test_python_resume_told_the_same_finishes_as_a_fresh_run(store: Store) -> None:
    """Issue 24: the same gold content, spec, timeout and corpus resume; the numbers equal a
    fresh run's and the plain-search reference."""
    _pinterrupted(store, timeout=30, corpus=_corpus())
    resumed = ragmeter.evaluate(_pgold(), RetrieverSetup(_psearch, spec="mine:v1"), k=2,
                                store=store, resume="p", timeout=30, corpus=_corpus())  # fmt: skip
    fresh = ragmeter.evaluate(_pgold(), _psearch, k=2, corpus=_corpus())
    assert resumed.run.status == "complete"
    assert resumed.per_query == fresh.per_query
    assert resumed.per_query["hit@1"] == _reference_hit1()


# --- An HTTP retriever: its request shape is the run's, its headers are given again ---------

KEY = "sekret-key-0123456789"
BODY = '{"q": "{question}", "n": {k}}'


class _Search(JsonHandler):
    """Plain search over TEXTS, under data.results, for a request carrying the key only."""

    def answer(self, path: str, body: Any) -> Any:
        if self.headers.get("X-Api-Key") != KEY or set(body) != {"q", "n"}:
            return {"error": "no key, or not the request this service reads"}
        return {"data": {"results": _psearch(body["q"], body["n"])}}


@pytest.fixture
def http_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Run "r" of an HTTP retriever asked with its own body, hits path and key header,
    interrupted with q3 and q4 left to do; yields the options it was made with."""
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(_gold_records(ASKED)))
    monkeypatch.setenv("RESUME_KEY", KEY)
    with serve_handler(_Search) as url:
        first = ["--gold", "gold.yaml", "--retriever", f"{url}/search", "-k", "2",
                 "--http-body", BODY, "--hits-path", "data.results",
                 "--header", "X-Api-Key: env:RESUME_KEY"]  # fmt: skip
        _interrupted_cli(tmp_path, monkeypatch, ["q3", "q4"], *first)
        yield first


def test_cli_resume_asks_an_http_retriever_as_the_run_did(http_run: list[str]) -> None:
    """Issue 24: the resume asks with the run's stored body and hits path (it used the
    default request, and dropped the --header given again); the run's own values may be
    given again. The numbers equal a fresh run's and the plain-search reference, with no
    error row."""
    result = _cli("eval", "--resume", "r", "--header", "X-Api-Key: env:RESUME_KEY", "--json",
                  "--hits-path", "data.results", "--max-response-bytes", str(32 * 1024 * 1024))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["n_errors"] == 0
    assert _cli("eval", *http_run, "--name", "fresh").exit_code == 0
    db = Path("runs.db")
    assert _scores(db, "r") == _scores(db, "fresh") and _scores(db, "r")[1] == _reference_hit1()


@pytest.mark.parametrize(
    ("told", "said"),
    [
        ([], "run 1 was made with --header X-Api-Key (header values are never stored): pass "
         "the same --header again"),
        (["--hits-path", "results"], "run 1 was made with --hits-path data.results and --resume "
         "finishes it with that; --hits-path results was given"),
        (["--http-body", '{"q": "{question}", "api_key": "' + KEY + '"}'],
         '--http-body {"q": "{question}", "n": {k}} and --resume finishes it with that; '
         '--http-body {"q": "{question}", "api_key": "***"} was given'),
        (["--max-response-bytes", "1000"], "run 1 was made with --max-response-bytes 33554432 "
         "and --resume finishes it with that; --max-response-bytes 1000 was given"),
    ],
    ids=["header-left-out", "hits-path", "body-with-a-key", "max-response-bytes"],
)  # fmt: skip
def test_cli_resume_told_another_request_exits_2(
    http_run: list[str], told: list[str], said: str
) -> None:
    """Issue 24: a header the run was made with, left out, or another request shape, stops
    with exit 2; a credential in the template given is never printed."""
    header = [] if not told else ["--header", "X-Api-Key: env:RESUME_KEY"]
    result = _cli("eval", "--resume", "r", *header, *told)
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.split()) and KEY not in result.output
    _left_alone(Path("runs.db"))


def test_explain_rebuilds_an_http_retriever_with_the_runs_request(http_run: list[str]) -> None:
    """Issue 24: ``rebuild_retriever`` (what ``explain`` asks again) builds the run's request
    shape, with the headers given again; another shape given is refused."""
    from ragmeter.evaluation.jobs import rebuild_retriever

    with Store.open(Path("runs.db")) as store:
        run = store.get_run("r")
    built = rebuild_retriever(run, options={"headers": {"X-Api-Key": KEY}})
    try:
        hits = built.retriever.retrieve("oscar papa?", 2)
    finally:
        built.close()
    assert [hit.doc for hit in hits] == ["c.md"]
    with pytest.raises(ConfigError, match=r"--hits-path data\.results .*; --hits-path hits was"):
        rebuild_retriever(run, options={"hits_path": "hits"})


def test_run_job_resume_checks_the_inputs_its_job_sets(inputs: Path) -> None:
    """Issue 24: ``run_job(EvalJob(resume=…, …))`` from Python (no command line to say what
    was given) checks each input that differs from a default job's."""
    from ragmeter.evaluation.jobs import run_job

    with Store.open(inputs / "runs.db") as store:
        for job, said in [
            (EvalJob(resume="r", corpus="docs-other"), "; --corpus docs-other (content hash"),
            (EvalJob(resume="r", gold="gold-other.yaml"), "; --gold gold-other.yaml (content"),
            (EvalJob(resume="r", timeout=5), "; --timeout 5 was given"),
        ]:
            with pytest.raises(ConfigError, match=re.escape(said)):
                run_job(job, store=store)
        report = run_job(EvalJob(resume="r", gold="gold-copy.jsonl"), store=store)
    assert report.run.status == "complete" and report.per_query["hit@1"] == _reference_hit1()


# --- The run's name and note: kept by a resume, so another one is refused ------------------


def test_python_resume_told_another_name_or_note_is_refused() -> None:
    """``evaluate(resume=…, name=…/note=…)`` used to finish the run under its own name and
    note without a word; another one is now refused, the run's own is no conflict."""
    store = Store.memory()
    _interrupted(store, "strict", 0.7)
    gold = GoldSet.from_records(GOLD)
    with pytest.raises(ConfigError, match=r"--name strict .*--name renamed was given"):
        ragmeter.evaluate(gold, _search, k=2, store=store, resume="strict", name="renamed")
    with pytest.raises(ConfigError, match=r"made without --note .*--note retried was given"):
        ragmeter.evaluate(gold, _search, k=2, store=store, resume="strict", note="retried")
    assert store.get_run("strict").status == "interrupted"  # nothing was run
    report = ragmeter.evaluate(gold, _search, k=2, store=store, resume="strict", name="strict")
    assert (report.run.name, report.run.note, report.run.status) == ("strict", "", "complete")


@pytest.mark.parametrize(
    ("told", "said"),
    [
        (["--name", "other"], "run 1 was made with --name r and --resume finishes it with that; "
         "--name other was given"),
        (["--note", "retry"], "run 1 was made with --note first try and --resume finishes it "
         "with that; --note retry was given"),
        (["--note", ""], "--note first try and --resume finishes it with that; --note \"\" was"),
    ],
    ids=["name", "note", "empty-note"],
)  # fmt: skip
def test_cli_resume_told_another_name_or_note_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, told: list[str], said: str
) -> None:
    """``eval --resume r --name other`` used to exit 0 with the run still named ``r``."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(f"# A\n\n{QUOTE}.\n")
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(GOLD, sort_keys=False))
    _interrupted_cli(tmp_path, monkeypatch, ["second"], "--gold", "gold.yaml", "--corpus", "docs",
                     "--note", "first try")  # fmt: skip
    result = _cli("eval", "--resume", "r", *told)
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.split())
    again = _cli("eval", "--resume", "r", "--name", "r", "--note", "first try", "--json")
    assert again.exit_code == 0, again.output
    run = json.loads(again.output)["run"]
    assert (run["name"], run["note"], run["status"]) == ("r", "first try", "complete")
