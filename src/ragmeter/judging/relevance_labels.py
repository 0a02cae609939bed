"""People's relevance grades for the chunks the judge graded (issue 17.2).

``ragmeter judge relevance-labels export`` writes a run's judge-graded chunks to a YAML
file with ``grade: null`` (never the judge's grade: people who see it anchor on it, and the
correction would inherit the judge's bias); people fill in 0-3; ``import`` validates the
file and stores the grades of every *fully* labelled question in the store's
``judge_labels`` table, set :func:`relevance_label_set` (no migration: a label is the grade
as text, the item id the JSON list ``[question id, chunk id]``, so ids may hold any
character). :mod:`ragmeter.judging.corrected_relevance` turns them into corrected estimates.

The correction assumes the labelled questions are a uniform random sample of the questions
the judge graded chunks for: ``export --sample N --seed S`` draws one, and
``--unlabelled-only`` draws the next batch from the rest (a random sample of the remainder
joined to a random sample is still a random sample).

The file::

    run: 3
    label_set: run-3-relevance
    questions:
    - id: refund
      question: How long do refunds take?
      chunks:
      - id: faq.md#0
        doc: faq.md
        text: Contact support by email.
        grade: null        # people write 0-3 here
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import EvaluationError, RelevanceLabelError
from ragmeter.formats.label_files import draw_sample, refuse_existing, write_labels_file
from ragmeter.judging.judge_runs import relevance_cases
from ragmeter.run import RunInfo
from ragmeter.store import Store

__all__ = [
    "GRADES",
    "RELEVANCE_LABEL_SET",
    "RelevanceLabelExport",
    "export_relevance_labels",
    "judge_grades",
    "label_item_id",
    "parse_label_item_id",
    "people_grades",
    "relevance_label_set",
]

#: People's grades of a run's judge-graded chunks form one label set, named after the run.
RELEVANCE_LABEL_SET = "run-{id}-relevance"

#: The grades a person may give: the judge's scale (prompt ``relevance/1``), 0 unrelated ... 3
#: answers the question fully.
GRADES = (0, 1, 2, 3)

_KIND = "relevance labels"
_HEADER = """\
# People's relevance grades for the chunks a judge graded (ragmeter judge relevance-labels).
# Grade each chunk for its question as the judge was asked to: 3 answers it fully,
# 2 answers part of it, 1 on topic but does not answer it, 0 unrelated.
# Replace every `grade: null`; a question with a null grade left is not stored.
# The judge's grades are left out on purpose: label without seeing them.
# The correction assumes these questions are a random sample (--sample): label all of them.
"""


def relevance_label_set(run_id: int) -> str:
    """The label-set name under which people's grades of a run's chunks are stored.

    >>> relevance_label_set(7)
    'run-7-relevance'
    """
    return RELEVANCE_LABEL_SET.format(id=run_id)


def label_item_id(question_id: str, chunk_id: str) -> str:
    """The store's item id of one (question, chunk) pair: a JSON list, so no id can collide.

    >>> label_item_id("q 1", "doc.md#2")
    '["q 1", "doc.md#2"]'
    >>> parse_label_item_id(label_item_id("a,b", "c")) == ("a,b", "c")
    True
    """
    return json.dumps([question_id, chunk_id])


def parse_label_item_id(item_id: str) -> tuple[str, str] | None:
    """``(question id, chunk id)`` from :func:`label_item_id`, or None for another shape.

    >>> parse_label_item_id('["q", "c"]'), parse_label_item_id("q")
    (('q', 'c'), None)
    """
    try:
        value = json.loads(item_id)
    except ValueError:
        return None
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value[0], value[1]
    return None


def judge_grades(store: Store, run_id: int) -> dict[str, dict[str, int]]:
    """The judge's stored grades of a run: question id -> chunk id -> 0-3 (failures left out).

    >>> with Store.memory() as store:
    ...     judge_grades(store, 1)
    {}
    """
    out: dict[str, dict[str, int]] = {}
    for (item_id, chunk_id), entry in store.judge_verdicts(run_id, "relevance").items():
        verdict = entry.get("verdict")
        if verdict is not None:
            out.setdefault(item_id, {})[chunk_id] = int(verdict["grade"])
    return out


def people_grades(
    store: Store, run_id: int, judged: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    """People's stored grades on the *fully* labelled questions (every chunk of ``judged``).

    A question one of whose judge-graded chunks has no label (the judge graded more since)
    is left out: half a question would mix people's and the judge's grades.
    """
    stored: dict[str, dict[str, int]] = {}
    name = relevance_label_set(run_id)
    for item_id, label in store.labels(name).items():
        pair = parse_label_item_id(item_id)
        if pair is None:
            continue  # not written by an import; nothing of this set's shape
        if label not in {str(g) for g in GRADES}:
            raise EvaluationError(
                f"label set {name}: item {item_id} has label {label!r}, not a grade 0-3; "
                "re-import the relevance labels file"
            )
        stored.setdefault(pair[0], {})[pair[1]] = int(label)
    return {
        question: {chunk: stored[question][chunk] for chunk in chunks}
        for question, chunks in judged.items()
        if chunks and question in stored and all(c in stored[question] for c in chunks)
    }


@dataclass(frozen=True)
class RelevanceLabelExport:
    """What ``export`` wrote: questions and chunks, out of how many eligible questions."""

    run: RunInfo
    path: Path
    questions: int
    chunks: int
    eligible: int
    seed: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.id,
            "path": str(self.path),
            "questions": self.questions,
            "chunks": self.chunks,
            "eligible": self.eligible,
            "seed": self.seed,
        }


def _chunk_rows(store: Store, run: RunInfo, judged: Mapping[str, Mapping[str, int]]) -> Any:
    """question id -> (question text, [(chunk id, doc, text)] in rank order)."""
    cases, keys, _ = relevance_cases(store, run)
    texts = {keys[case.id]: case.chunk for case in cases}
    questions = {keys[case.id][0]: case.question for case in cases}
    rows: dict[str, tuple[str, list[tuple[str, str, str | None]]]] = {}
    for result in store.results(run.id):
        graded = judged.get(result.item_id)
        if not graded:
            continue
        seen: set[str] = set()
        chunks = []
        for hit in result.hits:
            if hit.id in graded and hit.id not in seen:
                seen.add(hit.id)
                chunks.append((hit.id, hit.doc, texts.get((result.item_id, hit.id))))
        question = questions.get(result.item_id, "")
        rows[result.item_id] = (question, chunks)
    return rows


def export_relevance_labels(
    store: Store,
    run_ref: int | str,
    path: str | Path,
    *,
    sample: int | None = None,
    seed: int = 0,
    unlabelled_only: bool = False,
    overwrite: bool = False,
) -> RelevanceLabelExport:
    """Write the judge-graded chunks of a run (``grade: null``) to a YAML file for people.

    ``sample`` draws that many questions uniformly at random (``random.Random(seed)``)
    among the questions with judge-graded chunks; ``unlabelled_only`` draws among those
    not yet fully labelled. An existing file is kept unless ``overwrite`` (it may hold
    grades not imported yet).
    """
    run = store.get_run(run_ref)
    target = Path(path)
    refuse_existing(
        target, overwrite=overwrite, kind=_KIND, holds="grades", error=RelevanceLabelError
    )
    judged = judge_grades(store, run.id)
    rows = _chunk_rows(store, run, judged)
    if not rows:
        raise RelevanceLabelError(
            f"run {run.id} ({run.name}) has no judge-graded chunks: "
            f"run `ragmeter judge relevance {run.id}` first"
        )
    eligible = list(rows)
    if unlabelled_only:
        done = people_grades(store, run.id, judged)
        eligible = [q for q in eligible if q not in done]
    chosen = draw_sample(eligible, sample, seed=seed)
    questions = [
        {
            "id": item_id,
            "question": rows[item_id][0],
            "chunks": [
                {"id": chunk, "doc": doc, "text": text, "grade": None}
                for chunk, doc, text in rows[item_id][1]
            ],
        }
        for item_id in chosen
    ]
    document: dict[str, Any] = {"run": run.id, "label_set": relevance_label_set(run.id)}
    if sample is not None:
        document["sample"] = {"drawn": len(chosen), "of": len(eligible), "seed": seed}
    document["questions"] = questions
    write_labels_file(target, _HEADER + _dump(document), kind=_KIND, error=RelevanceLabelError)
    return RelevanceLabelExport(
        run=run,
        path=target,
        questions=len(questions),
        chunks=sum(len(q["chunks"]) for q in questions),
        eligible=len(eligible),
        seed=seed if sample is not None else None,
    )


def _dump(document: Mapping[str, Any]) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: Any, value: str) -> Any:
        # Chunk texts read as they are: multi-line ones as a block, when YAML allows it.
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    dumped: str = yaml.dump(
        dict(document), Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100
    )
    return dumped
