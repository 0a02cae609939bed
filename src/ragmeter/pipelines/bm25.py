"""The built-in ``bm25`` retriever, on the bm25s library, with an on-disk index cache.

Settings (fixed, part of the cache key): the Lucene variant of BM25 with k1 = 1.2 and
b = 0.75; text lowercased and split like scikit-learn's CountVectorizer
(``\\b\\w\\w+\\b``), English stopwords removed (bm25s' list), Snowball English stemming
(PyStemmer). Each chunk is indexed as ``title + "\\n" + text``, the title being its
document's. These are the settings of bm25s' published BEIR figures (SciFact
nDCG@10 = 0.680).

``load_or_build_bm25`` keeps the index under
``cache_dir/bm25/<hash of corpus content, chunker config and BM25 settings>/`` so a second
run over the same corpus does not re-index.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.documents import Chunk, Hit
from ragmeter.errors import CorpusError
from ragmeter.executors.pickling import Transient, new_lock
from ragmeter.pipelines._cache import (
    atomic_entry,
    cache_key,
    discard_entry,
    is_complete,
    library_versions,
)
from ragmeter.pipelines._lean_import import import_without

if TYPE_CHECKING:
    from ragmeter.corpus import Corpus
    from ragmeter.pipelines.chunkers import ChunkerConfig

__all__ = [
    "BM25S_SKIPPED",
    "BM25_LIBRARIES",
    "BM25_SETTINGS",
    "BM25Retriever",
    "load_or_build_bm25",
]

#: The libraries whose version shapes an index (part of its cache key and of a run's record).
BM25_LIBRARIES = ("bm25s", "PyStemmer")

#: Everything that shapes the index; bump ``version`` when the tokenizer changes.
BM25_SETTINGS: Mapping[str, Any] = {
    "method": "lucene",
    "k1": 1.2,
    "b": 0.75,
    "token_pattern": r"(?u)\b\w\w+\b",
    "stopwords": "en (bm25s)",
    "stemmer": "snowball english (PyStemmer)",
    "fields": "title + newline + text",
    "version": 1,
}

_CHUNKS_FILE = "chunks.jsonl"
_META_FILE = "ragmeter.json"


#: What bm25s imports eagerly when installed and ragmeter never uses (issue 29.3): numba
#: (its JIT backend; ragmeter scores with ``get_scores_from_ids``, plain numpy), scipy
#: (a sparse-matrix builder; numpy's builds the same arrays as fast) and tqdm (progress bars,
#: always off here). Importing numba alone costs more than indexing SciFact.
BM25S_SKIPPED = ("numba", "scipy", "tqdm")


def _bm25s() -> Any:
    """The bm25s module, imported without :data:`BM25S_SKIPPED` unless it was imported before."""
    return import_without("bm25s", BM25S_SKIPPED)


#: PyStemmer's name of the stemming algorithm (see ``BM25_SETTINGS["stemmer"]``).
_STEMMER_LANGUAGE = "english"


def _new_stemmer(tokenizer: _Tokenizer) -> Any:
    import Stemmer

    return Stemmer.Stemmer(tokenizer.language)


def _no_stems(_tokenizer: _Tokenizer) -> dict[str, str]:
    return {}


class _Tokenizer(Transient):
    """Lowercase, split, drop stopwords, stem; thread-safe (PyStemmer objects are not).

    Pickles without its stemmer (a C object that cannot travel) and its memo of stems;
    a copy builds a stemmer for the same language and stems again as words come.
    """

    _TRANSIENT = {"_stemmer": _new_stemmer, "_stems": _no_stems, "_lock": new_lock}

    def __init__(self, language: str = _STEMMER_LANGUAGE) -> None:
        stopwords = _bm25s().stopwords.STOPWORDS_EN
        self.language = language
        self._pattern = re.compile(str(BM25_SETTINGS["token_pattern"]))
        self._stopwords = frozenset(stopwords)
        self._stemmer = _new_stemmer(self)
        self._stems: dict[str, str] = {}
        self._lock = threading.Lock()

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Stemmed tokens of each text; stems are computed once per distinct word."""
        stop = self._stopwords
        split = self._pattern.findall
        words = [[w for w in split(t.lower()) if w not in stop] for t in texts]
        with self._lock:
            stems = self._stems
            new = list({w for ws in words for w in ws if w not in stems})
            if new:
                stems.update(zip(new, self._stemmer.stemWords(new), strict=True))
            return [[stems[w] for w in ws] for ws in words]

    def index_ids(self, texts: Sequence[str]) -> tuple[list[list[int]], dict[str, int]]:
        """Each text as ids of stemmed tokens, and the vocabulary (stem -> id, in order of
        first occurrence): ``tokenize`` then numbering, in one pass over the tokens as bm25s'
        own tokenizer makes it (issue 29.3), so indexing a corpus costs what the floor's does.

        >>> _Tokenizer().index_ids(["Cats purr", "the cat sat"])
        ([[0, 1], [0, 2]], {'cat': 0, 'purr': 1, 'sat': 2})
        """
        stop = self._stopwords
        split = self._pattern.findall
        word_ids: dict[str, int] = {}
        rows: list[list[int]] = []
        for text in texts:
            row = []
            for word in split(text.lower()):
                if word in stop:
                    continue
                wid = word_ids.get(word)
                if wid is None:
                    wid = word_ids[word] = len(word_ids)
                row.append(wid)
            rows.append(row)
        words = list(word_ids)
        with self._lock:
            stems = self._stems
            new = [w for w in words if w not in stems]
            if new:
                stems.update(zip(new, self._stemmer.stemWords(new), strict=True))
            word_stems = [stems[w] for w in words]
        vocab: dict[str, int] = {}
        # A word's stem is numbered at the word's first occurrence, so the vocabulary is the
        # one numbering the stemmed tokens in order would give.
        stem_ids = [vocab.setdefault(stem, len(vocab)) for stem in word_stems]
        return [[stem_ids[w] for w in row] for row in rows], vocab


