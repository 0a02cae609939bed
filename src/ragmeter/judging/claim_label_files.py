"""Claim labels files: export a run's claims for people to label, import their decisions.

The library behind ``ragmeter judge claim-labels export|import`` (issue 17.2 for claims).
:func:`export_claim_labels` writes a YAML file of a run's claims-judged questions — question,
answer, reference answer, chunks (id, relevant, text) and the judge's claims with every
decision left ``null``. :func:`import_claim_labels` checks a filled file against the run's
stored claims verdicts and stores the fully labelled questions
(:meth:`ragmeter.store.Store.save_claim_labels`);
:func:`ragmeter.judging.corrected_claims.corrected_claims` then corrects the run's claim
metrics with them.

The correction (prediction-powered inference) assumes the labelled questions are a
**uniform random sample** of the judged ones: ``--sample N`` draws one with a seed. Drawing
the next N among the not yet labelled (``unlabelled_only``) keeps the union a uniform
sample (sampling without replacement, in rounds). Hand-picked questions — the ones that
looked wrong — would bias the correction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import ClaimLabelError, located
from ragmeter.formats.label_files import draw_sample, refuse_existing, write_labels_file
from ragmeter.formats.strict_yaml import load_yaml
from ragmeter.formats.text import decode_utf8
from ragmeter.gold.edits import DEFAULT_USER
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge.claims import ClaimsVerdict
from ragmeter.judging.claim_labels import ClaimLabels, blank_entry, read_entry

__all__ = [
    "DEFAULT_SEED",
    "KIND",
    "ClaimLabelExport",
    "ClaimLabelImport",
    "JudgedQuestion",
    "claims_verdicts",
    "export_claim_labels",
    "import_claim_labels",
    "judged_questions",
]

KIND = "claim labels"
#: ``--seed`` when none is given: the same run and N always draw the same questions.
DEFAULT_SEED = 0
#: Problems named in one import error before "and N more".
_SHOWN_PROBLEMS = 20
_JUDGE = "claims"

_HEADER = """\
# ragmeter claim labels: run {run} ({name}), claims judged by {judge}.
# For each answer claim: supported_by = ids of the chunks that entail it ([] = none),
#   correct = true/false: the reference answer entails it (only when there is a reference).
# For each reference claim: in_chunks = ids of the chunks that entail it ([] = none),
#   in_answer = true/false: the answer entails it.
# Replace every null, then: ragmeter judge claim-labels import {run} FILE
# A question with any null left is not stored. Do not edit the claims themselves.
"""


@dataclass(frozen=True)
class JudgedQuestion:
    """One claims-judged question of a run: the judge's verdict and the context it read."""

    item_id: str
    verdict: ClaimsVerdict
    chunk_ids: tuple[str, ...]
    chunk_texts: tuple[str, ...]
    question: str
    answer: str
    reference: str | None


def claims_verdicts(store: Any, run_id: int) -> dict[str, ClaimsVerdict]:
    """The run's stored claims verdicts by question (questions the judge failed on left out).

    >>> from ragmeter.store import Store
    >>> with Store.memory() as store:
    ...     claims_verdicts(store, 1)
    {}
    """
    return {
        item: ClaimsVerdict.from_dict(entry["verdict"])
        for (item, _), entry in store.judge_verdicts(run_id, _JUDGE).items()
        if entry.get("verdict") is not None
    }


