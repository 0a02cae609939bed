"""Gold edits: a person's correction of the gold set, made from a missed question of a run.

Two actions, both reviewed by a person on the dashboard's run page:

- ``relevant``: a retrieved chunk is relevant, with a grade 0-3 and optionally the
  passage that makes it so (``quote``, text of the chunk). Applied as a judgment of the
  chunk's document: ``{doc, grade}``, or ``{doc, quote, grade}`` with a passage, so the
  gold set stays anchored to documents and passages (it survives a new chunker);
- ``wrong``: an expected document is not relevant. Applied by replacing every judgment
  of that document with ``{doc, grade: 0}`` (judged, not relevant), so the correction
  is kept rather than forgotten.

An edit is validated twice: its own fields when it is made (``GoldEdit.new``), and
against the run it was made on (``check_edit``: the question is in the run's gold set,
the chunk was retrieved for it, the quote is in the chunk's text, the wrong document was
expected). ``apply_edits`` writes edits into a gold set; two edits that disagree (grade 2
and grade 3 for the same passage, or "relevant" and "wrong" for one document) are refused,
all of them listed, and nothing is written.

>>> gold = GoldSet.from_records([{"id": "q1", "question": "Refunds?",
...                               "relevant": [{"doc": "faq.md"}]}])
>>> edit = GoldEdit.new(run_id=3, item_id="q1", action="relevant", doc="refunds.md",
...                     grade=2, quote="within 30 days", user="ana")
>>> result = apply_edits(gold, [edit])
>>> [r.model_dump(exclude_none=True) for r in result.gold["q1"].relevant]
[{'doc': 'faq.md', 'grade': 1}, {'doc': 'refunds.md', 'quote': 'within 30 days', 'grade': 2}]
>>> result.applied == (edit,), result.unchanged
(True, ())
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ragmeter.errors import GoldEditError
from ragmeter.gold.goldset import YAML_SUFFIXES, GoldItem, GoldSet, Relevance
from ragmeter.gold.items import MAX_GRADE
from ragmeter.gold.quotes import FoldedText, find_quote, folded_quote

__all__ = [
    "ACTIONS",
    "DEFAULT_USER",
    "MAX_QUOTE_CHARS",
    "ApplyResult",
    "GoldEdit",
    "GoldEditError",
    "apply_edits",
    "apply_edits_to_file",
    "check_edit",
    "select_edits",
]

Action = Literal["relevant", "wrong"]
ACTIONS: tuple[str, ...] = ("relevant", "wrong")
#: Who made an edit when nobody said (a dashboard without ``--user`` on this machine).
DEFAULT_USER = "local"
#: Longest passage kept as a quote; a longer selection is most of a chunk, not a passage.
MAX_QUOTE_CHARS = 2_000
_REWRITTEN = (
    "{} was rewritten whole, without its comments: an edited item names its judgments "
    "under another key than 'relevant' or in flow style"
)
#: Conflicts named in one error message before "and N more".
_SHOWN_CONFLICTS = 10


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class GoldEdit:
    """One reviewed gold edit: who, when, on which run and question, what about which document.

    ``chunk`` is the retrieved chunk a ``relevant`` edit was made on (kept for the record;
    the gold set gets its document). ``grade`` is ``None`` for ``wrong``. ``id`` is the
    store's number for it (``None`` before it is stored).
    """

    run_id: int
    item_id: str
    action: Action
    doc: str
    grade: int | None = None
    quote: str | None = None
    chunk: str | None = None
    user: str = DEFAULT_USER
    created: str = ""
    gold_hash: str | None = None
    id: int | None = field(default=None, compare=False)

    @classmethod
    def new(
        cls,
        *,
        run_id: int,
        item_id: str,
        action: str,
        doc: str,
        grade: int | None = None,
        quote: str | None = None,
        chunk: str | None = None,
        user: str | None = None,
        gold_hash: str | None = None,
    ) -> GoldEdit:
        """A new edit, stamped now; its own fields are checked (``GoldEditError`` otherwise).

        >>> GoldEdit.new(run_id=1, item_id="q1", action="relevant", doc="a.md", grade=4)
        Traceback (most recent call last):
        ...
        ragmeter.errors.GoldEditError: gold edit on q1: grade must be an integer 0-3, got 4
        """
        where = f"gold edit on {item_id}"
        if not item_id.strip():
            raise GoldEditError("gold edit: the question id is empty")
        if action not in ACTIONS:
            raise GoldEditError(f"{where}: unknown action {action!r}; use one of {ACTIONS}")
        if not doc.strip():
            raise GoldEditError(f"{where}: the document is empty")
        if action == "relevant":
            if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
                raise GoldEditError(
                    f"{where}: grade must be an integer 0-{MAX_GRADE}, got {grade!r}"
                )
        elif grade is not None or quote is not None:
            raise GoldEditError(f"{where}: a 'wrong' edit takes no grade and no quote")
        if quote is not None:
            quote = quote.strip()
            if not quote:
                quote = None
            elif len(quote) > MAX_QUOTE_CHARS:
                raise GoldEditError(
                    f"{where}: the quote is {len(quote)} characters; select a passage of at "
                    f"most {MAX_QUOTE_CHARS}, or mark the whole document without a quote"
                )
        return cls(
            run_id=run_id,
            item_id=item_id,
            action=action,  # type: ignore[arg-type]  # checked against ACTIONS above
            doc=doc,
            grade=grade,
            quote=quote,
            chunk=chunk,
            user=(user or "").strip() or DEFAULT_USER,
            created=_now(),
            gold_hash=gold_hash,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (``ragmeter gold edits --json``, the API).

        >>> GoldEdit(run_id=1, item_id="q1", action="wrong", doc="a.md").to_dict()["action"]
        'wrong'
        """
        return asdict(self)

    @property
    def judgment(self) -> Relevance:
        """The judgment this edit puts into the gold item."""
        if self.action == "wrong":
            return Relevance(doc=self.doc, grade=0)
        return Relevance(doc=self.doc, quote=self.quote, grade=self.grade or 0)

    def describe(self) -> str:
        """One line for people: ``#4 q1: faq.md relevant, grade 2, quote "…" (ana, run 3)``."""
        number = f"#{self.id} " if self.id is not None else ""
        if self.action == "wrong":
            what = f"{self.doc} is not relevant"
        else:
            what = f"{self.doc} relevant, grade {self.grade}"
            if self.quote:
                shown = self.quote if len(self.quote) <= 60 else self.quote[:57] + "..."
                what += f', quote "{shown}"'
        return f"{number}{self.item_id}: {what} ({self.user}, run {self.run_id})"


