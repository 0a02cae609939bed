"""Retriever specs and the Python-callable adapter, with a real user module on disk (issue 3)."""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.retrievers import (
    CallableRetriever,
    HttpRetriever,
    ObjectRetriever,
    Retriever,
    as_retriever,
    coerce_hits,
    resolve_retriever,
)

USER_MODULE = """
import asyncio
from dataclasses import dataclass

@dataclass
class Result:
    id: str
    doc: str
    score: float
    text: str = ""

def search(question, k):
    return [{"id": f"d{i}#0", "doc_id": f"d{i}", "score": 1.0 / (i + 1)} for i in range(k)]

def search_objects(question, k):
    return [Result(id=f"d{i}#1", doc=f"d{i}", score=float(k - i), text=question) for i in range(k)]

async def asearch(question, k):
    await asyncio.sleep(0)
    return {"hits": [f"a{i}" for i in range(k)], "answer": "from async"}

async def hangs(question, k):
    await asyncio.sleep(30)

def boom(question, k):
    raise ValueError("index offline")

def malformed(question, k):
    return [{"id": "a"}, {"score": 2.0}]

def one_arg(question):
    return []

class Searcher:
    def retrieve(self, question, k):
        return ["s1", "s2"][:k]

searcher = Searcher()
NOT_CALLABLE = 3
"""

_names = itertools.count()


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A freshly named module holding USER_MODULE, importable by name."""
    name = f"user_retrievers_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_sync_callable_with_dict_hits(user_module: str) -> None:
    """Issue 3: module:function with a sync function returning dicts."""
    retriever = resolve_retriever(f"{user_module}:search")
    assert isinstance(retriever, CallableRetriever)
    assert retriever.is_async is False
    assert retriever.spec == f"{user_module}:search"
    assert retriever.config == {
        "type": "callable",
        "module": user_module,
        "function": "search",
        "async": False,
    }
    assert retriever.retrieve("q", 2) == [
        Hit(id="d0#0", doc="d0", score=1.0),
        Hit(id="d1#0", doc="d1", score=0.5),
    ]
    # evaluate() calls sync retrievers from a thread pool.
    with ThreadPoolExecutor(max_workers=4) as pool:
        lengths = list(pool.map(lambda k: len(retriever.retrieve("q", k)), range(1, 9)))
    assert lengths == list(range(1, 9))


def test_sync_callable_with_object_hits(user_module: str) -> None:
    """Issue 3: hits may be objects (dataclasses) with id/doc/score/text attributes."""
    hits = resolve_retriever(f"{user_module}:search_objects").retrieve("refunds?", 2)
    assert hits == [
        Hit(id="d0#1", doc="d0", score=2.0, text="refunds?"),
        Hit(id="d1#1", doc="d1", score=1.0, text="refunds?"),
    ]


def test_async_callable(user_module: str) -> None:
    """Issue 3: async functions are detected and run on the caller's loop; answers are kept."""
    retriever = resolve_retriever(f"{user_module}:asearch")
    assert isinstance(retriever, CallableRetriever)
    assert retriever.is_async is True

    async def main() -> Any:
        return await asyncio.gather(retriever.aretrieve("q", 2), retriever.aretrieve_full("q", 1))

    hits, full = asyncio.run(main())
    assert [hit.id for hit in hits] == ["a0", "a1"]
    assert full.answer == "from async"
    # Called from plain sync code (no loop running) it still works.
    assert [hit.doc for hit in retriever.retrieve("q", 1)] == ["a0"]


def test_sync_callable_from_async_code_runs_in_a_thread(user_module: str) -> None:
    """Issue 3: every adapter offers aretrieve, so a caller may use one code path."""
    retriever = resolve_retriever(f"{user_module}:search")
    hits = asyncio.run(retriever.aretrieve("q", 3))
    assert [hit.doc for hit in hits] == ["d0", "d1", "d2"]


def test_async_callable_timeout(user_module: str) -> None:
    """Issue 3: an async retriever hanging past the timeout fails with a clear message."""
    retriever = resolve_retriever(f"{user_module}:hangs", timeout=0.05)
    with pytest.raises(RetrieverError) as info:
        asyncio.run(retriever.aretrieve("q", 1))
    assert str(info.value) == f"timed out after 0.05 s: {user_module}:hangs"


def test_callable_raising_becomes_retriever_error(user_module: str) -> None:
    """Issue 3: the user's exception becomes one question's error, keeping its type."""
    retriever = resolve_retriever(f"{user_module}:boom")
    with pytest.raises(RetrieverError) as info:
        retriever.retrieve("q", 1)
    assert str(info.value) == f"{user_module}:boom raised ValueError: index offline"
    assert isinstance(info.value.__cause__, ValueError)


