"""LangChain, LlamaIndex and Haystack objects as retrievers, with no glue.

Detection is by class (module and name along the MRO), so none of the three
frameworks is imported here: ragmeter installs and imports without them.

- LangChain ``BaseRetriever``: ``invoke(question)``; ``k`` goes in through a copy
  with ``k`` (BM25Retriever, TFIDFRetriever…) or ``search_kwargs["k"]`` (vector-store
  retrievers). A ``VectorStore``: ``similarity_search_with_score(question, k=k)``.
- LlamaIndex ``BaseRetriever``: ``retrieve(question)``; ``BaseQueryEngine``:
  ``query(question)``, keeping the answer and its ``source_nodes``.
- Haystack: a component (``run(query=…, top_k=…)``) or a ``Pipeline`` (the question
  and ``top_k`` routed to every component that takes them; the documents of the last
  component that produces them are the hits; an answer or reply is kept).
- Any other object with ``invoke`` / ``search`` / ``get_relevant_documents``.

Where ``k`` cannot reach the framework, the result is cut to ``k`` and the run's notes
say so once. Their document types become hits in ``framework_docs.document_fields``.

>>> framework_of(object()) is None
True
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.retrievers.framework_docs import class_names, document_fields
from ragmeter.retrievers.ids import DocIdentity

__all__ = ["framework_of", "framework_retriever"]

_LC_RETRIEVER = "langchain_core.retrievers.BaseRetriever"
_LC_VECTORSTORE = "langchain_core.vectorstores.base.VectorStore"
_LC_RUNNABLE = "langchain_core.runnables.base.Runnable"
_LI_RETRIEVER = "llama_index.core.base.base_retriever.BaseRetriever"
_LI_QUERY_ENGINE = "llama_index.core.base.base_query_engine.BaseQueryEngine"
_HS_PIPELINE = "haystack.core.pipeline.base.PipelineBase"

# Input names a Haystack component or pipeline takes the question under, in order.
_QUERY_INPUTS = ("query", "text", "question", "prompt")
# Keyword names generic search methods take the depth under.
_K_NAMES = ("k", "top_k", "limit", "n_results", "num_results", "size")

Call = Callable[[str, int], Any]


def framework_of(obj: object) -> str | None:
    """Which adapter an object needs: ``"langchain"``, ``"langchain-vectorstore"``,
    ``"llamaindex"``, ``"llamaindex-query-engine"``, ``"haystack"``,
    ``"haystack-pipeline"``, ``"object"`` (invoke/search/get_relevant_documents) or None.

    >>> class Search:
    ...     def search(self, query, limit=10): return []
    >>> framework_of(Search())
    'object'
    """
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return None
    names = class_names(type(obj))
    if _LC_RETRIEVER in names:
        return "langchain"
    if _LC_VECTORSTORE in names:
        return "langchain-vectorstore"
    if _LI_RETRIEVER in names:
        return "llamaindex"
    if _LI_QUERY_ENGINE in names:
        return "llamaindex-query-engine"
    if _HS_PIPELINE in names:
        return "haystack-pipeline"
    if hasattr(obj, "__haystack_input__") and callable(getattr(obj, "run", None)):
        return "haystack"
    if _LC_RUNNABLE in names:
        return "langchain-runnable"
    if callable(getattr(obj, "retrieve", None)):
        return None  # our own protocol: retrieve(question, k)
    for method in ("search", "get_relevant_documents", "invoke"):
        if callable(getattr(obj, method, None)):
            return "object"
    return None


def framework_retriever(
    obj: object,
    *,
    spec: str | None = None,
    identity: DocIdentity | None = None,
    timeout: float | None = None,
) -> Any:
    """A :class:`~ragmeter.retrievers.CallableRetriever` over a framework object, or None.

    >>> class Search:
    ...     def search(self, query, limit=10):
    ...         return [{"doc": "a.md"}, {"doc": "b.md"}][:limit]
    >>> r = framework_retriever(Search(), spec="demo")
    >>> [h.doc for h in r.retrieve("q", 1)], r.config["framework"]
    (['a.md'], 'object')
    """
    kind = framework_of(obj)
    if kind is None:
        return None
    from ragmeter.retrievers.callable import CallableRetriever

    identity = identity or DocIdentity()
    builder = _BUILDERS[kind]
    call, how_k = builder(obj, identity)
    cls = type(obj)
    label = spec or f"{cls.__module__}:{cls.__qualname__}"
    config = {
        "type": "framework",
        "framework": kind,
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "k": how_k,
    }
    if identity.field:
        config["doc_field"] = identity.field
    return CallableRetriever(call, spec=label, timeout=timeout, config=config, identity=identity)


def _cut(identity: DocIdentity, what: str) -> Callable[[list[Any], int], list[Any]]:
    def cut(found: list[Any], k: int) -> list[Any]:
        if len(found) > k:
            identity.notes.say(f"{what} returned more than k hits; the results were cut to k")
        return found[:k]

    return cut


def _langchain(obj: Any, identity: DocIdentity) -> tuple[Call, str]:
    fields = getattr(type(obj), "model_fields", {})
    if "k" in fields:

        def with_k(question: str, k: int) -> Any:
            return obj.model_copy(update={"k": k}).invoke(question)

        return with_k, "the retriever's k field"
    if "search_kwargs" in fields:

        def with_kwargs(question: str, k: int) -> Any:
            kwargs = {**(obj.search_kwargs or {}), "k": k}
            return obj.model_copy(update={"search_kwargs": kwargs}).invoke(question)

        return with_kwargs, 'search_kwargs["k"]'
    return _invoke_and_cut(obj, identity)


def _invoke_and_cut(obj: Any, identity: DocIdentity) -> tuple[Call, str]:
    cut = _cut(identity, type(obj).__qualname__)

    def invoke(question: str, k: int) -> Any:
        return cut(list(obj.invoke(question)), k)

    return invoke, "cut to k"


def _vectorstore(obj: Any, identity: DocIdentity) -> tuple[Call, str]:
    def search(question: str, k: int) -> Any:
        pairs = obj.similarity_search_with_score(question, k=k)
        # Scores may be distances (lower is closer): the store's order is the ranking.
        return [{**document_fields(doc), "score": None} for doc, _ in pairs]

    return search, "similarity_search_with_score(k=k)"


def _llamaindex(obj: Any, identity: DocIdentity) -> tuple[Call, str]:
    cut = _cut(identity, f"{type(obj).__qualname__} (its similarity_top_k is fixed when built)")
    top = getattr(obj, "similarity_top_k", None) or getattr(obj, "_similarity_top_k", None)

    def retrieve(question: str, k: int) -> Any:
        if isinstance(top, int) and top < k:
            identity.notes.say(
                f"{type(obj).__qualname__} returns at most similarity_top_k={top} hits, "
                f"fewer than k={k}: build it with similarity_top_k={k}",
                key="top_k",
            )
        return cut(list(obj.retrieve(question)), k)

    return retrieve, "cut to k"


def _query_engine(obj: Any, identity: DocIdentity) -> tuple[Call, str]:
    cut = _cut(identity, f"{type(obj).__qualname__} (its similarity_top_k is fixed when built)")

    def query(question: str, k: int) -> Any:
        response = obj.query(question)
        answer = getattr(response, "response", None)
        nodes = list(getattr(response, "source_nodes", None) or [])
        return {"hits": cut(nodes, k), "answer": None if answer is None else str(answer)}

    return query, "cut to k"


def _haystack(obj: Any, identity: DocIdentity) -> tuple[Call, str]:
    params = _parameters(obj.run)
    query = next((name for name in _QUERY_INPUTS if name in params), None)
    if query is None:
        raise ConfigError(
            f"Haystack component {type(obj).__qualname__} takes none of the inputs "
            f"{', '.join(_QUERY_INPUTS)}: wrap it in a Pipeline or a function (question, k)"
        )
    takes_k = "top_k" in params
    cut = _cut(identity, type(obj).__qualname__)

    def run(question: str, k: int) -> Any:
        output = obj.run(**{query: question, **({"top_k": k} if takes_k else {})})
        return cut(_documents_of(output, type(obj).__qualname__), k)

    return run, "top_k" if takes_k else "cut to k"


def _haystack_pipeline(obj: Any, identity: DocIdentity) -> tuple[Call, str]:
    inputs: Mapping[str, Mapping[str, Any]] = obj.inputs()
    data_names = {
        name: [key for key in sockets if key in _QUERY_INPUTS] for name, sockets in inputs.items()
    }
    if not any(data_names.values()):
        raise ConfigError(
            f"no component of the Haystack pipeline takes a question input "
            f"({', '.join(_QUERY_INPUTS)}); its open inputs are {dict(inputs)}"
        )
    with_k = [name for name, sockets in inputs.items() if "top_k" in sockets]
    order = _topological(obj)
    cut = _cut(identity, "the Haystack pipeline")

    def run(question: str, k: int) -> Any:
        data: dict[str, dict[str, Any]] = {}
        for name, keys in data_names.items():
            for key in keys:
                data.setdefault(name, {})[key] = question
        for name in with_k:
            data.setdefault(name, {})["top_k"] = k
        output = obj.run(data, include_outputs_from=set(order))
        documents = None
        answer = None
        for name in reversed(order):
            produced = output.get(name) or {}
            if documents is None and "documents" in produced:
                documents = produced["documents"]
            if answer is None:
                answer = _answer_of(produced)
        if documents is None:
            raise ConfigError("the Haystack pipeline produced no documents output")
        return {"hits": cut(list(documents), k), "answer": answer}

    return run, "top_k" if with_k else "cut to k"


def _topological(pipeline: Any) -> list[str]:
    graph = getattr(pipeline, "graph", None)
    try:
        import networkx

        return [str(name) for name in networkx.topological_sort(graph)]
    except Exception:  # noqa: BLE001 - a cyclic pipeline: keep insertion order
        return [str(name) for name in getattr(graph, "nodes", ())]


def _answer_of(produced: Mapping[str, Any]) -> str | None:
    for key in ("answers", "replies"):
        values = produced.get(key)
        if values:
            first = values[0]
            text = getattr(first, "data", None) or getattr(first, "text", None) or first
            return str(text)
    return None


def _documents_of(output: object, label: str) -> list[Any]:
    if isinstance(output, Mapping) and "documents" in output:
        return list(output["documents"])
    keys = list(output) if isinstance(output, Mapping) else type(output).__name__
    raise ConfigError(f"{label}.run() returned no 'documents' (got {keys})")


def _generic(obj: Any, identity: DocIdentity) -> tuple[Call, str]:
    name = next(
        m for m in ("search", "get_relevant_documents", "invoke") if callable(getattr(obj, m, None))
    )
    method = getattr(obj, name)
    params = _parameters(method)
    k_name = next((key for key in _K_NAMES if key in params), None)
    cut = _cut(identity, f"{type(obj).__qualname__}.{name}()")
    if k_name is not None:

        def by_name(question: str, k: int) -> Any:
            return cut(list(_hits_list(method(question, **{k_name: k}))), k)

        return by_name, f"{name}({k_name}=k)"
    if _positional(params) >= 2:

        def positional(question: str, k: int) -> Any:
            return cut(list(_hits_list(method(question, k))), k)

        return positional, f"{name}(question, k)"

    def question_only(question: str, k: int) -> Any:
        return cut(list(_hits_list(method(question))), k)

    return question_only, "cut to k"


def _hits_list(raw: Any) -> Any:
    if isinstance(raw, Mapping) and "hits" in raw and not isinstance(raw["hits"], Mapping):
        return raw["hits"]
    return raw


def _parameters(fn: Any) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def _positional(params: Mapping[str, inspect.Parameter]) -> int:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values()):
        return 99
    return sum(1 for p in params.values() if p.kind in kinds)


_BUILDERS: dict[str, Callable[[Any, DocIdentity], tuple[Call, str]]] = {
    "langchain": _langchain,
    "langchain-runnable": _invoke_and_cut,
    "langchain-vectorstore": _vectorstore,
    "llamaindex": _llamaindex,
    "llamaindex-query-engine": _query_engine,
    "haystack": _haystack,
    "haystack-pipeline": _haystack_pipeline,
    "object": _generic,
}