def check_edit(
    edit: GoldEdit,
    gold: GoldSet,
    retrieved: Sequence[Mapping[str, Any]],
    texts: Mapping[str, Sequence[str]],
) -> None:
    """Refuse an edit that does not fit the run it was made on (``GoldEditError``).

    ``gold`` is the run's gold set, ``retrieved`` the question's ranking (dicts with ``id``
    and ``doc``), ``texts`` every text the run kept of each chunk id (its full text, a
    snippet, the generation context).

    >>> gold = GoldSet.from_records([{"id": "q1", "question": "?", "relevant": ["a.md"]}])
    >>> edit = GoldEdit.new(run_id=1, item_id="q1", action="relevant", doc="b.md", grade=1,
    ...                     chunk="b.md#0", quote="thirty days")
    >>> check_edit(edit, gold, [{"id": "b.md#0", "doc": "b.md"}], {"b.md#0": ["Within 30 days."]})
    Traceback (most recent call last):
    ...
    ragmeter.errors.GoldEditError: gold edit on q1: the quote "thirty days" is not in the text of chunk b.md#0 (select the passage inside the chunk's text)
    """
    where = f"gold edit on {edit.item_id}"
    if edit.item_id not in gold:
        raise GoldEditError(
            f"{where}: run {edit.run_id}'s gold set has no question {edit.item_id!r}"
        )
    if edit.action == "wrong":
        expected = {rel.doc_id for rel in gold[edit.item_id].relevant if rel.grade > 0}
        if edit.doc not in expected:
            listed = ", ".join(sorted(expected)) or "none"
            raise GoldEditError(
                f"{where}: {edit.doc!r} is not an expected document of this question "
                f"(expected: {listed})"
            )
        return
    chunk = edit.chunk if edit.chunk is not None else edit.doc
    hits = [h for h in retrieved if str(h.get("id")) == chunk]
    if not hits:
        raise GoldEditError(
            f"{where}: run {edit.run_id} did not retrieve {chunk!r} for this question; "
            "mark one of its retrieved chunks"
        )
    docs = {str(h.get("doc")) for h in hits}
    if edit.doc not in docs:
        raise GoldEditError(
            f"{where}: chunk {chunk!r} belongs to {', '.join(sorted(docs))}, not {edit.doc!r}"
        )
    if edit.quote is None:
        return
    known = [t for t in texts.get(chunk, ()) if t]
    if not known:
        raise GoldEditError(
            f"{where}: run {edit.run_id} kept no text of chunk {chunk!r}, so the quote "
            "cannot be checked; mark the document without a quote"
        )
    cache: dict[str, FoldedText] = {}
    if not any(find_quote(t, edit.quote, f"{chunk}\0{n}", cache) for n, t in enumerate(known)):
        raise GoldEditError(
            f'{where}: the quote "{edit.quote[:80]}" is not in the text of chunk {chunk} '
            "(select the passage inside the chunk's text)"
        )


