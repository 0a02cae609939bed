"""Document identity: where a hit's document id lives, and a check that ids name gold documents.

Two jobs, both about never scoring a silent zero:

- :class:`DocIdentity` reads a hit's document id from a field path (``--doc-field
  metadata.source``) and drops the folder the ids are relative to (``--doc-root``): an
  absolute path under it, or a relative one starting with it (``docs/guide/a.md`` with
  ``--doc-root docs``), saying once (a note, not a warning) that it did so.
- :class:`IdCheck` reads every retrieved id through the one id resolver
  (:mod:`ragmeter.retrievers.resolver`: spelling, case, folder prefix, file name) and
  counts the gold documents the hits name: none after the first questions with hits (in a
  shorter run: none, and no id shaped like a gold id) →
  :class:`~ragmeter.errors.ConfigError` (exit 2) showing both kinds of ids and the fix; an
  id the resolver cannot tell apart stops the run the same way; fewer than half of the
  retrieved ids in the corpus → a warning stored on the run.

>>> identity = DocIdentity(field="metadata.source", roots=("/srv/docs",))
>>> identity.doc_of({"id": "x", "metadata": {"source": "/srv/docs/guide/install.md"}})
'guide/install.md'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from ragmeter.documents import Hit
from ragmeter.errors import ConfigError, RetrieverError
from ragmeter.retrievers.resolver import IdResolver, normalise_id

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
        """``doc_id`` relative to the first root it lies under (``file://`` URLs too).

        >>> DocIdentity(roots=("docs",)).relative("./docs/guide/a.md")
        'guide/a.md'
        """
        if not self.roots:
            return doc_id
        path = normalise_id(doc_id)
        for root in self.roots:
            if _is_absolute(path) != _is_absolute(root):
                continue
            relative = _under(path, normalise_id(root))
            if relative is not None:
                kind = "absolute document paths" if _is_absolute(path) else "document paths"
                self.notes.say(
                    f"{kind} under {root} were read as corpus-relative ids "
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
    """Resolve retrieved document ids (:class:`IdResolver`) and check they name gold documents.

    ``corpus`` is the set of corpus document ids when known. :meth:`resolve` reads each
    question's hits through the one id resolver and :meth:`observe` counts the **gold**
    documents they name; neither raises, so the executor's callback stays safe. After the
    first questions with hits, and at the end (a shorter run: when no id is even shaped like
    a gold id), a run whose retrieved ids name no gold document stops (:class:`~ragmeter.errors.ConfigError`, exit 2) showing both kinds of ids
    and the fix — unless, with the corpus known, every retrieved id is a corpus document
    (the ids are right; only the end of the run decides then). An id the resolver cannot
    tell (two ``index.md``) stops the run too. :meth:`guard` wraps the per-question work so
    that, once the check has failed, the remaining questions stop at once; :meth:`finish`
    raises the failure or returns the run's warnings; :attr:`notes` what was said once.

    >>> from ragmeter.documents import Hit
    >>> check = IdCheck(gold_docs={"faq.md"}, corpus={"faq.md", "guide.md"})
    >>> check.observe(check.resolve([Hit(id="./faq.md", doc="./faq.md"), Hit("guide.md", "guide.md")]))
    >>> check.finish(), check.notes
    ([], ["document ids were matched to the gold set and corpus: 1 by spelling (./, \\\\, %XX, \
Unicode NFC) (e.g. './faq.md' -> 'faq.md')"])
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
        self.resolver = IdResolver(gold=self.gold_docs, corpus=self.corpus)
        self._known = self.gold_docs | (self.corpus or frozenset())
        self._notes = notes
        self._retrieved: dict[str, None] = {}  # distinct doc ids, in order seen
        self._strange: dict[str, None] = {}  # those that resolve to no known id
        self._gold_found: set[str] = set()  # only whether it is empty is read
        self._as_is: set[str] = set()  # retrieved ids that resolve to themselves or nothing
        self._questions = 0
        self._failure: str | None = None
        self._field_fix: str | None = None  # the --doc-field that would work, once seen

    @classmethod
    def for_run(cls, gold: Any, documents: Collection[str] | None, retriever: Any) -> IdCheck:
        """The check for one run of ``retriever`` over ``gold`` (``documents``: the corpus)."""
        docs: set[str] = set()
        chunks: set[str] = set()
        for item in gold:  # one pass over the gold set for both (issue 29.2)
            for r in item.relevant:
                docs.add(r.doc_id)
                if r.chunk:
                    chunks.add(r.chunk)
        notes = getattr(retriever, "notes", None)
        corpus = set(documents) if documents is not None else None
        return cls(
            gold_docs=docs,
            gold_chunks=chunks,
            corpus=corpus,
            notes=notes if isinstance(notes, Notes) else None,
        )

    def resolve(self, hits: Sequence[Hit]) -> list[Hit]:
        """``hits`` with their document ids resolved to the gold set's (or corpus's) ids."""
        as_is = self._as_is
        for hit in hits:
            if hit.doc not in as_is:
                break
        else:  # every id was resolved before, to itself or to nothing (issue 29.2)
            return list(hits)
        out: list[Hit] = []
        for hit in hits:
            found = self.resolver.resolve(hit.doc)
            if found.problem is not None:
                self._failure = self._failure or found.problem
            elif found.target is None or found.target == hit.doc:
                as_is.add(hit.doc)  # resolving it again changes nothing: memoised
            if found.target is None or found.target == hit.doc:
                out.append(hit)
                continue
            # A hit with no chunk id of its own is named by its document, resolved too.
            ident = found.target if hit.id == hit.doc else hit.id
            out.append(replace(hit, id=ident, doc=found.target))
        return out

    def observe(self, hits: Sequence[Any]) -> None:
        """Count one question's (resolved) hits; after the first questions, check them."""
        if not hits or self._failure is not None:
            return
        self._questions += 1
        gold_found, retrieved = self._gold_found, self._retrieved
        for hit in hits:
            if not gold_found and (hit.doc in self.gold_docs or hit.id in self.gold_chunks):
                gold_found.add(hit.doc)
            if hit.doc in retrieved:
                continue
            self._retrieved[hit.doc] = None
            if hit.doc not in self._known and hit.id not in self.gold_chunks:
                self._strange[hit.doc] = None
                self._look_for_field(hit)
        self._checked_early()

    def resolved_as_is(self, docs: Collection[str]) -> bool:
        """True when :meth:`resolve` gives back hits of these document ids unchanged: every
        one was resolved before, to itself or to nothing (what the plain path of
        ``evaluate()`` asks before it skips :meth:`resolve`, issue 29.2)."""
        return self._as_is.issuperset(docs)

    def observe_plain(self, hits: Sequence[Any], docs: AbstractSet[str]) -> None:
        """:meth:`observe` for non-empty ``hits`` whose distinct document ids are ``docs``:
        once a gold document was found, hits of documents seen before change nothing but
        the count of questions (issue 29.2)."""
        if self._failure is not None:
            return
        if not self._gold_found or not self._retrieved.keys() >= docs:
            self.observe(hits)
            return
        self._questions += 1
        self._checked_early()

    def _checked_early(self) -> None:
        """After the first questions, the ids seen so far are checked (issue 14.3)."""
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
            if self._failure is not None:  # _refuse's test, a call a question fewer (issue 29.2)
                self._refuse()
            return work(item)

        return guarded

    def _refuse(self) -> None:
        if self._failure is not None:
            raise RetrieverError("not retrieved: the document id check failed")

    @property
    def notes(self) -> list[str]:
        """What the run says once, for information (ids mapped, paths made relative)."""
        said = list(self._notes.items) if self._notes is not None else []
        mapped = self.resolver.note()
        return [*said, mapped] if mapped else said

    def finish(self, on_fail: Callable[[], object] | None = None) -> list[str]:
        """Raise :class:`ConfigError` when the ids name no gold document; else the warnings."""
        failure = self._failure or self._mismatch(early=False)
        if failure is not None:
            if on_fail is not None:
                on_fail()
            raise ConfigError(failure)
        warnings: list[str] = []
        matched = len(self._retrieved) - len(self._strange)
        share = matched / len(self._retrieved) if self._retrieved else 1.0
        if self.corpus is not None and share < MIN_MATCH_SHARE:
            warnings.append(
                f"only {matched} of the {len(self._retrieved)} distinct document ids "
                f"retrieved ({share:.0%}) are in the corpus or the gold set, so these metrics "
                f"count the rest as misses; e.g. {_show(list(self._strange))}. {self._hint()}"
            )
        if self._retrieved and not self._gold_found and self.gold_docs:
            warnings.append(
                f"none of the {len(self._retrieved)} documents retrieved is one the gold set "
                "names, although every one is in the corpus: every ranking metric is 0"
            )
        return warnings

    def _mismatch(self, *, early: bool) -> str | None:
        if not self._retrieved or self._gold_found or not (self.gold_docs or self.gold_chunks):
            return None
        if self.corpus is not None and not self._strange:
            return None  # every id is a corpus document: real misses, said by finish()
        if self._questions < EARLY_CHECK_QUESTIONS and not all(map(self._foreign, self._strange)):
            # Too few questions to tell a weak retriever from misnamed ids: stop only when
            # no retrieved id could even be a gold-style id.
            return None
        return (
            f"none of the {len(self._retrieved)} document ids retrieved "
            f"{'over the first' if early else 'in'} {self._questions} questions is a document "
            f"the gold set names, so every metric would be 0. Retrieved: "
            f"{_show(list(self._strange or self._retrieved))}; the gold set names: "
            f"{_show(sorted(self.gold_docs))}. {self._hint()}"
        )

    def _foreign(self, doc_id: str) -> bool:
        """True when ``doc_id`` cannot be a gold-style id: a hash or UUID, an absolute path,
        or a suffix (``.md``, none…) that no gold id has — unless the gold ids look so too."""
        gold = self.gold_docs
        if looks_opaque(doc_id):
            return not any(map(looks_opaque, gold))
        if _is_absolute(doc_id):
            return not any(map(_is_absolute, gold))
        return PurePosixPath(doc_id).suffix.lower() not in {
            PurePosixPath(g).suffix.lower() for g in gold
        }

    def _look_for_field(self, hit: Any) -> None:
        """Remember a metadata field of an unresolved hit that names a gold document: the
        --doc-field that would work."""
        if self._field_fix is not None:
            return
        for key, value in (getattr(hit, "metadata", None) or {}).items():
            if isinstance(value, str) and value:
                how, targets = self.resolver.peek(value)
                if len(targets) == 1 and targets[0] in self.gold_docs:
                    fix = f"--doc-field metadata.{key}"
                    if how == "folder" and self.corpus is None:
                        prefix = normalise_id(value)[: -len(normalise_id(targets[0]))]
                        fix += f" --doc-root {prefix.rstrip('/') or '/'}"
                    self._field_fix = (
                        f"The hits' metadata.{key} names gold documents (e.g. {value!r}): "
                        f"pass {fix}."
                    )
                    return

    def _hint(self) -> str:
        if self._field_fix is not None:
            return self._field_fix
        docs = list(self._strange) or list(self._retrieved)
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
        if self.corpus is None:
            return (
                "If these are real documents the retriever found, pass --corpus DIR so they can "
                "be told from ids spelled another way; else pass --doc-field PATH if the "
                "document id lives in another field (e.g. metadata.source), or --doc-root DIR "
                "if ids are paths under a folder."
            )
        return (
            "Pass --doc-field PATH if the document id lives in another field "
            "(e.g. metadata.source), or --doc-root DIR if ids are paths under a folder."
        )


def _show(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(doc) for doc in ids[:_EXAMPLES])
    return shown or "(none)"
