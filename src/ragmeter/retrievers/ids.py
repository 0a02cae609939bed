"""Document identity: where a hit's document id lives, and a check that ids match anything.

Two jobs, both about never scoring a silent zero:

- :class:`DocIdentity` reads a hit's document id from a field path (``--doc-field
  metadata.source``) and turns absolute paths under the corpus (or ``--doc-root``)
  into corpus-relative ids, saying once that it did so.
- :class:`IdCheck` compares the retrieved document ids with the corpus (when known)
  and the gold set, after the first questions and at the end of a run: none match →
  :class:`~ragmeter.errors.ConfigError` (exit 2) showing both kinds of ids and the
  likely fix; fewer than half match → a warning stored on the run. Without a corpus
  only the gold ids are known, and a weak retriever may rightly find none of them, so
  the run stops only when no retrieved id could be a gold-style id (content hashes,
  UUIDs, absolute paths, or ids whose suffix, such as ``.md``, no gold id has).

>>> identity = DocIdentity(field="metadata.source", roots=("/srv/docs",))
>>> identity.doc_of({"id": "x", "metadata": {"source": "/srv/docs/guide/install.md"}})
'guide/install.md'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from ragmeter.errors import ConfigError, RetrieverError

__all__ = [
    "EARLY_CHECK_QUESTIONS",
    "MIN_MATCH_SHARE",
    "DocIdentity",
    "IdCheck",
    "Notes",
    "looks_opaque",
    "resolve_field",
]

#: The id check first runs once this many questions have returned hits.
EARLY_CHECK_QUESTIONS = 5
#: Below this share of retrieved document ids found in the corpus, the run gets a warning.
MIN_MATCH_SHARE = 0.5
# How many example ids an id-check message shows of each kind.
_EXAMPLES = 3
# Field prefixes that name a framework's metadata; hits keep it under "metadata".
_METADATA_ALIASES = ("meta", "_source", "attributes")

_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.I)
_HEX_HASH = re.compile(r"^[0-9a-f]{32,128}$", re.I)


def looks_opaque(doc_id: str) -> bool:
    """True for ids that name content, not a document: UUIDs and hex content hashes.

    >>> looks_opaque("0d21e5c964cd5c5cd1e695c83529fc9fcbcbc56225105fc96be616f27a59e99a")
    True
    >>> looks_opaque("8f2c1a4e-6b7d-4e2a-9c3f-1a2b3c4d5e6f"), looks_opaque("faq.md")
    (True, False)
    """
    return bool(_UUID.match(doc_id) or _HEX_HASH.match(doc_id))


def _is_absolute(doc_id: str) -> bool:
    return PurePosixPath(doc_id).is_absolute() or PureWindowsPath(doc_id).is_absolute()


class Notes:
    """Things an adapter says once per run ("results cut to k"), in the order first said.

    A plain list under the GIL: a note said twice at once is deduplicated on read.

    >>> notes = Notes()
    >>> notes.say("cut to k"); notes.say("cut to k"); notes.say("e.g. b", key="x")
    >>> notes.say("e.g. c", key="x"); notes.items
    ['cut to k', 'e.g. b']
    """

    def __init__(self) -> None:
        self._said: dict[str, str] = {}

    def say(self, message: str, *, key: str | None = None) -> None:
        """Record ``message`` unless it (or another with the same ``key``) was said already."""
        self._said.setdefault(key or message, message)

    @property
    def items(self) -> list[str]:
        """What was said, each once."""
        return list(self._said.values())


def resolve_field(item: object, path: str) -> object:
    """The value at a dotted ``path`` in a dict or object (``None`` when absent).

    ``meta.``, ``_source.`` and ``attributes.`` also find what hits keep under ``metadata``
    (Haystack's ``meta``, an Elasticsearch ``_source``, OpenAI ``attributes``).

    >>> resolve_field({"metadata": {"source": "/a.md"}}, "metadata.source")
    '/a.md'
    >>> resolve_field({"metadata": {"file_path": "a.md"}}, "meta.file_path")
    'a.md'
    >>> resolve_field({"id": "x"}, "metadata.source") is None
    True
    """
    parts = path.split(".")
    value = _step(item, parts[0])
    if value is None and parts[0] in _METADATA_ALIASES:
        value = _step(item, "metadata")
    for part in parts[1:]:
        if value is None:
            return None
        value = _step(value, part)
    return value


def _step(value: object, name: str) -> object:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


@dataclass(frozen=True)
class DocIdentity:
    """Where a hit's document id lives (``field``) and the folders paths are relative to.

    ``field`` is a dotted path (``metadata.source``, ``meta.file_path``, ``_source.path``);
    without one, adapters use their framework's default. An absolute path under one of
    ``roots`` becomes the path relative to it (POSIX separators); :attr:`notes` says so once.

    >>> DocIdentity(roots=("/data/docs",)).relative("/data/docs/a/b.md")
    'a/b.md'
    >>> DocIdentity(roots=("/data/docs",)).relative("/elsewhere/b.md")
    '/elsewhere/b.md'
    """

    field: str | None = None
    roots: tuple[str, ...] = ()
    notes: Notes = dataclass_field(default_factory=Notes, compare=False, repr=False)

    def with_roots(self, *roots: str | None) -> DocIdentity:
        """A copy that also relativises paths under ``roots`` (``None`` entries skipped).

        >>> DocIdentity().with_roots("/a", None).roots
        ('/a',)
        """
        extra = tuple(str(root) for root in roots if root)
        return DocIdentity(self.field, tuple(dict.fromkeys(self.roots + extra)), self.notes)

    @property
    def active(self) -> bool:
        """True when it would change anything."""
        return bool(self.field or self.roots)

    def doc_of(self, item: object, *, where: str = "hit", default: str | None = None) -> str | None:
        """The document id of raw ``item``: its ``field`` if set, else ``default``; relativised.

        A ``field`` the item lacks raises :class:`~ragmeter.errors.RetrieverError` naming it.
        """
        value: object = default
        if self.field:
            value = resolve_field(item, self.field)
            if value is None:
                raise RetrieverError(
                    f"{where}: no document id at --doc-field {self.field}{_fields_hint(item)}"
                )
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str) or not value:
                raise RetrieverError(
                    f"{where}: --doc-field {self.field} must hold a non-empty string, "
                    f"got {type(value).__name__}"
                )
        return self.relative(value) if isinstance(value, str) else None

    def relative(self, doc_id: str) -> str:
        """``doc_id`` relative to the first root it lies under (``file://`` URLs too)."""
        if not self.roots:
            return doc_id
        path = doc_id[len("file://") :] if doc_id.startswith("file://") else doc_id
        if not _is_absolute(path):
            return doc_id
        for root in self.roots:
            relative = _under(path, root)
            if relative is not None:
                self.notes.say(
                    f"absolute document paths under {root} were read as corpus-relative ids "
                    f"(e.g. {doc_id} -> {relative})",
                    key=f"relative:{root}",
                )
                return relative
        return doc_id


def _under(path: str, root: str) -> str | None:
    flavour = PureWindowsPath if PureWindowsPath(path).drive else PurePosixPath
    try:
        relative = flavour(path).relative_to(flavour(root))
    except ValueError:
        return None
    text = relative.as_posix()
    return text if text and text != "." else None


def _fields_hint(item: object) -> str:
    if isinstance(item, Mapping):
        names = list(item)
    else:
        names = [name for name in vars(item)] if hasattr(item, "__dict__") else []
    metadata = _step(item, "metadata")
    if isinstance(metadata, Mapping):
        names += [f"metadata.{name}" for name in metadata]
    shown = ", ".join(str(name) for name in names[:8])
    return f" (it has: {shown})" if shown else ""


class IdCheck:
    """Compare retrieved document ids with the corpus and gold set; stop or warn.

    ``corpus`` is the set of corpus document ids when known. :meth:`observe` takes each
    question's hits (it never raises, so the executor's callback stays safe);
    :meth:`guard` wraps the per-question work so that, once the check has failed, the
    remaining questions stop at once; :meth:`finish` raises the failure or returns the
    warnings for the run (its own plus what the retriever said once, see :class:`Notes`).

    >>> from ragmeter.documents import Hit
    >>> check = IdCheck(gold_docs={"faq.md"}, corpus={"faq.md", "guide.md"})
    >>> check.observe([Hit(id="faq.md", doc="faq.md"), Hit(id="guide.md", doc="guide.md")])
    >>> check.finish()
    []
    >>> check.observe([Hit(id="7f3e", doc="7f3e"), Hit(id="9a1b", doc="9a1b")])
    >>> check.observe([Hit(id="x", doc="x")])
    >>> check.finish()[0][:64]
    'only 2 of the 5 distinct document ids retrieved (40%) are in the'
    """

    def __init__(
        self,
        *,
        gold_docs: Collection[str],
        gold_chunks: Collection[str] = (),
        corpus: Collection[str] | None = None,
        notes: Notes | None = None,
    ) -> None:
        self.gold_docs = frozenset(gold_docs)
        self.gold_chunks = frozenset(gold_chunks)
        self.corpus = frozenset(corpus) if corpus is not None else None
        self._known = self.gold_docs | (self.corpus or frozenset())
        self._notes = notes
        self._retrieved: dict[str, None] = {}  # distinct doc ids, in order seen
        self._matched = 0
        self._gold_matched = 0
        self._questions = 0
        self._failure: str | None = None
        # An id shape the gold set itself uses is never taken as a sign of a wrong field.
        self._gold_opaque = any(looks_opaque(doc) for doc in self.gold_docs)
        self._gold_absolute = any(_is_absolute(doc) for doc in self.gold_docs)
        self._gold_suffixes = {_suffix(doc) for doc in self.gold_docs}

    @classmethod
    def for_run(cls, gold: Any, documents: Collection[str] | None, retriever: Any) -> IdCheck:
        """The check for one run of ``retriever`` over ``gold`` (``documents``: the corpus)."""
        docs = {r.doc_id for item in gold for r in item.relevant}
        chunks = {r.chunk for item in gold for r in item.relevant if r.chunk}
        notes = getattr(retriever, "notes", None)
        corpus = set(documents) if documents is not None else None
        return cls(
            gold_docs=docs,
            gold_chunks=chunks,
            corpus=corpus,
            notes=notes if isinstance(notes, Notes) else None,
        )

    def observe(self, hits: Sequence[Any]) -> None:
        """Count one question's hits; after the first questions, look for a total mismatch."""
        if not hits or self._failure is not None:
            return
        self._questions += 1
        for hit in hits:
            if hit.doc in self._retrieved:
                continue
            self._retrieved[hit.doc] = None
            if hit.doc in self._known or hit.id in self.gold_chunks:
                self._matched += 1
            if hit.doc in self.gold_docs or hit.id in self.gold_chunks:
                self._gold_matched += 1
        if self._questions == EARLY_CHECK_QUESTIONS:
            self._failure = self._mismatch(early=True)

    def guard(self, work: Callable[[Any], Any], is_async: bool) -> Callable[[Any], Any]:
        """``work`` that refuses to run once the check has failed (the run stops fast)."""
        if is_async:

            async def guarded_async(item: Any) -> Any:
                self._refuse()
                return await work(item)

            return guarded_async

        def guarded(item: Any) -> Any:
            self._refuse()
            return work(item)

        return guarded

    def _refuse(self) -> None:
        if self._failure is not None:
            raise RetrieverError("not retrieved: the document id check failed")

    def finish(self, on_fail: Callable[[], object] | None = None) -> list[str]:
        """Raise :class:`ConfigError` when no id matched; else the run's warnings."""
        failure = self._failure or self._mismatch(early=False)
        if failure is not None:
            if on_fail is not None:
                on_fail()
            raise ConfigError(failure)
        warnings = list(self._notes.items) if self._notes is not None else []
        share = self._matched / len(self._retrieved) if self._retrieved else 1.0
        if self.corpus is not None and share < MIN_MATCH_SHARE:
            warnings.append(
                f"only {self._matched} of the {len(self._retrieved)} distinct document ids "
                f"retrieved ({share:.0%}) are in the corpus or the gold set, so these metrics "
                f"count the rest as misses; e.g. {_show(self._strangers())}. {self._hint()}"
            )
        return warnings

    def _mismatch(self, *, early: bool) -> str | None:
        if not self._retrieved:
            return None
        if self.corpus is not None:
            if self._matched:
                return None
            against = "the corpus or the gold set"
        else:
            # Without a corpus only gold ids are known, and a weak retriever may miss them
            # all: stop only when no retrieved id even has the gold ids' shape.
            if self._gold_matched or not all(self._foreign(doc) for doc in self._retrieved):
                return None
            against = "the gold set"
        return (
            f"none of the {len(self._retrieved)} document ids retrieved "
            f"{'over the first' if early else 'in'} {self._questions} questions match "
            f"{against}, so every metric would be 0. Retrieved: {_show(list(self._retrieved))}; "
            f"the gold set names: {_show(sorted(self.gold_docs))}. {self._hint()}"
        )

    def _foreign(self, doc_id: str) -> bool:
        """True when ``doc_id`` cannot be a gold-style id: a hash, an absolute path or a
        suffix (``.md``, none…) no gold id has."""
        if looks_opaque(doc_id) and not self._gold_opaque:
            return True
        if _is_absolute(doc_id) and not self._gold_absolute:
            return True
        return _suffix(doc_id) not in self._gold_suffixes

    def _strangers(self) -> list[str]:
        return [doc for doc in self._retrieved if doc not in self._known]

    def _hint(self) -> str:
        docs = self._strangers() or list(self._retrieved)
        named = self._basename_hint(docs)
        if named:
            return named
        if docs and all(looks_opaque(doc) for doc in docs[:_EXAMPLES]):
            return (
                "These look like content hashes or UUIDs, not document names: pass "
                "--doc-field PATH naming where the document id lives "
                "(e.g. metadata.source, meta.file_path)."
            )
        if docs and all(_is_absolute(doc) for doc in docs[:_EXAMPLES]):
            return (
                "These are absolute paths: pass --doc-root DIR (the folder the gold ids are "
                "relative to), or --corpus DIR."
            )
        return (
            "Pass --doc-field PATH if the document id lives in another field "
            "(e.g. metadata.source), or --doc-root DIR if ids are paths under a folder."
        )

    def _basename_hint(self, docs: Sequence[str]) -> str | None:
        """A hint when the retrieved ids are file names whose folders were dropped.

        Haystack's converters keep only the file name in ``meta["file_path"]`` unless
        ``store_full_path=True``; in a corpus with folders, ``sync.md`` may then be the name of
        several documents, and no choice between them would be honest.
        """
        by_name: dict[str, list[str]] = {}
        for known in self._known:
            if "/" in known:
                by_name.setdefault(PurePosixPath(known).name, []).append(known)
        bare = [doc for doc in docs if "/" not in doc and "\\" not in doc and doc in by_name]
        if not bare or len(bare) * 2 < len(docs):
            return None
        shared = [doc for doc in bare if len(by_name[doc]) > 1]
        example = shared[0] if shared else bare[0]
        names = ", ".join(repr(p) for p in sorted(by_name[example])[:_EXAMPLES])
        clash = (
            f"; {len(shared)} of them name several documents (e.g. {example!r}: {names}), so "
            "they cannot be told apart"
            if shared
            else f" (e.g. {example!r} is {names})"
        )
        return (
            f"{len(bare)} of the retrieved ids are file names without their folders{clash}. "
            "Haystack's converters keep only the file name in meta.file_path unless "
            "store_full_path=True: index with full paths (then --doc-root DIR), or give the "
            "gold set and corpus the same ids."
        )


def _suffix(doc_id: str) -> str:
    return PurePosixPath(doc_id).suffix.lower()


def _show(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(doc) for doc in ids[:_EXAMPLES])
    return shown or "(none)"
