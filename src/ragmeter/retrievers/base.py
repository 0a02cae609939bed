"""What every retriever adapter looks like, and how raw answers become hits.

A retriever is anything that, given a question and a depth ``k``, returns a
ranked list of :class:`~ragmeter.documents.Hit`. Users hand us hits in many
shapes (dicts, dataclasses, pydantic models, bare ids, ``{"hits": [...]}``);
:func:`coerce_hits` is the one place that turns them into ``Hit`` values and
says exactly which hit was wrong when one is.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ragmeter import _http
from ragmeter.documents import Hit
from ragmeter.errors import RetrieverError
from ragmeter.retrievers.framework_docs import document_fields
from ragmeter.retrievers.ids import DocIdentity, resolve_field

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "RetrievalOutput",
    "Retriever",
    "coerce_hits",
    "coerce_output",
]

#: Seconds a single retrieval may take (HTTP: one attempt as a whole, body included).
DEFAULT_TIMEOUT = 30.0
#: How many times a failed HTTP call is retried, and the first backoff: the shared policy.
DEFAULT_RETRIES = _http.DEFAULT_RETRIES
DEFAULT_BACKOFF = _http.BACKOFF_FIRST_S

# Field names accepted for a hit's document id, in order of preference.
_DOC_KEYS = ("doc", "doc_id", "document")
# Fields of an Elasticsearch/OpenSearch ``_source`` read as the hit's text, in order.
_TEXT_KEYS = ("text", "content", "body", "page_content")


@dataclass(frozen=True, slots=True)
class RetrievalOutput:
    """Everything one retrieval call returned: the ranked hits and, if the
    retriever also generated one, its answer; a reference pipeline adds how long
    each of its stages took (ms), kept with the question's result.

    >>> RetrievalOutput(hits=[Hit(id="a", doc="a")], answer="42").answer
    '42'
    """

    hits: list[Hit] = field(default_factory=list)
    answer: str | None = None
    stages: Mapping[str, float] | None = None


@runtime_checkable
class Retriever(Protocol):
    """The interface ``evaluate()`` drives.

    ``is_async`` tells the caller which method is native: sync retrievers are
    called from a thread pool via ``retrieve``, async ones on one event loop via
    ``aretrieve``. Every adapter in this package implements both, so a caller
    may use either. ``config`` is what the run store keeps about the retriever;
    it never holds secrets (auth headers, keys, URL passwords).
    """

    spec: str
    config: Mapping[str, Any]
    is_async: bool

    def retrieve(self, question: str, k: int) -> list[Hit]:
        """Return up to ``k`` hits for ``question``, best first."""
        ...

    async def aretrieve(self, question: str, k: int) -> list[Hit]:
        """Async twin of :meth:`retrieve`."""
        ...

    def close(self) -> None:
        """Release clients, files and threads; safe to call twice."""
        ...


def coerce_output(
    raw: object, *, source: str, identity: DocIdentity | None = None
) -> RetrievalOutput:
    """Like :func:`coerce_hits`, but also keep an ``"answer"`` given beside the hits.

    >>> coerce_output({"hits": ["a.md"], "answer": "yes"}, source="demo").answer
    'yes'
    """
    if isinstance(raw, RetrievalOutput):  # already checked by whoever built it
        return raw
    if type(raw) is list:  # hits alone, the common answer: no answer to look for
        if identity is None or not identity.active:  # coerce_hits's own test, a call fewer
            return _hits_output(_plain_hits(raw, source))
        return RetrievalOutput(hits=coerce_hits(raw, source=source, identity=identity))
    answer: str | None = None
    if isinstance(raw, Mapping) and "hits" in raw:
        value = raw.get("answer")
        if value is not None and not isinstance(value, str):
            raise RetrieverError(
                f'malformed answer from {source}: "answer" must be a string, got {_describe(value)}'
            )
        answer = value
    return RetrievalOutput(hits=coerce_hits(raw, source=source, identity=identity), answer=answer)


def coerce_hits(raw: object, *, source: str, identity: DocIdentity | None = None) -> list[Hit]:
    """Turn whatever a retriever returned into a list of :class:`Hit`.

    Accepts a list (or any iterable) of dicts or objects with the fields
    ``id``, ``doc`` (or ``doc_id`` / ``document``), ``score``, ``text``,
    ``start``, ``end``, ``metadata``; bare strings (``id == doc``);
    ``(id, score)`` pairs; a mapping ``{"hits": [...]}``; an Elasticsearch/OpenSearch
    ``_search`` body (``hits.hits[]`` with ``_id``/``_score``/``_source``); and the
    documents of LangChain, LlamaIndex and Haystack (see ``frameworks.document_fields``).
    When only one of ``id`` and ``doc`` is given it stands for both. ``identity`` says
    where the document id lives and which folders paths are relative to. Anything else
    raises :class:`~ragmeter.errors.RetrieverError` naming the hit (1-based) and source.

    >>> coerce_hits([{"doc": "faq.md", "score": 2}, "guide.md"], source="demo")[1]
    Hit(id='guide.md', doc='guide.md', score=None, text=None, start=None, end=None, metadata={})
    >>> coerce_hits([{"score": 1}], source="mymod:search")
    Traceback (most recent call last):
    ...
    ragmeter.errors.RetrieverError: malformed hit 1 from mymod:search: missing "id" and "doc"
    >>> es = {"hits": {"total": {"value": 1}, "max_score": 2.0,
    ...                "hits": [{"_id": "faq.md", "_score": 2.0, "_source": {"text": "..."}}]}}
    >>> coerce_hits(es, source="es")[0].doc
    'faq.md'
    """
    if type(raw) is not list and isinstance(raw, Mapping):
        if "hits" not in raw:
            keys = ", ".join(repr(str(key)) for key in list(raw)[:5])
            raise RetrieverError(
                f'malformed answer from {source}: expected a list of hits or {{"hits": [...]}}, '
                f"got an object with keys [{keys}]"
            )
        raw = raw["hits"]
        if isinstance(raw, Mapping):
            # An Elasticsearch/OpenSearch body: {"hits": {"total", "max_score", "hits": [...]}}.
            # Read as a list, its keys would be three hits named "total", "max_score", "hits".
            if "hits" not in raw or isinstance(raw["hits"], Mapping):
                keys = ", ".join(repr(str(key)) for key in list(raw)[:5])
                raise RetrieverError(
                    f'malformed answer from {source}: "hits" must be a list of hits, '
                    f"got an object with keys [{keys}]"
                )
            raw = raw["hits"]
    if type(raw) is list and (identity is None or not identity.active):
        return _plain_hits(raw, source)
    if raw is None or isinstance(raw, str | bytes) or not isinstance(raw, Iterable):
        raise RetrieverError(
            f"malformed answer from {source}: expected a list of hits, got {_describe(raw)}"
        )
    return [_coerce_one(item, number, source, identity) for number, item in enumerate(raw, start=1)]


_PLAIN_KEYS = frozenset({"id", "doc", "score", "text"})
_HIT_SLOT_NAMES = ("id", "doc", "score", "text", "start", "end", "metadata")


class _OpenHit:
    """:class:`Hit`'s slots, writable. A plain hit is built as one by plain attribute stores,
    then made a ``Hit`` by assigning its class (the same slots, so the same layout): the
    frozen dataclass's ``__init__`` (an ``object.__setattr__`` per field) was most of building
    a million hits (issue 29.2). No ``__init__``: ``_OpenHit()`` is the cheapest way to make
    one (cheaper than ``object.__new__(_OpenHit)``), its slots set by the caller."""

    __slots__ = _HIT_SLOT_NAMES
    id: str
    doc: str
    score: float | None
    text: str | None
    start: int | None
    end: int | None
    metadata: dict[str, Any]


def _made_hit(ident: str, doc: str, score: float | None, text: str | None) -> Hit:
    """``Hit(id=ident, doc=doc, score=score, text=text)``, made without its ``__init__``."""
    hit = _OpenHit()
    hit.id, hit.doc, hit.score, hit.text = ident, doc, score, text
    hit.start = hit.end = None
    hit.metadata = {}
    hit.__class__ = Hit  # type: ignore[assignment]
    return hit  # type: ignore[return-value]


class _OpenOutput:
    """:class:`RetrievalOutput`'s slots, writable: :func:`_hits_output` builds one as
    :func:`_made_hit` builds a hit (its frozen ``__init__`` cost more than a question's
    layers of calls together; issue 29.2)."""

    __slots__ = ("hits", "answer", "stages")
    hits: list[Hit]
    answer: str | None
    stages: Mapping[str, float] | None


def _hits_output(hits: list[Hit]) -> RetrievalOutput:
    """``RetrievalOutput(hits=hits)``, made without its ``__init__``."""
    out = _OpenOutput()
    out.hits = hits
    out.answer = None
    out.stages = None
    out.__class__ = RetrievalOutput  # type: ignore[assignment]
    return out  # type: ignore[return-value]


def _same_as_init() -> bool:
    """Checked at import, on this Python: a hit and an output made so are the ones ``Hit(...)``
    and ``RetrievalOutput(...)`` make."""
    try:
        made, built = _made_hit("a#1", "a", 1.5, "t"), Hit("a#1", "a", 1.5, "t")
        made_out, built_out = _hits_output([built]), RetrievalOutput(hits=[built])
    except TypeError:  # a layout changed: the class cannot be assigned
        return False
    return (
        Hit.__slots__ == _HIT_SLOT_NAMES
        and type(made) is Hit
        and repr(made) == repr(built)
        and RetrievalOutput.__slots__ == _OpenOutput.__slots__
        and type(made_out) is RetrievalOutput
        and repr(made_out) == repr(built_out)
    )


_FAST_HITS = _same_as_init()
if not _FAST_HITS:  # build hits and outputs the usual way
    _made_hit = Hit  # type: ignore[assignment]

    def _hits_output(hits: list[Hit]) -> RetrievalOutput:
        return RetrievalOutput(hits=hits)


def _plain_hit(item: dict[Any, Any]) -> Hit | None:
    """The common hit, ``{"id": str, "doc": str, "score": finite float, "text": str}``
    (score and text optional), built without the checks the other shapes go through; the
    same :class:`Hit` the full path builds (issue 29.2). ``None`` for anything else, which
    the full path checks and explains.

    >>> _plain_hit({"id": "a#1", "doc": "a", "score": 2.0})
    Hit(id='a#1', doc='a', score=2.0, text=None, start=None, end=None, metadata={})
    >>> _plain_hit({"id": "a", "doc": "a", "score": 2}) is None  # an int score: full path
    True
    """
    if not item.keys() <= _PLAIN_KEYS:
        return None
    ident, doc, score, text = item.get("id"), item.get("doc"), item.get("score"), item.get("text")
    if type(ident) is not str or type(doc) is not str or not ident or not doc:
        return None
    if score is not None and (type(score) is not float or not math.isfinite(score)):
        return None
    if text is not None and type(text) is not str:
        return None
    return _made_hit(ident, doc, score, text)


def _plain_hits(items: list[Any], source: str) -> list[Hit]:
    """``[_coerce_one(item) ...]`` for a list, with :func:`_plain_hit`'s test and
    :func:`_made_hit` inlined while the items are plain dict hits (issue 29.2). The first item
    that is not goes, with the rest, through the full path.

    The test reads ``id`` and ``doc`` by subscript (a missing one raises ``KeyError``, which
    ends the loop) and ``text`` only when the dict's size leaves room for it: the common
    ``{"id", "doc", "score"}`` hit costs two subscripts and one ``get``. (Checking and building
    by columns with C-level ``map`` passes measured slower at ten hits a list.)
    """
    if not _FAST_HITS:
        return [_coerce_one(item, n, source, None) for n, item in enumerate(items, start=1)]
    out: list[Hit] = []
    append, finite, open_hit, hit_class = out.append, math.isfinite, _OpenHit, Hit
    for item in items:
        if type(item) is not dict:
            break
        try:
            ident = item["id"]
            doc = item["doc"]
        except KeyError:
            break
        if type(ident) is not str or type(doc) is not str or not ident or not doc:
            break
        # Its keys are among _PLAIN_KEYS: id and doc are there, score and text when not
        # None, so any other key (or a None score or text) makes it longer.
        score = item.get("score")
        if score is None:
            text = item.get("text")
            if len(item) != 2 + (text is not None):
                break
        elif type(score) is not float or not finite(score):
            break
        elif len(item) == 3:  # id, doc and score: no room for text
            text = None
        else:
            text = item.get("text")
            if len(item) != 3 + (text is not None):
                break
        if text is not None and type(text) is not str:
            break
        # _made_hit, inlined: no Python call a hit (issue 29.2)
        hit = open_hit()
        hit.id = ident
        hit.doc = doc
        hit.score = score
        hit.text = text
        hit.start = None
        hit.end = None
        hit.metadata = {}
        hit.__class__ = hit_class  # type: ignore[assignment]
        append(hit)  # type: ignore[arg-type]
    else:
        return out
    done = len(out)
    out += [_coerce_one(item, n, source, None) for n, item in enumerate(items[done:], done + 1)]
    return out


def _search_hit(item: Mapping[str, Any]) -> dict[str, Any]:
    """An Elasticsearch/OpenSearch hit as hit fields: ``_source`` is its metadata."""
    source = item.get("_source")
    body: Mapping[str, Any] = source if isinstance(source, Mapping) else {}
    text = next((body[key] for key in _TEXT_KEYS if isinstance(body.get(key), str)), None)
    doc = next((body[key] for key in _DOC_KEYS if body.get(key) is not None), None)
    return {
        "id": item.get("_id"),
        "doc": doc,
        "score": item.get("_score"),
        "text": text,
        "metadata": dict(body),
    }


def _coerce_one(item: object, number: int, source: str, identity: DocIdentity | None) -> Hit:
    if type(item) is dict and (identity is None or not identity.active):
        plain = _plain_hit(item)
        if plain is not None:
            return plain
    where = f"malformed hit {number} from {source}"
    if isinstance(item, Hit):
        if identity is None or not identity.roots:
            return item
        return _relative(item, identity)
    if isinstance(item, Mapping) and "_id" in item and "id" not in item:
        item = _search_hit(item)
    elif not isinstance(item, Mapping | str | bytes | int | float | list | tuple | set):
        item = document_fields(item) or item
    hit = _coerce_fields(item, where)
    if identity is None or not identity.active:
        return hit
    if identity.field and not isinstance(item, str | tuple):
        doc = identity.doc_of(item, where=where)
        # An id given beside the doc field is the chunk's; else the document stands for it.
        own_id = resolve_field(item, "id") is not None
        return Hit(
            id=hit.id if own_id else str(doc),
            doc=str(doc),
            score=hit.score,
            text=hit.text,
            start=hit.start,
            end=hit.end,
            metadata=hit.metadata,
        )
    return _relative(hit, identity)


def _relative(hit: Hit, identity: DocIdentity) -> Hit:
    doc = identity.relative(hit.doc)
    if doc == hit.doc:
        return hit
    ident = doc if hit.id == hit.doc else hit.id
    return Hit(
        id=ident,
        doc=doc,
        score=hit.score,
        text=hit.text,
        start=hit.start,
        end=hit.end,
        metadata=hit.metadata,
    )


def _coerce_fields(item: object, where: str) -> Hit:
    if isinstance(item, str):
        if not item:
            raise RetrieverError(f"{where}: empty id")
        return Hit(id=item, doc=item)
    if isinstance(item, tuple) and len(item) == 2 and not isinstance(item[0], Mapping):
        # (id, score) pairs are what many ad-hoc search functions return.
        ident = _ident(item[0], "id", where)
        if ident is None:
            raise RetrieverError(f'{where}: missing "id" and "doc"')
        return Hit(id=ident, doc=ident, score=_score(item[1], where))
    if isinstance(item, Mapping):
        get = item.get
    elif isinstance(item, str | bytes | int | float | list | tuple | set) or item is None:
        raise RetrieverError(
            f'{where}: expected a dict, an object with "id"/"doc" or a string, '
            f"got {_describe(item)}"
        )
    else:

        def get(name: str, default: object = None) -> object:
            return getattr(item, name, default)

    ident = _ident(get("id"), "id", where)
    doc = None
    for key in _DOC_KEYS:
        doc = _ident(get(key), key, where)
        if doc is not None:
            break
    if ident is None and doc is None:
        raise RetrieverError(f'{where}: missing "id" and "doc"')
    start = _offset(get("start"), "start", where)
    end = _offset(get("end"), "end", where)
    if start is not None and end is not None and end < start:
        raise RetrieverError(f'{where}: "end" ({end}) is before "start" ({start})')
    text = get("text")
    if text is not None and not isinstance(text, str):
        raise RetrieverError(f'{where}: "text" must be a string, got {_describe(text)}')
    metadata = get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise RetrieverError(f'{where}: "metadata" must be an object, got {_describe(metadata)}')
    return Hit(
        id=ident if ident is not None else str(doc),
        doc=doc if doc is not None else str(ident),
        score=_score(get("score"), where),
        text=text,
        start=start,
        end=end,
        metadata=dict(metadata) if metadata else {},
    )


def _ident(value: object, name: str, where: str) -> str | None:
    if type(value) is str and value:  # the common case, first (issue 29.2)
        return value
    if value is None:
        return None
    if isinstance(value, bool):
        raise RetrieverError(f'{where}: "{name}" must be a string, got {_describe(value)}')
    # Numeric ids are common (BEIR corpora, database keys); they compare as strings.
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if not isinstance(value, str):
        raise RetrieverError(f'{where}: "{name}" must be a string, got {_describe(value)}')
    if not value:
        raise RetrieverError(f'{where}: "{name}" is empty')
    return value


def _score(value: object, where: str) -> float | None:
    if type(value) is float and math.isfinite(value):  # the common case, first
        return value
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise RetrieverError(f'{where}: "score" must be a number, got {_describe(value)}')
    score = float(value)
    if not math.isfinite(score):
        raise RetrieverError(f'{where}: "score" must be finite, got {score}')
    return score


def _offset(value: object, name: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise RetrieverError(
            f'{where}: "{name}" must be a non-negative integer, got {_describe(value)}'
        )
    return int(value)


def _describe(value: object) -> str:
    if value is None:
        return "null"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"