def judged_questions(store: Any, run_id: int) -> dict[str, JudgedQuestion]:
    """The run's questions with a claims verdict, in the run's order (judge failures left out).

    Raises ``ClaimLabelError`` when a stored verdict does not fit its question's stored
    context (another number of chunks): labels could not be matched to its decisions.

    >>> from ragmeter.store import Store
    >>> with Store.memory() as store:
    ...     judged_questions(store, 1)
    {}
    """
    verdicts = claims_verdicts(store, run_id)
    if not verdicts:
        return {}
    run = store.get_run(run_id)
    gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
    items = {item.id: item for item in gold}
    out: dict[str, JudgedQuestion] = {}
    for result in store.results(run_id):
        verdict = verdicts.get(result.item_id)
        if verdict is None:
            continue
        context = list(result.extra.get("context") or [])
        if len(context) != len(verdict.relevant):
            raise ClaimLabelError(
                f"run {run_id} question {result.item_id}: the claims verdict has "
                f"{len(verdict.relevant)} chunks but the stored context {len(context)}; "
                f"judge the run again (ragmeter judge claims {run_id})"
            )
        item = items.get(result.item_id)
        out[result.item_id] = JudgedQuestion(
            item_id=result.item_id,
            verdict=verdict,
            chunk_ids=tuple(str(c.get("id")) for c in context),
            chunk_texts=tuple(str(c.get("text") or "") for c in context),
            question=item.question if item is not None else "",
            answer=result.answer or "",
            reference=item.reference_answer if item is not None else None,
        )
    return out


def _judged_or_fail(store: Any, run: Any) -> dict[str, JudgedQuestion]:
    judged = judged_questions(store, run.id)
    if not judged:
        raise ClaimLabelError(
            f"run {run.id} ({run.name}) has no claims verdicts: judge it first with "
            f"`ragmeter judge claims {run.id}` (add --lexical for the offline judge)"
        )
    return judged


def _judge_name(store: Any, run_id: int) -> str:
    config = store.judge_runs(run_id).get(_JUDGE, {}).get("config", {})
    model = config.get("model") or "an unknown judge"
    version = config.get("prompt_version")
    return f"{model} ({version})" if version else str(model)


@dataclass(frozen=True)
class ClaimLabelExport:
    """What an export wrote: the run, the questions, and the population they came from."""

    run_id: int
    path: Path
    items: tuple[str, ...]
    population: int
    requested: int | None
    already_labelled: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "path": str(self.path),
            "items": list(self.items),
            "population": self.population,
            "requested": self.requested,
            "already_labelled": self.already_labelled,
        }


def export_claim_labels(
    store: Any,
    run_ref: int | str,
    out: str | Path,
    *,
    sample: int | None = None,
    seed: int = DEFAULT_SEED,
    unlabelled_only: bool = False,
    overwrite: bool = False,
) -> ClaimLabelExport:
    """Write a labels file of the run's claims-judged questions, every decision ``null``.

    ``sample`` draws that many questions uniformly at random (``random.Random(seed)``) from
    the judged ones — the not yet labelled ones with ``unlabelled_only`` — and writes them
    in the run's order; without it every question is written. Asking for more than there
    are writes them all (``population`` says how many there were). An existing file is
    kept (it may hold labels not imported yet) unless ``overwrite``.
    """
    if sample is not None and sample < 1:
        raise ClaimLabelError(f"--sample must be at least 1, got {sample}")
    path = Path(out)
    refuse_existing(path, overwrite=overwrite, kind=KIND, holds="labels", error=ClaimLabelError)
    run = store.get_run(run_ref)
    judged = _judged_or_fail(store, run)
    labelled = set(store.claim_labels(run.id))
    pool = [i for i in judged if not (unlabelled_only and i in labelled)]
    picked = draw_sample(pool, sample, seed=seed)
    entries = [
        blank_entry(
            q.item_id,
            q.verdict,
            chunk_ids=q.chunk_ids,
            question=q.question,
            answer=q.answer,
            reference=q.reference,
            chunk_texts=q.chunk_texts,
        )
        for q in (judged[i] for i in picked)
    ]
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    body = yaml.dump(
        {"run": run.id, "questions": entries},
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    header = _HEADER.format(run=run.id, name=run.name, judge=_judge_name(store, run.id))
    write_labels_file(path, header + body, kind=KIND, error=ClaimLabelError)
    return ClaimLabelExport(
        run_id=run.id,
        path=path,
        items=tuple(picked),
        population=len(pool),
        requested=sample,
        already_labelled=len(labelled & set(judged)),
    )


@dataclass(frozen=True)
class ClaimLabelImport:
    """What an import stored: new, changed and equal questions, and the unfinished ones."""

    run_id: int
    stored: int
    updated: int
    unchanged: int
    not_fully_labelled: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "stored": self.stored,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "not_fully_labelled": list(self.not_fully_labelled),
        }