@dataclass(frozen=True)
class ApplyResult:
    """What ``apply_edits`` did: the new gold set, the edits that changed it, the rest."""

    gold: GoldSet
    applied: tuple[GoldEdit, ...]
    unchanged: tuple[GoldEdit, ...]  # already true of the gold set (applied before)
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": [e.to_dict() for e in self.applied],
            "unchanged": [e.to_dict() for e in self.unchanged],
            "warnings": list(self.warnings),
            "items": len(self.gold),
            "hash": self.gold.hash,
        }


def _folded(quote: str | None) -> str | None:
    """The quote as the finder matches it (``fold_text``): quotes differing in case, spacing,
    Unicode form or Markdown name one passage, so two grades for them conflict (issue 27.11)."""
    return folded_quote(quote) if quote is not None else None


def _conflicts(edits: Sequence[GoldEdit]) -> list[str]:
    """Pairs of edits that cannot both hold, described for people."""
    problems: list[str] = []
    by_passage: dict[tuple[str, str, str | None], GoldEdit] = {}
    by_doc: dict[tuple[str, str], list[GoldEdit]] = {}
    for edit in edits:
        by_doc.setdefault((edit.item_id, edit.doc), []).append(edit)
        if edit.action != "relevant":
            continue
        key = (edit.item_id, edit.doc, _folded(edit.quote))
        seen = by_passage.setdefault(key, edit)
        if seen.grade != edit.grade:
            problems.append(
                f"{seen.describe()} and {edit.describe()} give the same passage different grades"
            )
    for group in by_doc.values():
        wrong = [e for e in group if e.action == "wrong"]
        relevant = [e for e in group if e.action == "relevant"]
        if wrong and relevant:
            problems.append(
                f"{relevant[0].describe()} and {wrong[0].describe()} disagree on whether "
                f"{wrong[0].doc} is relevant"
            )
    return problems


def _apply_one(item: GoldItem, edit: GoldEdit) -> GoldItem | None:
    """``item`` with ``edit`` applied, or ``None`` when it already says so."""
    judgments = list(item.relevant)
    target = edit.judgment
    if edit.action == "wrong":
        mine = [r for r in judgments if r.doc_id == edit.doc]
        if mine == [target]:
            return None
        kept = [r for r in judgments if r.doc_id != edit.doc]
        return item.model_copy(update={"relevant": (*kept, target)})
    for n, rel in enumerate(judgments):
        if rel.doc == edit.doc and _folded(rel.quote) == _folded(edit.quote) and rel.chunk is None:
            if rel.grade == target.grade:
                return None
            judgments[n] = rel.model_copy(update={"grade": target.grade})  # the file's wording
            return item.model_copy(update={"relevant": tuple(judgments)})
    return item.model_copy(update={"relevant": (*judgments, target)})


def apply_edits(gold: GoldSet, edits: Iterable[GoldEdit]) -> ApplyResult:
    """``gold`` with ``edits`` applied (a new set; ``gold`` is not changed).

    Identical edits count once. Edits that disagree are refused together with a
    ``GoldEditError`` naming each pair; an edit on a question the set does not hold is
    refused too. Applying the same edits twice changes nothing the second time.

    >>> gold = GoldSet.from_records([{"id": "q1", "question": "?", "relevant": ["a.md"]}])
    >>> wrong = GoldEdit.new(run_id=1, item_id="q1", action="wrong", doc="a.md")
    >>> again = apply_edits(apply_edits(gold, [wrong]).gold, [wrong])
    >>> [r.model_dump(exclude_none=True) for r in again.gold["q1"].relevant], len(again.unchanged)
    ([{'doc': 'a.md', 'grade': 0}], 1)
    """
    unique = list(dict.fromkeys(edits))
    missing = sorted({e.item_id for e in unique if e.item_id not in gold})
    if missing:
        listed = ", ".join(missing[:_SHOWN_CONFLICTS])
        more = (
            f" and {len(missing) - _SHOWN_CONFLICTS} more"
            if len(missing) > _SHOWN_CONFLICTS
            else ""
        )
        raise GoldEditError(
            f"gold set {gold.path or gold.name}: no question {listed}{more}; the edits were made "
            "on another gold set (give the file the run was scored with); nothing was written"
        )
    problems = _conflicts(unique)
    if problems:
        shown = problems[:_SHOWN_CONFLICTS]
        more = f"; and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        raise GoldEditError(
            f"{len(problems)} conflicting gold edit(s): "
            + "; ".join(shown)
            + more
            + ". Leave one of each out with --exclude ID (or --run N); nothing was written"
        )
    items = {item.id: item for item in gold}
    applied: list[GoldEdit] = []
    unchanged: list[GoldEdit] = []
    warnings: list[str] = []
    for edit in unique:
        new = _apply_one(items[edit.item_id], edit)
        if new is None:
            unchanged.append(edit)
            continue
        items[edit.item_id] = new
        applied.append(edit)
        if edit.gold_hash and edit.gold_hash != gold.hash:
            warnings.append(
                f"{edit.describe()} was made on gold set {edit.gold_hash[:12]}, this file is "
                f"{gold.hash[:12]}: check the item still means what it did"
            )
    for item_id in dict.fromkeys(e.item_id for e in applied):
        if not any(rel.grade > 0 for rel in items[item_id].relevant):
            warnings.append(f"{item_id} has no relevant document left: it can never be found")
    new_gold = GoldSet(items.values(), path=gold.path, name=gold.name)
    return ApplyResult(new_gold, tuple(applied), tuple(unchanged), tuple(warnings))


