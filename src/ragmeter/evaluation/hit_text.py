"""The text of each retrieved chunk, kept with the run, bounded per chunk (issue 15.1).

``evaluate()`` stores the text of every stored hit (the top k) in the result's JSON
``extra["texts"]``, each cut at :data:`HIT_TEXT_MAX_CHARS` with :data:`CUT_MARK` left
visible, and the ranks it cut in ``extra["texts_cut"]``. The text deliberately does not go
back into :class:`~ragmeter.documents.Hit`: scoring reads ``Hit.text`` to match gold quotes,
and a re-score from the store must never match against a cut text as if it were whole.

Runs stored before this kept only the first words of the top 3 hits
(``extra["snippets"]``); :func:`stored_text` reads either and says which it found.

>>> bounded("a" * 5, limit=3)
'aaa … (cut)'
>>> stored_text({"snippets": ["first words …"]}, 1)
('first words …', 'snippet', False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ragmeter.gold.quotes import DEFAULT_MIN_OVERLAP, quote_segments

__all__ = [
    "CUT_MARK",
    "HIT_TEXT_MAX_CHARS",
    "SNIPPET_WORDS",
    "TextSource",
    "annotate_texts",
    "bounded",
    "highlighted",
    "run_highlighted",
    "snippet",
    "stored_text",
]

#: Characters of a chunk's text kept with a run; longer texts are cut and marked.
HIT_TEXT_MAX_CHARS = 4_000
#: Appended to a cut text, so a reader never takes it for the whole chunk.
CUT_MARK = " … (cut)"
#: Words of a one-line snippet (``ragmeter retrieve``, older runs).
SNIPPET_WORDS = 12

#: Where a row's text came from: stored with the run, an older run's snippet, or nothing.
TextSource = Literal["run", "snippet", "none"]


def bounded(text: str | None, limit: int = HIT_TEXT_MAX_CHARS) -> str | None:
    """``text`` cut at ``limit`` characters with :data:`CUT_MARK` appended (None stays None).

    >>> bounded("short"), bounded(None)
    ('short', None)
    """
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + CUT_MARK


def snippet(text: str | None) -> str:
    """The first :data:`SNIPPET_WORDS` words of ``text``, with `` …`` when there are more.

    >>> snippet("one two"), snippet(None)
    ('one two', '')
    """
    if not text:
        return ""
    words = text.split()
    more = " …" if len(words) > SNIPPET_WORDS else ""
    return " ".join(words[:SNIPPET_WORDS]) + more


def annotate_texts(hits: Sequence[Any], limit: int = HIT_TEXT_MAX_CHARS) -> dict[str, Any]:
    """The ``extra`` entries that keep ``hits``' texts: ``texts`` and, if any, ``texts_cut``.

    >>> from ragmeter.documents import Hit
    >>> annotate_texts([Hit("a", "a", text="abcd"), Hit("b", "b")], limit=2)
    {'texts': ['ab … (cut)', None], 'texts_cut': [1]}
    """
    raw = [getattr(hit, "text", None) for hit in hits]
    if raw.count(None) == len(raw):  # no text: nothing to cut (issue 29.2)
        return {"texts": raw}
    cut = [rank for rank, text in enumerate(raw, start=1) if text is not None and len(text) > limit]
    if not cut:  # bounded() would give each text back as it is
        return {"texts": raw}
    return {"texts": [bounded(text, limit) for text in raw], "texts_cut": cut}


def stored_text(extra: Mapping[str, Any], rank: int) -> tuple[str, TextSource, bool]:
    """The text kept for the hit at ``rank`` (1-based): ``(text, source, cut)``.

    >>> stored_text({"texts": ["x … (cut)"], "texts_cut": [1]}, 1)
    ('x … (cut)', 'run', True)
    >>> stored_text({"texts": [None]}, 1), stored_text({}, 3)
    (('', 'none', False), ('', 'none', False))
    """
    texts = extra.get("texts")
    if isinstance(texts, list):
        text = texts[rank - 1] if rank - 1 < len(texts) else None
        if not text:
            return "", "none", False
        return str(text), "run", rank in (extra.get("texts_cut") or ())
    snippets = extra.get("snippets") or []
    text = snippets[rank - 1] if rank - 1 < len(snippets) else ""
    return (str(text), "snippet", False) if text else ("", "none", False)


def highlighted(
    question: Mapping[str, Any], min_overlap: float = DEFAULT_MIN_OVERLAP
) -> dict[str, Any]:
    """A copy of a question dict whose ``retrieved`` chunks carry ``segments``.

    ``question`` has ``gold`` (entries with ``doc`` and ``quote``) and ``retrieved`` (hits with
    ``doc`` and ``text``), as a report row or a dashboard question has. Each hit's text is
    split where a gold quote of its own document overlaps it as the coverage rule counts it,
    with the run's ``min_overlap`` (see :func:`~ragmeter.gold.quotes.quote_segments`); the
    pieces are plain text, never markup.

    >>> q = {"gold": [{"doc": "a.md", "quote": "30 days"}],
    ...      "retrieved": [{"doc": "a.md", "text": "within 30 days"}]}
    >>> highlighted(q)["retrieved"][0]["segments"][1]
    {'text': '30 days', 'quote': True}
    """
    quotes: dict[str, list[str]] = {}
    for entry in question.get("gold") or ():
        if entry.get("quote") and int(entry.get("grade", 1)) > 0:
            quotes.setdefault(str(entry["doc"]), []).append(str(entry["quote"]))
    retrieved = []
    for hit in question.get("retrieved") or ():
        text = str(hit.get("text") or "")
        own = quotes.get(str(hit["doc"]), [])
        retrieved.append({**hit, "segments": quote_segments(text, own, min_overlap)})
    return {**question, "retrieved": retrieved}


def run_highlighted(question: Mapping[str, Any], run_config: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`highlighted` at the share the run was scored with (its stored ``min_overlap``):
    the dashboard and the static report mark a quote where the coverage rule counted it.

    >>> q = {"gold": [{"doc": "a.md", "quote": "refunds take thirty days from the purchase"}],
    ...      "retrieved": [{"doc": "a.md", "text": "Note that refunds take thirty days"}]}
    >>> [[s["quote"] for s in run_highlighted(q, {"min_overlap": share})["retrieved"][0]["segments"]]
    ...  for share in (0.5, 0.9)]
    [[False, True], [False]]
    """
    from ragmeter.evaluation.setup import min_overlap_of

    return highlighted(question, min_overlap_of(run_config))