class BM25Retriever:
    """BM25 over chunks; ``retrieve(question, k)`` returns ranked :class:`Hit` objects.

    ``titles`` maps document id to title (default: each chunk's ``metadata["title"]``).
    ``from_cache`` says whether the index was loaded from disk rather than built.
    It pickles with its index arrays (a copy never re-indexes); only the tokenizer's
    stemmer and lock are made again.

    >>> from ragmeter.documents import Chunk
    >>> r = BM25Retriever([Chunk("a#0", "a", "cats purr", 0, 9), Chunk("b#0", "b", "dogs bark", 0, 9)])
    >>> [h.id for h in r.retrieve("why do cats purr?", 5)]
    ['a#0']
    """

    def __init__(
        self,
        chunks: Sequence[Chunk],
        titles: Mapping[str, str] | None = None,
        *,
        _index: Any = None,
    ) -> None:
        bm25s = _bm25s()
        self.chunks: tuple[Chunk, ...] = tuple(chunks)
        self.from_cache = _index is not None
        self._tokenizer = _Tokenizer()
        started = time.perf_counter()
        if _index is None:
            _index = bm25s.BM25(
                method=BM25_SETTINGS["method"],
                k1=BM25_SETTINGS["k1"],
                b=BM25_SETTINGS["b"],
                # The same arrays whatever is installed (scipy's builder is no faster).
                csc_backend="numpy",
            )
            ids, vocab = self._tokenizer.index_ids(_index_texts(self.chunks, titles))
            if self.chunks and not vocab:
                # bm25s fails with "max() arg is an empty sequence" (issue 19.11).
                raise CorpusError(
                    f"bm25: no indexable word in the corpus ({len(self.chunks)} chunks; "
                    "they hold only punctuation and stop words); check the documents"
                )
            if self.chunks:
                _index.index((ids, vocab), show_progress=False)
        self._index = _index
        self.index_seconds = time.perf_counter() - started
        self._vocab: Mapping[str, int] = getattr(_index, "vocab_dict", None) or {}
        self.config: dict[str, Any] = {"name": "bm25", **BM25_SETTINGS}

    @property
    def built(self) -> bool:
        """True when this object indexed the chunks itself (not loaded from the cache)."""
        return not self.from_cache

    def __len__(self) -> int:
        return len(self.chunks)

    def retrieve(self, question: str, k: int) -> list[Hit]:
        """The top ``k`` chunks for ``question``, best first (chunks scoring 0 are left out).

        Safe to call from several threads at once.
        """
        return self.retrieve_many([question], k)[0]

    def retrieve_many(self, questions: Sequence[str], k: int) -> list[list[Hit]]:
        """``retrieve`` for a batch of questions (tokenizes them in one pass).

        >>> from ragmeter.documents import Chunk
        >>> r = BM25Retriever([Chunk("a", "a", "red fox", 0, 7), Chunk("b", "b", "blue fox", 0, 8)])
        >>> [[h.id for h in hits] for hits in r.retrieve_many(["red fox", "zebra"], 10)]
        [['a', 'b'], []]
        """
        if k <= 0 or not self.chunks:
            return [[] for _ in questions]
        empty = self._vocab.get("")
        out: list[list[Hit]] = []
        for tokens in self._tokenizer.tokenize(list(questions)):
            ids = [self._vocab[t] for t in tokens if t in self._vocab and self._vocab[t] != empty]
            out.append(self._top_k(ids, k) if ids else [])
        return out

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """The index's analysis of ``texts``: lowercased, stopwords dropped, stemmed.

        >>> BM25Retriever([]).tokenize(["The cats are purring"])
        [['cat', 'pur']]
        """
        return self._tokenizer.tokenize(texts)

    def retrieve_weighted(self, weights: Mapping[str, float], k: int) -> list[Hit]:
        """The top ``k`` chunks for a weighted query of analysed terms (as :meth:`tokenize`
        returns them): score = sum of weight x BM25 score of each term. Query expansion
        (RM3) uses it; terms not in the index are ignored.

        >>> from ragmeter.documents import Chunk
        >>> r = BM25Retriever([Chunk("a", "a", "red fox", 0, 7), Chunk("b", "b", "blue fox", 0, 8)])
        >>> [h.id for h in r.retrieve_weighted({"blue": 2.0, "red": 0.5}, 10)]
        ['b', 'a']
        """
        if k <= 0 or not self.chunks:
            return []
        total: np.ndarray[Any, np.dtype[np.float64]] | None = None
        for term, weight in weights.items():
            tid = self._vocab.get(term)
            if tid is None or term == "" or weight == 0:
                continue
            part = np.asarray(self._index.get_scores_from_ids([tid]), dtype=np.float64) * weight
            total = part if total is None else total + part
        return [] if total is None else self._rank(total, k)

    def _top_k(self, token_ids: list[int], k: int) -> list[Hit]:
        # Reads only immutable arrays of the index, so concurrent calls need no lock.
        scores = np.asarray(self._index.get_scores_from_ids(token_ids), dtype=np.float64)
        return self._rank(scores, k)

    def _rank(self, scores: np.ndarray[Any, np.dtype[np.float64]], k: int) -> list[Hit]:
        n = len(scores)
        # Every chunk scoring at least the k-th best score (ties included), then best
        # first with ties in index order, so rankings are reproducible.
        kth = np.partition(scores, n - k)[n - k] if k < n else -np.inf
        top = np.flatnonzero(scores >= max(kth, np.finfo(np.float64).tiny))
        top = top[np.lexsort((top, -scores[top]))][:k]
        hits: list[Hit] = []
        for i in top.tolist():
            score = float(scores[i])
            c = self.chunks[i]
            hits.append(
                Hit(
                    id=c.id,
                    doc=c.doc_id,
                    score=score,
                    text=c.text,
                    start=c.start,
                    end=c.end,
                    metadata=c.metadata,
                )
            )
        return hits

    def save(self, directory: Path) -> None:
        """Write the index and the chunks to ``directory`` (see :func:`load_or_build_bm25`)."""
        directory.mkdir(parents=True, exist_ok=True)
        if self.chunks:
            self._index.save(str(directory), show_progress=False)
        with (directory / _CHUNKS_FILE).open("w", encoding="utf-8") as fh:
            for c in self.chunks:
                row = {"id": c.id, "doc_id": c.doc_id, "text": c.text, "start": c.start}
                row.update(end=c.end, metadata=dict(c.metadata))
                # ASCII escapes: json's C encoder writes them twice as fast (issue 29.3).
                fh.write(json.dumps(row) + "\n")
        meta = {"settings": dict(BM25_SETTINGS), "n_chunks": len(self.chunks)}
        (directory / _META_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> BM25Retriever:
        """Read an index written by :meth:`save`."""
        bm25s = _bm25s()
        chunks: list[Chunk] = []
        with (directory / _CHUNKS_FILE).open(encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                chunks.append(
                    Chunk(r["id"], r["doc_id"], r["text"], r["start"], r["end"], r["metadata"])
                )
        if not chunks:
            return cls([], _index=bm25s.BM25())
        index = bm25s.BM25.load(str(directory), load_vocab=True, mmap=False, show_progress=False)
        return cls(chunks, _index=index)


def load_or_build_bm25(
    corpus: Corpus, chunker: ChunkerConfig, cache_dir: Path | None
) -> BM25Retriever:
    """A BM25 retriever over ``corpus`` chunked with ``chunker``, from the cache if present.

    The entry lives in ``cache_dir/bm25/<key>/``, key = hash of the corpus content hash,
    ``chunker.key()``, :data:`BM25_SETTINGS` and the versions of :data:`BM25_LIBRARIES`; it is written atomically, so concurrent
    runs are safe. ``cache_dir=None`` builds in memory and writes nothing.

    >>> r = load_or_build_bm25(corpus, ChunkerConfig(), Path(".ragmeter/cache"))  # doctest: +SKIP
    >>> r.from_cache                                                               # doctest: +SKIP
    True
    """
    from ragmeter.pipelines.chunkers import chunk_corpus

    titles = {doc_id: doc.title for doc_id, doc in corpus.documents.items()}
    if cache_dir is None:
        return BM25Retriever(chunk_corpus(corpus, chunker), titles)
    key = cache_key(
        corpus.content_hash, chunker.key(), dict(BM25_SETTINGS), library_versions(*BM25_LIBRARIES)
    )
    entry = Path(cache_dir) / "bm25" / key
    if is_complete(entry):
        try:
            return BM25Retriever.load(entry)
        except (OSError, ValueError, KeyError, TypeError):
            discard_entry(entry)  # damaged: rebuild it below
    retriever = BM25Retriever(chunk_corpus(corpus, chunker), titles)
    try:
        with atomic_entry(entry) as tmp:
            retriever.save(tmp)
    except OSError:
        pass  # a read-only or full disk costs speed next time, not this run
    return retriever


def _index_texts(chunks: Sequence[Chunk], titles: Mapping[str, str] | None) -> list[str]:
    from ragmeter.pipelines.chunkers import index_text

    if titles is None:
        return [index_text(c, None) for c in chunks]
    return [index_text(c, titles.get(c.doc_id, "")) for c in chunks]