def select_edits(
    edits: Iterable[GoldEdit], *, run_id: int | None = None, exclude: Iterable[int] = ()
) -> list[GoldEdit]:
    """The edits of run ``run_id`` (all runs by default) whose id is not in ``exclude``.

    An excluded id that matches no edit is an error, so a typo does not apply an edit
    a person meant to leave out.

    >>> edits = [GoldEdit(run_id=1, item_id="q1", action="wrong", doc="a.md", id=1)]
    >>> select_edits(edits, exclude=[2])
    Traceback (most recent call last):
    ...
    ragmeter.errors.GoldEditError: --exclude 2: no such gold edit (ids: 1)
    """
    everything = list(edits)
    ids = {e.id for e in everything}
    unknown = [n for n in exclude if n not in ids]
    if unknown:
        known = ", ".join(str(e.id) for e in everything) or "none"
        raise GoldEditError(f"--exclude {unknown[0]}: no such gold edit (ids: {known})")
    left_out = set(exclude)
    return [
        e for e in everything if (run_id is None or e.run_id == run_id) and e.id not in left_out
    ]


def apply_edits_to_file(
    path: str | Path,
    edits: Iterable[GoldEdit],
    *,
    out: str | Path | None = None,
    dry_run: bool = False,
) -> ApplyResult:
    """Apply ``edits`` to the gold file ``path`` and write the result to ``out`` (default: ``path``).

    The file must be YAML or JSONL (the formats that hold every field of an edit); other
    items are kept as they are. A YAML file keeps its comments, layout and permissions: only
    the changed judgments are written (``ragmeter.gold._splice``; when that cannot be done
    the file is rewritten whole and a warning says so). Written atomically under the file's
    lock; ``dry_run`` writes nothing. The result loads with ``load_gold`` and passes
    ``ragmeter gold check``.

    >>> apply_edits_to_file("gold.yaml", store.gold_edits(run_id=3), out="gold-fixed.yaml")  # doctest: +SKIP
    """
    from ragmeter.gold._splice import splice_relevant
    from ragmeter.gold._write import locked, write_atomically
    from ragmeter.gold.files import load_gold
    from ragmeter.gold.review import dump_items

    path = Path(path)
    target = Path(out) if out is not None else path
    for file in {path, target}:
        if file.is_dir() or file.suffix.lower() not in (*YAML_SUFFIXES, ".jsonl"):
            raise GoldEditError(
                f"gold edits are written to YAML or JSONL gold files; {file} is not one "
                "(convert it first, e.g. load_gold(...).save('gold.yaml'))"
            )
    with locked(target):  # read and rewritten as one step (issue 27.2)
        before = load_gold(path)
        result = apply_edits(before, edits)
        if dry_run or not (result.applied or target != path):
            return result
        text = None
        yaml_both = all(f.suffix.lower() in YAML_SUFFIXES for f in (path, target))
        if yaml_both:  # keep the file's comments and layout (issue 27.10)
            text = splice_relevant(path.read_text(encoding="utf-8-sig"), before, result.gold)
            if text is None:
                result = replace(result, warnings=(*result.warnings, _REWRITTEN.format(path)))
        write_atomically(target, text if text is not None else dump_items(target, result.gold))
    return result
