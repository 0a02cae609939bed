"""LangChain, LlamaIndex and Haystack documents as hit fields, without importing them.

Recognised by class (module and name along the MRO), so ragmeter needs none of the
frameworks installed. ``coerce_hits`` calls :func:`document_fields` for any hit that is
not a dict; the adapters for the frameworks' retrievers live in ``frameworks.py``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["class_names", "document_fields"]

_LC_DOCUMENT = "langchain_core.documents.base.Document"
_LI_NODE_WITH_SCORE = "llama_index.core.schema.NodeWithScore"
_LI_NODE = "llama_index.core.schema.BaseNode"
_HS_DOCUMENT = "haystack.dataclasses.document.Document"


def class_names(cls: type) -> set[str]:
    """``module.QualName`` of ``cls`` and of every class it derives from.

    >>> "builtins.object" in class_names(bool)
    True
    """
    return {f"{c.__module__}.{c.__qualname__}" for c in cls.__mro__}


def document_fields(item: object) -> dict[str, Any]:
    """A framework document as hit fields (``{}`` when ``item`` is none of them).

    LangChain ``Document``: ``doc`` from ``metadata["source"]``, ``start`` from
    ``metadata["start_index"]`` (``add_start_index=True``); LlamaIndex
    ``NodeWithScore``/nodes: ``metadata["file_path"]``, else ``ref_doc_id``, with
    ``start``/``end`` from ``start_char_idx``/``end_char_idx``; Haystack ``Document``:
    ``meta["file_path"]``, ``start`` from ``meta["split_idx_start"]``. A start without an
    end ends where the chunk's text does. Without the doc field the framework's own id
    stands in (the id check then says which ``--doc-field`` to pass).

    >>> document_fields({"doc": "a.md"})
    {}
    """
    names = class_names(type(item))
    fields: dict[str, Any]
    if _LC_DOCUMENT in names:
        metadata = dict(getattr(item, "metadata", None) or {})
        ident = getattr(item, "id", None)
        text = getattr(item, "page_content", None)
        fields = {
            "id": ident,
            "doc": metadata.get("source") or ident,
            "text": text,
            "metadata": metadata,
            **_span(metadata.get("start_index"), text),
        }
    elif _LI_NODE_WITH_SCORE in names or _LI_NODE in names:
        node: Any = getattr(item, "node", item)
        metadata = dict(getattr(node, "metadata", None) or {})
        ref = getattr(node, "ref_doc_id", None)
        fields = {
            "id": node.node_id,
            "doc": metadata.get("file_path") or ref or node.node_id,
            "text": node.get_content(),
            "score": getattr(item, "score", None),
            "start": getattr(node, "start_char_idx", None),
            "end": getattr(node, "end_char_idx", None),
            "metadata": metadata,
            "ref_doc_id": ref,
        }
    elif _HS_DOCUMENT in names:
        metadata = dict(getattr(item, "meta", None) or {})
        text = getattr(item, "content", None)
        fields = {
            "id": item.id,  # type: ignore[attr-defined]
            "doc": metadata.get("file_path") or item.id,  # type: ignore[attr-defined]
            "text": text,
            "score": getattr(item, "score", None),
            "metadata": metadata,
            **_span(metadata.get("split_idx_start"), text),
        }
    else:
        return {}
    return fields


def _span(start: object, text: object) -> dict[str, int]:
    """``start``/``end`` from a framework's start offset and the chunk's text, when both fit.

    LangChain writes ``start_index = -1`` for a chunk it could not find again; that and
    anything but a non-negative integer is no span.

    >>> _span(7, "abc"), _span(-1, "abc"), _span(None, "abc")
    ({'start': 7, 'end': 10}, {}, {})
    """
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        return {}
    if not isinstance(text, str):
        return {}
    return {"start": start, "end": start + len(text)}
