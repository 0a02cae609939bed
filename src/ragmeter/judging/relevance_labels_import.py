"""Importing people's relevance grades: validate a filled-in export, store it (issue 17.2).

:func:`import_relevance_labels` reads a file written by
:func:`ragmeter.judging.relevance_labels.export_relevance_labels`, names every problem
(file, question, chunk and field; exit 2, nothing stored), and stores the grades of each
fully labelled question under the run's label set. A question with a grade still null is
not stored; importing the same file twice changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import RelevanceLabelError, located
from ragmeter.judging.relevance_labels import (
    GRADES,
    judge_grades,
    label_item_id,
    relevance_label_set,
)
from ragmeter.run import RunInfo
from ragmeter.store import Store

__all__ = [
    "MAX_PROBLEMS_SHOWN",
    "RelevanceLabelImport",
    "describe_import",
    "import_relevance_labels",
]

#: An import names at most this many problems (the count says how many there were).
MAX_PROBLEMS_SHOWN = 20

_KIND = "relevance labels"
_TOP_FIELDS = frozenset({"run", "label_set", "sample", "questions"})
_QUESTION_FIELDS = frozenset({"id", "question", "chunks"})
_CHUNK_FIELDS = frozenset({"id", "doc", "text", "grade"})


@dataclass(frozen=True)
class RelevanceLabelImport:
    """What ``import`` did: questions stored (new or changed), unchanged, not fully labelled."""

    run: RunInfo
    label_set: str
    stored: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    not_fully_labelled: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.id,
            "label_set": self.label_set,
            "stored": self.stored,
            "unchanged": self.unchanged,
            "not_fully_labelled": self.not_fully_labelled,
        }


def _name(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


class _Problems:
    """Every problem of a file, each naming the file, question, chunk and field."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []

    def add(self, message: str, *, question: Any = None, chunk: Any = None, key: str) -> None:
        where = []
        if question is not None:
            where.append(f"question {_name(question)}")
        if chunk is not None:
            where.append(f"chunk {_name(chunk)}")
        where.append(f"field {key}")
        self.lines.append(located(_KIND, self.path, " ".join(where), message))

    def raise_any(self) -> None:
        if not self.lines:
            return
        shown = self.lines[:MAX_PROBLEMS_SHOWN]
        more = len(self.lines) - len(shown)
        tail = [f"... and {more} more problem(s)"] if more else []
        summary = f"{len(self.lines)} problem(s); nothing was stored"
        raise RelevanceLabelError("\n".join([*shown, *tail, summary]))


def _read(path: Path) -> Any:
    from ragmeter.formats.strict_yaml import load_yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RelevanceLabelError(located(_KIND, path, None, f"cannot read: {error}")) from None
    data, _ = load_yaml(text, path, _KIND, RelevanceLabelError)
    if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list):
        raise RelevanceLabelError(
            located(_KIND, path, None, 'expected a mapping with a "questions" list')
        )
    return data