def test_callable_malformed_hits(user_module: str) -> None:
    """Issue 3: malformed hits name the hit number and the retriever."""
    retriever = resolve_retriever(f"{user_module}:malformed")
    with pytest.raises(RetrieverError) as info:
        retriever.retrieve("q", 2)
    assert (
        str(info.value) == f'malformed hit 2 from {user_module}:malformed: missing "id" and "doc"'
    )


def test_object_with_retrieve_method(user_module: str) -> None:
    """Issue 3: module:obj where obj has retrieve(question, k)."""
    retriever = resolve_retriever(f"{user_module}:searcher")
    assert isinstance(retriever, ObjectRetriever)
    assert [hit.doc for hit in retriever.retrieve("q", 1)] == ["s1"]


def test_file_path_spec(tmp_path: Path) -> None:
    """Issue 3: path/to/file.py:function imports the file directly."""
    folder = tmp_path / "my pipelines"
    folder.mkdir()
    (folder / "retriever.py").write_text(USER_MODULE)
    retriever = resolve_retriever(f"{folder / 'retriever.py'}:search")
    assert [hit.doc for hit in retriever.retrieve("q", 1)] == ["d0"]


def test_module_next_to_cwd_is_importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 3: like uvicorn, a module in the working directory is found without PYTHONPATH."""
    name = f"cwd_retrievers_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        retriever = resolve_retriever(f"{name}:search")
        assert len(retriever.retrieve("q", 4)) == 4
    finally:
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module_xyz:search", "module 'no_such_module_xyz' not found"),
        ("{mod}:nothing", "{mod} has no attribute 'nothing'"),
        ("{mod}:NOT_CALLABLE", "{mod}.NOT_CALLABLE is not callable"),
        ("{mod}:one_arg", "{mod}.one_arg must accept (question, k); its signature is (question)"),
        ("{mod}:", "must look like module:function"),
        ("missing/dir/file.py:search", "file missing/dir/file.py not found"),
        ("run:r.trec", "run file r.trec not found"),
        ("run:", "run: needs a path"),
        ("nonsense", "unknown retriever 'nonsense'; use one of: bm25, dense, hybrid"),
        ("", "empty retriever spec"),
        ("bm25", "the bm25 retriever is not available here (none installed)"),
        ("pipe.yaml", "pipeline files are not available here"),
    ],
    ids=[
        "no-module",
        "no-attribute",
        "not-callable",
        "bad-signature",
        "no-function",
        "no-file",
        "no-run-file",
        "empty-run",
        "unknown",
        "empty",
        "no-builtins",
        "no-pipeline-factory",
    ],
)
def test_bad_specs_are_config_errors(user_module: str, spec: str, message: str) -> None:
    """Issue 3: a wrong --retriever is an input error (exit 2) that says what is wrong."""
    with pytest.raises(ConfigError) as info:
        resolve_retriever(spec.format(mod=user_module))
    assert message.format(mod=user_module) in str(info.value)


def test_module_failing_at_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 3: an exception while importing the user's module is a config error, not a crash."""
    name = f"broken_{next(_names)}"
    (tmp_path / f"{name}.py").write_text("import not_installed_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as info:
        resolve_retriever(f"{name}:search")
    assert str(info.value) == (
        f"importing {name} failed: No module named 'not_installed_dependency_xyz'"
    )
    (tmp_path / "crash.py").write_text("1 / 0\n")
    with pytest.raises(ConfigError, match="crash.py failed: ZeroDivisionError: division by zero"):
        resolve_retriever(f"{tmp_path / 'crash.py'}:search")


@dataclass
class _Built:
    """What a built-in factory received."""

    options: dict[str, Any]

    def retrieve(self, question: str, k: int) -> list[Hit]:
        return [Hit(id="guide.md#0", doc="guide.md", score=3.0)][:k]


def test_builtins_are_looked_up_and_wrapped(tmp_path: Path) -> None:
    """Issue 3: bm25/dense/hybrid and *.yaml go to the built-in factories with the corpus."""
    made: list[_Built] = []

    def factory(**options: Any) -> _Built:
        made.append(_Built(options))
        return made[-1]

    builtins = {"bm25": factory, "pipeline": factory}
    with pytest.raises(ConfigError, match="retriever bm25 needs a corpus: pass --corpus"):
        resolve_retriever("bm25", builtins=builtins)
    with pytest.raises(ConfigError, match=r"the dense retriever is not available here \(available"):
        resolve_retriever("dense", corpus="docs/", builtins=builtins)

    retriever = resolve_retriever(
        "bm25", corpus="docs/", chunker="markdown", cache_dir=tmp_path, builtins=builtins
    )
    assert isinstance(retriever, Retriever)
    assert retriever.spec == "bm25"
    assert retriever.is_async is False
    assert made[0].options == {"corpus": "docs/", "chunker": "markdown", "cache_dir": tmp_path}
    assert retriever.retrieve("q", 5) == [Hit(id="guide.md#0", doc="guide.md", score=3.0)]

    pipeline = tmp_path / "pipe.yaml"
    pipeline.write_text("retriever: bm25\n")
    resolve_retriever(str(pipeline), corpus="docs/", builtins=builtins)
    assert made[1].options["path"] == pipeline


def test_as_retriever_accepts_python_objects(user_module: str) -> None:
    """Issue 3: evaluate(retriever=...) takes a function, an object, a spec or a retriever."""

    def search(question: str, k: int) -> list[str]:
        return ["x.md"]

    wrapped = as_retriever(search)
    assert isinstance(wrapped, CallableRetriever)
    assert wrapped.retrieve("q", 1) == [Hit(id="x.md", doc="x.md")]
    assert as_retriever(wrapped) is wrapped
    assert isinstance(as_retriever(_Built({})), ObjectRetriever)
    assert isinstance(as_retriever("http://127.0.0.1:9/x"), HttpRetriever)
    with pytest.raises(ConfigError, match="cannot use int as a retriever"):
        as_retriever(3)
    with pytest.raises(ConfigError, match=r"must accept \(question, k\)"):
        as_retriever(lambda: [])


class _Obj:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([{"id": "a#0", "doc": "a", "score": 1}], [Hit(id="a#0", doc="a", score=1.0)]),
        ({"hits": [{"doc_id": "a"}]}, [Hit(id="a", doc="a")]),
        ([{"id": "a#2", "document": "a"}], [Hit(id="a#2", doc="a")]),
        ([{"id": 17}], [Hit(id="17", doc="17")]),
        (["a", "b"], [Hit(id="a", doc="a"), Hit(id="b", doc="b")]),
        ((("a", 2.5),), [Hit(id="a", doc="a", score=2.5)]),
        ([_Obj(doc="a", score=2, text="t")], [Hit(id="a", doc="a", score=2.0, text="t")]),
        (
            [{"id": "a#1", "doc": "a", "start": 10, "end": 20, "metadata": {"h": "Install"}}],
            [Hit(id="a#1", doc="a", start=10, end=20, metadata={"h": "Install"})],
        ),
        (iter(["g"]), [Hit(id="g", doc="g")]),
        ([], []),
    ],
    ids=[
        "dict",
        "hits-key-doc_id",
        "document-key",
        "int-id",
        "strings",
        "pairs",
        "object",
        "span-metadata",
        "generator",
        "empty",
    ],
)
def test_coerce_hits_accepts(raw: object, expected: list[Hit]) -> None:
    """Issue 3: the hit shapes users return are all understood."""
    assert coerce_hits(raw, source="s") == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([{"score": 1}], 'malformed hit 1 from s: missing "id" and "doc"'),
        ([_Obj(score=1)], 'malformed hit 1 from s: missing "id" and "doc"'),
        (["a", {"id": "b", "score": "high"}], "malformed hit 2 from s: \"score\" must be a number, got str 'high'"),
        ([{"id": "a", "score": float("nan")}], 'malformed hit 1 from s: "score" must be finite, got nan'),
        ([{"id": ["a"]}], "malformed hit 1 from s: \"id\" must be a string, got list ['a']"),
        ([{"id": ""}], 'malformed hit 1 from s: "id" is empty'),
        ([{"id": "a", "start": 5, "end": 2}], 'malformed hit 1 from s: "end" (2) is before "start" (5)'),
        ([{"id": "a", "start": -1}], 'malformed hit 1 from s: "start" must be a non-negative integer, got int -1'),
        ([{"id": "a", "text": 3}], 'malformed hit 1 from s: "text" must be a string, got int 3'),
        ([{"id": "a", "metadata": []}], 'malformed hit 1 from s: "metadata" must be an object, got list []'),
        ([3], 'malformed hit 1 from s: expected a dict, an object with "id"/"doc" or a string, got int 3'),
        (None, "malformed answer from s: expected a list of hits, got null"),
        ("a.md", "malformed answer from s: expected a list of hits, got str 'a.md'"),
        ({"results": []}, "malformed answer from s: expected a list of hits or {\"hits\": [...]}, got an object with keys ['results']"),
    ],
    ids=[
        "no-id-dict",
        "no-id-object",
        "string-score",
        "nan-score",
        "list-id",
        "empty-id",
        "end-before-start",
        "negative-start",
        "text-not-string",
        "metadata-not-object",
        "int-hit",
        "none",
        "bare-string",
        "no-hits-key",
    ],
)  # fmt: skip
def test_coerce_hits_rejects(raw: object, message: str) -> None:
    """Issue 3: anything malformed is one clear RetrieverError (evaluate records it per question)."""
    with pytest.raises(RetrieverError) as info:
        coerce_hits(raw, source="s")
    assert str(info.value) == message


def test_answer_must_be_a_string() -> None:
    """Issue 3: an answer beside the hits must be text."""
    retriever = CallableRetriever(lambda q, k: {"hits": [], "answer": 42}, spec="s")
    with pytest.raises(RetrieverError, match='"answer" must be a string, got int 42'):
        retriever.retrieve_full("q", 1)
