"""The one document-id resolver: retrieved ids and gold ids read the same way.

Every retriever kind (functions, frameworks, HTTP services and presets, run files) and the
gold set go through :class:`IdResolver`. Both sides are normalised alike
(:func:`normalise_id`: Unicode NFC, ``file://`` dropped, percent-decoding, ``\\`` → ``/``,
a leading ``./`` dropped), then a retrieved id is resolved to a known id (the gold set's
spelling first, else the corpus's):

1. **exact** — the id, or its normalised spelling, is known;
2. **case** — it differs only by case, and no two known ids differ only by case;
3. **folder** — it ends with a known id after a folder prefix (``docs/concepts/cache.md``,
   an absolute path), the longest known tail winning;
4. **file name** — it is the end of exactly one known id (``cache.md`` for
   ``concepts/cache.md``: the OpenAI preset's ``filename``, Haystack's
   ``store_full_path=False``).

Ambiguity is never guessed: an id that ends several known ids (two ``index.md``), two
retrieved ids read as one document, or a folder/file-name match that only the corpus
could confirm (no corpus known) is a :attr:`Resolution.problem`, which stops the run.

>>> resolver = IdResolver(gold=["concepts/cache.md"], corpus=["concepts/cache.md", "index.md"])
>>> resolver.resolve("docs/concepts/cache.md").target, resolver.resolve("cache.md").how
('concepts/cache.md', 'file name')
>>> resolver.note()
"document ids were matched to the gold set and corpus: 1 by folder prefix (e.g. \
'docs/concepts/cache.md' -> 'concepts/cache.md'), 1 by file name (e.g. 'cache.md' -> \
'concepts/cache.md')"
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Sequence, Set
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal
from urllib.parse import unquote

__all__ = ["GoldSpellings", "IdResolver", "Resolution", "gold_spellings", "normalise_id"]

How = Literal["exact", "gold", "spelling", "case", "folder", "file name", "none"]

# How many candidates an ambiguity message lists.
_SHOWN = 5
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_SLASHES = re.compile(r"(?<!^)/{2,}")
_NEEDS_WORK = re.compile(r"^\./|^file://|%|\\|.//")


def normalise_id(doc_id: str) -> str:
    """``doc_id`` spelled the one way both sides are compared in.

    >>> normalise_id("./guide\\\\install%20notes.md")
    'guide/install notes.md'
    >>> normalise_id("cafe\\u0301.md") == "caf\\u00e9.md", normalise_id("file:///srv/a.md")
    (True, '/srv/a.md')
    """
    if doc_id.isascii() and not _NEEDS_WORK.search(doc_id):
        return doc_id  # the common case, kept fast: corpora of a million ids are read twice
    text = unicodedata.normalize("NFC", doc_id)
    if text.startswith("file://"):
        text = text[len("file://") :]
    if _PERCENT.search(text):
        text = unicodedata.normalize("NFC", unquote(text))
    text = _SLASHES.sub("/", text.replace("\\", "/"))
    while text.startswith("./"):
        text = text[2:]
    return text


def _tails(key: str) -> Iterable[str]:
    """The proper path tails of ``key``, longest first: ``a/b/c.md`` → ``b/c.md``, ``c.md``."""
    start = key.find("/")
    while start != -1:
        tail = key[start + 1 :]
        if tail:
            yield tail
        start = key.find("/", start + 1)


@dataclass(frozen=True, slots=True)
class Resolution:
    """What a retrieved id resolved to: ``target`` (a known id) or a ``problem`` (stop)."""

    target: str | None
    how: How
    problem: str | None = None


class _Index:
    """Known ids by normalised spelling, by case-folded spelling (when unambiguous), by tail."""

    def __init__(self, ids: Iterable[str]) -> None:
        self.exact: dict[str, str] = {}
        self.by_key: dict[str, str] = {}
        for doc in ids:
            self.exact.setdefault(doc, doc)
            self.by_key.setdefault(normalise_id(doc), doc)

    @cached_property
    def by_fold(self) -> dict[str, str]:
        """Case-folded spelling -> spelling; empty when two known ids differ by case alone
        (case is then never ignored)."""
        folds: dict[str, str] = {}
        for key in self.by_key:
            if folds.setdefault(key.casefold(), key) != key:
                return {}
        return folds

    @property
    def fold_ok(self) -> bool:
        return bool(self.by_fold)

    @cached_property
    def by_tail(self) -> dict[str, set[str]]:
        """Each proper path tail of a known id -> the known ids (normalised) ending so."""
        tails: dict[str, set[str]] = {}
        for key in self.by_key:
            for tail in _tails(key):
                tails.setdefault(self._fold(tail), set()).add(key)
        return tails

    def _fold(self, key: str) -> str:
        return key.casefold() if self.fold_ok else key

    def known(self, key: str) -> str | None:
        """The known id spelled ``key`` (normalised), case aside when unambiguous."""
        found = self.by_key.get(key)
        if found is None and self.fold_ok:
            folded = self.by_fold.get(key.casefold())
            found = self.by_key[folded] if folded is not None else None
        return found

    def lookup(self, doc_id: str) -> tuple[How, tuple[str, ...]]:
        if doc_id in self.exact:
            return "exact", (doc_id,)
        key = normalise_id(doc_id)
        if key in self.by_key:
            return "spelling", (self.by_key[key],)
        found = self.known(key)
        if found is not None:
            return "case", (found,)
        for tail in _tails(key):
            found = self.known(tail)
            if found is not None:
                return "folder", (found,)
        keys = self.by_tail.get(self._fold(key), ())
        return ("file name", tuple(sorted(self.by_key[k] for k in keys))) if keys else ("none", ())


class IdResolver:
    """Resolve retrieved document ids to the gold set's ids (or the corpus's).

    ``gold`` are the document ids the gold set names; ``corpus`` the corpus's ids when known
    (without it, folder and file-name matches cannot be confirmed and become problems).
    Gold ids are first resolved against the corpus the same way, so a corpus id
    resolves to the gold id naming the same document.

    >>> IdResolver(gold=["a/index.md"], corpus=["a/index.md", "b/index.md"]).resolve(
    ...     "index.md").problem[:58]
    "the retrieved id 'index.md' could be any of 'a/index.md', "
    """

    def __init__(self, *, gold: Collection[str], corpus: Collection[str] | None = None) -> None:
        self.gold = frozenset(gold)
        self.complete = corpus is not None
        self._alias: dict[str, str] = {}  # corpus id -> the gold id naming that document
        if corpus is not None:
            present = corpus if isinstance(corpus, Set) else frozenset(corpus)
            spelled_apart = sorted(doc for doc in self.gold if doc not in present)
            self._alias = {doc: doc for doc in self.gold if doc in present}
            in_corpus = _Index(corpus) if spelled_apart else None
            for doc in spelled_apart:
                how, found = in_corpus.lookup(doc) if in_corpus else ("none", ())
                if how != "none" and len(found) == 1:
                    self._alias.setdefault(found[0], doc)
        self._index = _Index([*sorted(self.gold), *(corpus or ())])
        self._memo: dict[str, Resolution] = {}
        self._claimed: dict[str, tuple[str, How]] = {}  # target -> first retrieved id read as it
        self._mapped: dict[How, list[str]] = {}  # how -> examples "a -> b" (first), count

    def gold_in_corpus(self) -> dict[str, str]:
        """``{corpus id: gold id}`` for the gold documents found in the corpus."""
        return dict(self._alias)

    def peek(self, doc_id: str) -> tuple[How, tuple[str, ...]]:
        """How ``doc_id`` would match and the known ids it could be, remembering nothing."""
        how, found = self._index.lookup(doc_id)
        return how, tuple(dict.fromkeys(self._alias.get(t, t) for t in found))

    def resolve(self, doc_id: str) -> Resolution:
        """The known id ``doc_id`` names, or why it cannot be told (memoised)."""
        done = self._memo.get(doc_id)
        if done is None:
            done = self._memo[doc_id] = self._resolve(doc_id)
            if done.target is not None and done.how != "exact":
                self._mapped.setdefault(done.how, []).append(f"{doc_id!r} -> {done.target!r}")
        return done

    def _resolve(self, doc_id: str) -> Resolution:
        how, targets = self.peek(doc_id)
        if how == "none":
            return Resolution(None, "none")
        if len(targets) > 1:
            shown = ", ".join(repr(t) for t in targets[:_SHOWN])
            return Resolution(
                None,
                how,
                f"the retrieved id {doc_id!r} could be any of {shown} (a file name without its "
                f"folder): ragmeter does not guess. Index the documents with their paths "
                f"{_WITH_PATHS}, or give the documents distinct ids",
            )
        target = targets[0]
        if how in ("folder", "file name") and not self.complete:
            return Resolution(None, how, self._unconfirmed(doc_id, target, how))
        if how == "exact" and target != doc_id:
            how = "gold"  # a corpus id the gold set spells another way
        other, other_how = self._claimed.setdefault(target, (doc_id, how))
        if other != doc_id and _clash(how, other_how):
            return Resolution(
                None,
                how,
                f"the retrieved ids {other!r} and {doc_id!r} would both be read as "
                f"{target!r}: ragmeter does not guess which is that document. Pass "
                "--doc-root DIR (the folder the gold ids are relative to) or --doc-field",
            )
        return Resolution(target, how)

    @staticmethod
    def _unconfirmed(doc_id: str, target: str, how: How) -> str:
        if how == "folder":
            prefix = normalise_id(doc_id)[: -len(normalise_id(target))].rstrip("/") or "/"
            fix = f"--doc-root {prefix}"
            return (
                f"the retrieved id {doc_id!r} ends with the gold id {target!r}, but without the "
                f"corpus ragmeter cannot tell whether it is that document: pass {fix} (the "
                "folder the gold ids are relative to), or --corpus DIR"
            )
        return (
            f"the retrieved id {doc_id!r} is a file name without its folder; the gold set names "
            f"{target!r}, but without the corpus ragmeter cannot tell whether another document "
            "has that name: pass --corpus DIR (the folder the gold ids are relative to), or "
            f"index the documents with their paths {_WITH_PATHS}"
        )

    def note(self) -> str | None:
        """One line saying what was mapped, and how (``None`` when every id was exact)."""
        if not self._mapped:
            return None
        parts = [
            f"{len(examples)} by {_LABELS[how]} (e.g. {examples[0]})"
            for how, examples in sorted(self._mapped.items(), key=lambda kv: _ORDER.index(kv[0]))
        ]
        where = "the gold set and corpus" if self.complete else "the gold set"
        return f"document ids were matched to {where}: {', '.join(parts)}"


#: How to give hits their paths, said when a file name alone cannot be read.
_WITH_PATHS = (
    "(Haystack: store_full_path=True; OpenAI vector store: a path attribute read with "
    "--doc-field attributes.path)"
)

_ORDER: tuple[How, ...] = ("exact", "gold", "spelling", "case", "folder", "file name", "none")
_LABELS: dict[How, str] = {
    "gold": "the gold set's spelling of a corpus id",
    "spelling": "spelling (./, \\, %XX, Unicode NFC)",
    "case": "case",
    "folder": "folder prefix",
    "file name": "file name",
}


def _clash(how: How, other: How) -> bool:
    """True when two different retrieved ids read as one document may be two documents:
    ``A.md`` beside ``a.md`` (case), or ``v1/x.md`` beside ``v2/x.md`` (two folders)."""
    return "case" in (how, other) or how == other == "folder"


@dataclass(frozen=True)
class GoldSpellings:
    """How a gold set's document ids are read: spellings of one document made one.

    ``merged`` maps each gold id that is read as another (``./a.md``, ``docs/a.md``) to the
    one id all its spellings are scored as; ``apart`` lists pairs of gold ids that may name
    one document (a folder prefix, another case) which no corpus confirms, so they stay two.
    """

    merged: dict[str, str] = field(default_factory=dict)
    apart: list[tuple[str, str]] = field(default_factory=list)


def gold_spellings(gold: Sequence[str], corpus: Collection[str] | None = None) -> GoldSpellings:
    """Read the gold set's own document ids (in gold order) through the one resolver.

    Ids that normalise alike (:func:`normalise_id`: ``./``, ``\\``, ``%XX``, NFC) are one
    document always. With the corpus, ids that resolve to the same corpus document (also by
    case, folder prefix or a unique file name) are that document's id. Without it, two ids
    where one ends with the other after a folder, or that differ by case alone, may or may not
    be one document: they are listed in ``apart``, never merged by guess.

    >>> gold_spellings(["docs/a.md", "./a.md", "a.md"], corpus=["a.md"]).merged
    {'docs/a.md': 'a.md', './a.md': 'a.md'}
    >>> spelled = gold_spellings(["docs/a.md", "./a.md", "a.md"])
    >>> spelled.merged, spelled.apart
    ({'./a.md': 'a.md'}, [('docs/a.md', 'a.md')])
    """
    ids = dict.fromkeys(gold)  # in gold order; `in` without a scan (issue 29.2)
    target: dict[str, str] = {}  # gold id -> what it names: a corpus id, else its spelling
    if corpus is not None:
        in_corpus = _Index(corpus)
        for doc in ids:
            how, found = in_corpus.lookup(doc)
            if how != "none" and len(found) == 1:
                target[doc] = found[0]
    by_key: dict[str, str] = {}  # normalised spelling -> its gold spelling that is the key
    for doc in ids:
        if doc not in target:
            key = normalise_id(doc)
            by_key.setdefault(key, key if key in ids else doc)
            target[doc] = by_key[key]
    names: dict[str, list[str]] = {}
    for doc in ids:
        names.setdefault(target[doc], []).append(doc)
    merged = {
        doc: one for one, docs in names.items() if len(docs) > 1 for doc in docs if doc != one
    }
    apart: list[tuple[str, str]] = []
    if corpus is None:
        kept = _Index(names)
        for one in names:
            key = normalise_id(one)
            for other in (*(kept.by_key.get(t) for t in _tails(key)), _other_case(kept, key)):
                if other is not None and other != one and (other, one) not in apart:
                    apart.append((one, other))
    return GoldSpellings(merged, apart)


def _other_case(index: _Index, key: str) -> str | None:
    """A known id spelled like ``key`` but for case (only when such ids exist)."""
    if index.fold_ok:
        return None  # no two known ids differ by case alone
    folded = key.casefold()
    return next((doc for k, doc in index.by_key.items() if k != key and k.casefold() == folded),
                None)  # fmt: skip