def _grade(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value not in GRADES:
        raise ValueError(f"{_name(value)} is not a grade 0-3 (or null)")
    return value


def _parse(
    data: Mapping[str, Any], run: RunInfo, judged: Mapping[str, Mapping[str, int]], path: Path
) -> tuple[dict[str, dict[str, int]], list[str]]:
    """``(fully labelled question -> chunk -> grade, questions not fully labelled)``."""
    problems = _Problems(path)
    for key in sorted(set(data) - _TOP_FIELDS, key=str):
        problems.add("unknown field", key=str(key))
    if "run" in data and data["run"] != run.id:
        problems.add(f"the file is for run {_name(data['run'])}, not run {run.id}", key="run")
    full: dict[str, dict[str, int]] = {}
    partial: list[str] = []
    seen: set[str] = set()
    for number, record in enumerate(data["questions"], start=1):
        if not isinstance(record, Mapping) or not isinstance(record.get("id"), str):
            problems.add(f"entry {number} needs a string id", key="id")
            continue
        question = record["id"]
        for key in sorted(set(record) - _QUESTION_FIELDS, key=str):
            problems.add("unknown field", question=question, key=str(key))
        if question in seen:
            problems.add("repeats an earlier question", question=question, key="id")
            continue
        seen.add(question)
        graded = judged.get(question)
        if not graded:
            problems.add(
                f"not a question with judge-graded chunks in run {run.id}",
                question=question,
                key="id",
            )
            continue
        grades = _chunk_grades(record.get("chunks"), question, graded, problems)
        if grades is not None and set(grades) == set(graded):
            full[question] = grades
        else:
            partial.append(question)
    problems.raise_any()
    return full, partial


def _chunk_grades(
    chunks: Any, question: str, graded: Mapping[str, int], problems: _Problems
) -> dict[str, int] | None:
    """The question's chunk grades; None when one is still null (or has a problem)."""
    if not isinstance(chunks, list):
        problems.add("expected a list of chunks", question=question, key="chunks")
        return None
    grades: dict[str, int] = {}
    complete = True
    for number, entry in enumerate(chunks, start=1):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
            problems.add(f"chunk entry {number} needs a string id", question=question, key="id")
            continue
        chunk = entry["id"]
        for key in sorted(set(entry) - _CHUNK_FIELDS, key=str):
            problems.add("unknown field", question=question, chunk=chunk, key=str(key))
        if chunk not in graded:
            message = "not a chunk the judge graded for this question"
            problems.add(message, question=question, chunk=chunk, key="id")
            continue
        if chunk in grades:
            problems.add("repeats an earlier chunk", question=question, chunk=chunk, key="id")
            continue
        try:
            grade = _grade(entry.get("grade"))
        except ValueError as error:
            problems.add(str(error), question=question, chunk=chunk, key="grade")
            continue
        if grade is None:
            complete = False
        else:
            grades[chunk] = grade
    return grades if complete else None


def import_relevance_labels(
    store: Store, run_ref: int | str, path: str | Path
) -> RelevanceLabelImport:
    """Validate a filled-in export and store the grades of every fully labelled question.

    Every problem is named (file, question, chunk, field) and nothing is stored when there
    is one. A question with a grade still null (or a chunk left out) is not stored and is
    counted as not fully labelled. Grades equal to the stored ones are not rewritten, so
    importing a file twice changes nothing.
    """
    run = store.get_run(run_ref)
    target = Path(path)
    data = _read(target)
    judged = judge_grades(store, run.id)
    full, partial = _parse(data, run, judged, target)
    name = relevance_label_set(run.id)
    existing = store.labels(name)
    changed: dict[str, str] = {}
    stored: list[str] = []
    unchanged: list[str] = []
    for question, grades in full.items():
        labels = {label_item_id(question, c): str(g) for c, g in grades.items()}
        new = {i: v for i, v in labels.items() if existing.get(i) != v}
        changed.update(new)
        (stored if new else unchanged).append(question)
    if changed:
        store.save_labels(name, changed)
    return RelevanceLabelImport(run, name, stored, unchanged, partial)


def describe_import(result: RelevanceLabelImport, *, shown: int = 10) -> Sequence[str]:
    """The lines ``import`` prints.

    >>> from ragmeter.run import RunInfo
    >>> run = RunInfo(3, "r", "", "", "bm25", 5, "doc", "complete")
    >>> describe_import(RelevanceLabelImport(run, "run-3-relevance", ["a"], [], ["b"]))[0]
    'run 3 (r): 1 question(s) stored, 0 unchanged, 1 not fully labelled (set run-3-relevance)'
    """
    lines = [
        f"run {result.run.id} ({result.run.name}): {len(result.stored)} question(s) stored, "
        f"{len(result.unchanged)} unchanged, {len(result.not_fully_labelled)} not fully "
        f"labelled (set {result.label_set})"
    ]
    if result.not_fully_labelled:
        names = ", ".join(_name(q) for q in result.not_fully_labelled[:shown])
        more = len(result.not_fully_labelled) - shown
        lines.append(
            f"not fully labelled (a grade still null, or a chunk left out): {names}"
            + (f" and {more} more" if more > 0 else "")
        )
        lines.append(
            "the corrected estimate assumes the labelled questions are a random sample: "
            "finish these before trusting it"
        )
    return lines