def _read_file(path: Path) -> tuple[list[Any], Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ClaimLabelError(located(KIND, path, None, f"cannot read: {exc}")) from None
    value, _ = load_yaml(
        decode_utf8(data, path, KIND, ClaimLabelError), path, KIND, ClaimLabelError
    )
    if not isinstance(value, dict) or not isinstance(value.get("questions"), list):
        raise ClaimLabelError(
            located(KIND, path, None, "expected a mapping with a `questions` list "
                    "(write one with `ragmeter judge claim-labels export`)")
        )  # fmt: skip
    return list(value["questions"]), value.get("run")


def _problems_message(path: Path, problems: Sequence[str]) -> str:
    shown = [located(KIND, path, None, p) for p in problems[:_SHOWN_PROBLEMS]]
    more = len(problems) - len(shown)
    tail = [f"... and {more} more"] if more > 0 else []
    return "\n".join([*shown, *tail, "nothing was stored; fix the file and import it again"])


def _check(
    questions: Sequence[Any], judged: Mapping[str, JudgedQuestion], run: Any
) -> tuple[dict[str, ClaimLabels], list[str], list[str]]:
    labels: dict[str, ClaimLabels] = {}
    unfinished: list[str] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, entry in enumerate(questions, start=1):
        item_id = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(item_id, str) or not item_id:
            problems.append(f"question {number}: missing its `id`")
            continue
        where = f"question {item_id}"
        if item_id in seen:
            problems.append(f"{where}: listed twice")
            continue
        seen.add(item_id)
        question = judged.get(item_id)
        if question is None:
            problems.append(f"{where}: not a claims-judged question of run {run.id} ({run.name})")
            continue
        try:
            got = read_entry(entry, question.verdict, chunk_ids=question.chunk_ids, where=where)
        except ClaimLabelError as exc:
            problems.extend(str(exc).split("\n"))
            continue
        if got is None:
            unfinished.append(item_id)
        else:
            labels[item_id] = got
    return labels, unfinished, problems


def import_claim_labels(
    store: Any, run_ref: int | str, path: str | Path, *, who: str = DEFAULT_USER
) -> ClaimLabelImport:
    """Check a filled labels file against the run's claims verdicts and store it.

    Every problem in the file — an unknown question, claims that no longer match the stored
    judge's (the run was re-judged), a chunk id not among the question's chunks, a value of
    the wrong type — is named (file, question, claim, field) in one ``ClaimLabelError``, and
    nothing is stored. A question with a decision still ``null`` is not stored and is listed
    in ``not_fully_labelled``. Importing the same file again changes nothing.
    """
    path = Path(path)
    questions, file_run = _read_file(path)
    run = store.get_run(run_ref)
    if file_run is not None and file_run != run.id:
        raise ClaimLabelError(
            located(KIND, path, None, f"these are labels of run {file_run!r}, not of run "
                    f"{run.id} ({run.name}): import them into that run")
        )  # fmt: skip
    judged = _judged_or_fail(store, run)
    labels, unfinished, problems = _check(questions, judged, run)
    if problems:
        raise ClaimLabelError(_problems_message(path, problems))
    counts = store.save_claim_labels(
        run.id, {i: value.to_dict() for i, value in labels.items()}, who=who
    )
    return ClaimLabelImport(run_id=run.id, **counts, not_fully_labelled=tuple(unfinished))
