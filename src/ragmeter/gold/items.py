"""The gold item model: ``Relevance`` and ``GoldItem``, their aliases and error wording.

Public through ``ragmeter.gold.goldset``; kept apart so each module stays small.
Validation errors are turned into one sentence naming the field (``explain``)
because a pydantic traceback must never reach the user.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ragmeter.formats.text import text_problem

__all__ = ["GoldItem", "Relevance", "plain_item"]

SOURCES = ("log", "docs", "adversarial", "synthetic")
MAX_GRADE = 3

Str = Annotated[str, Strict()]


def id_like(value: Any) -> Any:
    # YAML turns `id: 12` and `doc: 31715818` into ints; they are ids, not numbers.
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _nonempty(value: str, what: str = "") -> str:
    if not value.strip():
        raise ValueError(f"{what} must not be empty".lstrip())
    return value


def _printable(value: str | None, what: str = "", *, controls: bool = True) -> str | None:
    # A lone surrogate passed `gold check`, was stored, then broke every printer (issue 19.10).
    problem = None if value is None else text_problem(value, controls=controls)
    if problem is not None:
        raise ValueError(f"{what} {problem}".lstrip())
    return value


def _strings_in(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)


# Validators are built on the first validation, not at import: a gold set of plain records
# (``plain_item``) never validates, and building them cost every eval ~30 ms (issue 29.2).
_CONFIG = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Relevance(BaseModel):
    """One judgment: a document, a passage of it (``quote``) or an exact chunk, with a grade.

    >>> Relevance(chunk="faq.md#4").doc_id
    'faq.md'
    """

    model_config = _CONFIG

    doc: Str | None = None
    quote: Str | None = None
    chunk: Str | None = None
    grade: int = 1

    @field_validator("doc", "chunk", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        return id_like(value)

    @field_validator("doc", "chunk", "quote")
    @classmethod
    def _not_blank(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Quotes are copied from documents, whose text may hold control characters.
        _printable(value, controls=info.field_name != "quote")
        return None if value is None else _nonempty(value)

    @field_validator("grade", mode="before")
    @classmethod
    def _grade(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"grade must be an integer 0-{MAX_GRADE}, got {value!r}")
        if not 0 <= value <= MAX_GRADE:
            raise ValueError(f"grade {value} is outside 0-{MAX_GRADE}")
        return value

    @model_validator(mode="after")
    def _anchor(self) -> Relevance:
        if self.doc is None and self.chunk is None:
            raise ValueError('needs "doc" or "chunk"')
        if self.doc is not None and self.chunk is not None:
            raise ValueError('give either "doc" or "chunk", not both')
        if self.quote is not None and self.doc is None:
            raise ValueError('"quote" needs "doc" (the quote is searched in that document)')
        return self

    @property
    def doc_id(self) -> str:
        """The document this judgment is about (for a chunk: the part before the last ``#``)."""
        if self.doc is not None:
            return self.doc
        assert self.chunk is not None  # guaranteed by _anchor
        return self.chunk.rpartition("#")[0] or self.chunk


# input alias -> canonical field; the relevance aliases are merged into `relevant`
_ALIASES = {"query": "question", "_id": "id", "query_id": "id", "answerContains": "answer_contains"}
# RAGAS calls it `reference` (`ground_truth` before 0.2), DeepEval `expected_output`.
_ALIASES |= dict.fromkeys(("reference", "expected_output", "ground_truth"), "reference_answer")
_RELEVANCE_ALIASES = {"relevance": None, "relevantDocs": "doc", "relevant_docs": "doc"}
_RELEVANCE_ALIASES["relevant_chunks"] = "chunk"
ID_KEYS = ("id", "_id", "query_id")


class GoldItem(BaseModel):
    """One question of the gold set.

    >>> GoldItem(id="q1", question="How?", answer_contains="30 days").answer_contains
    ('30 days',)
    >>> GoldItem.model_validate({"id": "q1", "question": "How?", "ground_truth": "Within 30 days."}).reference_answer
    'Within 30 days.'
    """

    model_config = _CONFIG

    id: Str
    question: Str
    relevant: tuple[Relevance, ...] = ()
    answer_contains: tuple[Str, ...] = ()
    reference_answer: Str | None = None
    tags: tuple[Str, ...] = ()
    source: Str | None = None
    status: Str | None = None
    parent: Str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def __hash__(self) -> int:
        # pydantic's frozen hash would hash `metadata` (a dict) and fail; equal
        # items still hash equal because these fields are part of equality.
        return hash((self.id, self.question, self.relevant))

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        out: dict[str, Any] = {}
        relevant: list[Any] = []
        for key, value in data.items():
            if key in _RELEVANCE_ALIASES or key == "relevant":
                relevant.extend(_relevance_list(key, value))
                continue
            name = _ALIASES.get(str(key), str(key))
            if name in out:
                raise ValueError(f'"{key}" repeats "{name}"; give only one of them')
            out[name] = value
        if relevant:
            out["relevant"] = relevant
        return out

    @field_validator("id", "parent", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        return id_like(value)

    @field_validator("answer_contains", "tags", mode="before")
    @classmethod
    def _wrap(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @field_validator("id", "question")
    @classmethod
    def _filled(cls, value: str) -> str:
        _printable(value)
        return _nonempty(value)

    @field_validator("parent", "status")
    @classmethod
    def _printable_id(cls, value: str | None) -> str | None:
        return _printable(value)

    @field_validator("reference_answer")
    @classmethod
    def _reference(cls, value: str | None) -> str | None:
        if value is None:
            return None
        _printable(value)
        return _nonempty(value)

    @field_validator("answer_contains", "tags")
    @classmethod
    def _filled_each(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for i, text in enumerate(value):
            if not text.isprintable() or not text.strip():  # rare: name the entry
                _printable(text, f"entry {i}")
                _nonempty(text, f"entry {i}")
        return value

    @field_validator("source")
    @classmethod
    def _source(cls, value: str | None) -> str | None:
        if value is not None and value not in SOURCES:
            raise ValueError(f"{value!r} is not a source; use one of {', '.join(SOURCES)}")
        return value

    @field_validator("metadata")
    @classmethod
    def _json_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        for text in _strings_in(value):
            _printable(text, controls=False)
        # Metadata must survive YAML <-> JSONL unchanged, or the hash would drift.
        if value and json.loads(json.dumps(value, default=repr)) != value:
            raise ValueError("must hold only JSON values (string keys, no dates or bytes)")
        return value


def _relevance_list(key: str, value: Any) -> list[Any]:
    if value is None:
        return []
    entries = [value] if isinstance(value, str | int | Mapping) else value
    if not isinstance(entries, list | tuple):
        raise ValueError(f'"{key}" must be a list, got {type(value).__name__}')
    anchor = _RELEVANCE_ALIASES.get(key) or "doc"
    # A bare id is a doc (or, under relevant_chunks, a chunk) with the default grade.
    return [
        {anchor: e} if isinstance(e, str | int) and not isinstance(e, bool) else e for e in entries
    ]


_PLAIN_ITEM_KEYS = frozenset({"id", "question", "relevant"})
_PLAIN_RELEVANCE_KEYS = frozenset({"doc", "quote", "grade"})
_NEW = object.__new__
# The set fields of plain instances, one set per spelling of the keys, shared: the models
# are frozen and pydantic copies the set with a copied model, and 100,000 items' own sets
# were 200,000 more objects for the collector to walk (issue 29.2).
_GIVEN: dict[tuple[str, ...], set[str]] = {}


def _given(keys: tuple[str, ...]) -> set[str]:
    """The shared set of ``keys``."""
    cached = _GIVEN.get(keys)
    if cached is None:
        cached = set(keys)
        if len(_GIVEN) < 64:  # plain records spell their keys a few ways
            _GIVEN[keys] = cached
    return cached


def _slot_setter(name: str) -> Any:
    """The setter of BaseModel's instance slot ``name``: its descriptor's (a third faster
    than ``setattr``), or ``object.__setattr__`` on a pydantic without the slot (where
    ``_plain_fits`` turns the short path off anyway)."""
    setter = getattr(BaseModel.__dict__.get(name), "__set__", None)
    if setter is not None:
        return setter
    return lambda made, value: object.__setattr__(made, name, value)


_SET_DICT, _SET_GIVEN, _SET_EXTRA, _SET_PRIVATE = map(
    _slot_setter,
    ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"),
)


def _built(model: type[BaseModel], values: dict[str, Any], given: set[str]) -> Any:
    """An instance of ``model`` holding ``values`` (every field, already valid), made the
    way pydantic's own ``model_construct`` makes one, minus its per-field Python loop."""
    made = _NEW(model)
    _SET_DICT(made, values)
    _SET_GIVEN(made, given)
    _SET_EXTRA(made, None)
    _SET_PRIVATE(made, None)
    return made


def _clean(value: Any, *, controls: bool = True) -> bool:
    """``value`` is a non-blank ``str`` the validators keep as it is."""
    if type(value) is not str:
        return False
    # A printable string has no problem; a quote may also hold controls (as _not_blank).
    return (value.isprintable() or text_problem(value, controls=controls) is None) and bool(
        value.strip()
    )


def _plain_relevance(entry: Any, shared: dict[str, Relevance] | None) -> Relevance | None:
    # A bare document ({"doc"} set, grade 1) is made once per gold set and shared: the models
    # are frozen, and 100,000 questions naming 5,000 documents made 95,000 copies (issue 29.2).
    doc: Any = entry if type(entry) is str else entry.get("doc") if type(entry) is dict else None
    bare = shared is not None and type(doc) is str and (doc is entry or len(entry) == 1)
    made: Relevance | None = shared.get(doc) if bare else None  # type: ignore[union-attr]
    if made is not None:
        return made
    if type(entry) is str:
        entry = {"doc": entry}
    elif type(entry) is not dict or not entry.keys() <= _PLAIN_RELEVANCE_KEYS:
        return None
    doc, quote, grade = entry.get("doc"), entry.get("quote"), entry.get("grade", 1)
    if not _clean(doc) or (quote is not None and not _clean(quote, controls=False)):
        return None
    if type(grade) is not int or not 0 <= grade <= MAX_GRADE:
        return None
    values = {"doc": doc, "quote": quote, "chunk": None, "grade": grade}
    made = _built(Relevance, values, _given(tuple(entry)))
    if bare:
        shared[doc] = made  # type: ignore[index]
    return made


def plain_item(record: Any, shared: dict[str, Relevance] | None = None) -> GoldItem | None:
    """The common record, ``{"id", "question", "relevant": [doc, {"doc", "quote", "grade"}]}``
    with plain, clean strings, as :class:`GoldItem` validation makes it, without pydantic's
    per-item work (issue 29.2); ``None`` for anything else, which ``GoldItem.model_validate``
    checks and explains (and for every record, should pydantic keep its instances otherwise).
    ``shared``: the judgments of bare documents made so far, which items share (a gold set
    passes one dict for all its records; the models are frozen).

    >>> plain_item({"id": "q1", "question": "Why?", "relevant": ["a.md"]}) == GoldItem(
    ...     id="q1", question="Why?", relevant=[Relevance(doc="a.md")])
    True
    >>> plain_item({"id": 7, "question": "Why?"}) is None  # an int id: the validated path
    True
    """
    if not _PLAIN or type(record) is not dict or not record.keys() <= _PLAIN_ITEM_KEYS:
        return None
    ident, question = record.get("id"), record.get("question")
    if not _clean(ident) or not _clean(question):
        return None
    entries = record.get("relevant", ())
    if type(entries) is not list and type(entries) is not tuple:
        return None
    relevant = tuple([_plain_relevance(entry, shared) for entry in entries])
    if None in relevant:
        return None
    keys = tuple(record) if relevant else tuple(k for k in record if k != "relevant")
    values: dict[str, Any] = {
        "id": ident,
        "question": question,
        "relevant": relevant,
        "answer_contains": (),
        "reference_answer": None,
        "tags": (),
        "source": None,
        "status": None,
        "parent": None,
        "metadata": {},
    }
    return _built(GoldItem, values, _GIVEN.get(keys) or _given(keys))  # type: ignore[no-any-return]


_SLOTS = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")


def _plain_fits() -> bool:
    """Whether this pydantic keeps a model instance the way :func:`plain_item` builds one: the
    same instance slots, and each model's fields in the order, and with the defaults, that it
    fills. Checked at import without building pydantic's validators (issue 29.2); that the
    values equal validation's is :func:`_plain_is_validated`'s check, which
    ``tests/gold/test_plain_records.py`` runs with 3,904 records on the installed pydantic."""
    if BaseModel.__slots__ != _SLOTS:
        return False
    made = plain_item({"id": "q", "question": "?", "relevant": ["a", {"doc": "b", "grade": 2}]})
    if made is None:
        return False
    for instance in (made, *made.relevant):
        fields = type(instance).model_fields
        if list(instance.__dict__) != list(fields):
            return False
        for name, field in fields.items():
            unset = name not in instance.model_fields_set
            if unset and field.get_default(call_default_factory=True) != instance.__dict__[name]:
                return False
    return True


def _plain_is_validated() -> bool:
    """Whether :func:`plain_item` makes what validation makes on this pydantic: the same
    instance slots, fields, values and set fields (this builds the validators)."""
    if BaseModel.__slots__ != _SLOTS:
        return False
    record = {"id": "q", "question": "?", "relevant": ["a", {"doc": "b", "quote": "c", "grade": 2}]}
    made, validated = plain_item(record), GoldItem.model_validate(record)
    if made is None:
        return False
    pairs = [(made, validated), *zip(made.relevant, validated.relevant, strict=True)]
    return all(
        type(a) is type(b)
        and a.__dict__ == b.__dict__
        and list(a.__dict__) == list(b.__dict__)
        and a.model_fields_set == b.model_fields_set
        and a.__pydantic_extra__ == b.__pydantic_extra__
        and a.__pydantic_private__ == b.__pydantic_private__
        for a, b in pairs
    )


_PLAIN = True
_PLAIN = _plain_fits()


_PHRASES = {
    "string_type": "must be a string",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping such as {doc: faq.md, grade: 1}",
    "model_attributes_type": "must be a mapping such as {doc: faq.md, grade: 1}",
}


def explain(error: ValidationError) -> str:
    """Turn pydantic's report into one sentence naming the field."""
    errors = error.errors()
    first = errors[0]
    loc = list(first["loc"])
    kind = first["type"]
    if kind == "extra_forbidden":
        unknown = loc.pop()
        model = Relevance if loc and isinstance(loc[-1], int) else GoldItem
        allowed = ", ".join(model.model_fields)
        message = f'unknown field "{unknown}" (allowed: {allowed})'
    elif kind == "missing":
        message = f'missing "{loc.pop()}"'
    elif kind == "value_error":
        message = str(first.get("ctx", {}).get("error", first["msg"]))
    elif kind in _PHRASES:
        message = f"{_PHRASES[kind]}, got {type(first['input']).__name__}"
    else:
        message = first["msg"]
    field = "".join(
        " (key)" if p == "[key]" else f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc
    ).lstrip(".")
    more = (
        f" (and {len(errors) - 1} more problem{'s' * (len(errors) > 2)})" if len(errors) > 1 else ""
    )
    return f"{field}: {message}{more}" if field else message + more


def to_record(item: GoldItem) -> dict[str, Any]:
    fields = item.__dict__  # the values, without an attribute lookup each (issue 29.2)
    record: dict[str, Any] = {"id": fields["id"], "question": fields["question"]}
    if fields["relevant"]:
        record["relevant"] = list(map(_relevance_record, fields["relevant"]))
    if not (fields["answer_contains"] or fields["tags"] or fields["metadata"]) and (
        fields["reference_answer"]
        is fields["source"]
        is fields["status"]
        is fields["parent"]
        is None
    ):
        return record  # the common item: no optional field set (issue 29.2)
    if item.answer_contains:
        record["answer_contains"] = list(item.answer_contains)
    if item.reference_answer is not None:
        record["reference_answer"] = item.reference_answer
    if item.tags:
        record["tags"] = list(item.tags)
    if item.source is not None:
        record["source"] = item.source
    if item.status is not None:
        record["status"] = item.status
    if item.parent is not None:
        record["parent"] = item.parent
    if item.metadata:
        record["metadata"] = item.metadata
    return record


def _relevance_record(rel: Relevance) -> dict[str, Any]:
    """One judgment as a record: ``doc``, ``quote``, ``chunk`` when set, then ``grade``."""
    fields = rel.__dict__
    if fields["quote"] is None and fields["chunk"] is None and fields["doc"] is not None:
        return {"doc": fields["doc"], "grade": fields["grade"]}  # the common case (issue 29.2)
    out: dict[str, Any] = {}
    for key, value in (("doc", rel.doc), ("quote", rel.quote), ("chunk", rel.chunk)):
        if value is not None:
            out[key] = value
    out["grade"] = rel.grade
    return out
