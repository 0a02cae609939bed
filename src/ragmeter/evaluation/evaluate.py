"""``evaluate()``: run every gold question through a retriever and keep the truth.

Orchestration only: concurrency, timing, error rows, streaming results to the
store, resume, and the final scoring (``scoring.py``). Every result is written
to the store as it arrives, so an interrupted run keeps what it had and
``evaluate(..., resume=run_id)`` finishes it without repeating finished questions, with
the run's own settings and inputs (another value given is refused: ``resumed.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal, NoReturn

from ragmeter.errors import (
    ConfigError,
    EvaluationError,
    RagmeterError,
    RunInterruptedError,
    StoreError,
)
from ragmeter.evaluation import unknowns
from ragmeter.evaluation.answering import with_generator
from ragmeter.evaluation.finish import Tally, finish_scored, quiet_collector
from ragmeter.evaluation.passages import check_min_overlap
from ragmeter.evaluation.per_question import QuestionPath
from ragmeter.evaluation.report import RunReport, finalize_run
from ragmeter.evaluation.resumed import check_resumed, check_resumed_gold, checked_call
from ragmeter.evaluation.scoring import Judgments, Level, default_level
from ragmeter.evaluation.setup import (
    RetrieverSetup,
    RunSettings,
    check_documents,
    check_metrics,
    gold_documents,
    min_overlap_of,
    one_spelling,
    with_corpus,
)
from ragmeter.evaluation.versions import git_commit
from ragmeter.executors.base import Executor, LocalExecutor
from ragmeter.executors.local import DEFAULT_CONCURRENCY, Outcome
from ragmeter.executors.writer import BatchWriter
from ragmeter.gold.goldset import GoldItem, GoldSet
from ragmeter.run import QuestionResult, RunInfo
from ragmeter.store import Store

__all__ = ["DEFAULT_K", "Progress", "evaluate", "retrieval_work"]

DEFAULT_K = 10

Progress = Callable[[int, int, QuestionResult], None]
"""Called after each question: (done, total, result)."""


@dataclass
class _Plan:
    gold: GoldSet
    run: RunInfo
    pending: list[GoldItem]
    judgments: Judgments
    already_done: int = 0
    extra_config: dict[str, Any] = field(default_factory=dict)
    resumed: bool = False  # the run has stored rows a re-run question replaces


def _as_gold(gold: GoldSet | str | Path | None) -> GoldSet:
    if gold is None:  # only a resume may leave it to the run's stored gold set
        raise ConfigError("a new run needs a gold set")
    if isinstance(gold, GoldSet):
        return gold
    from ragmeter.gold.files import load_gold  # only a file needs it (issue 29.2)

    return load_gold(gold)


def _executor_for(choice: str | Executor, ray_address: str | None) -> Executor:
    """``executors.ray.executor_for``; the default without importing that module (issue 29.2)."""
    if isinstance(choice, str) and choice == "local" and ray_address is None:
        return LocalExecutor()
    from ragmeter.executors.ray import executor_for

    return executor_for(choice, ray_address=ray_address)


def retrieval_work(retriever: Any, k: int) -> tuple[Callable[[GoldItem], Any], bool]:
    """The per-question call (hits plus any answer), and whether it is a coroutine function."""
    from ragmeter.retrievers import RetrievalOutput, coerce_hits

    source = getattr(retriever, "spec", type(retriever).__name__)
    if getattr(retriever, "by_item_id", False):

        def lookup(item: GoldItem) -> RetrievalOutput:
            raw = retriever.retrieve_for(item.id, item.question, k)
            return RetrievalOutput(hits=coerce_hits(raw, source=source))

        return lookup, False
    if getattr(retriever, "is_async", False):

        async def call_async(item: GoldItem) -> RetrievalOutput:
            if hasattr(retriever, "aretrieve_full"):
                return await retriever.aretrieve_full(item.question, k)  # type: ignore[no-any-return]
            raw = await retriever.aretrieve(item.question, k)
            return RetrievalOutput(hits=coerce_hits(raw, source=source))

        return call_async, True

    full = getattr(retriever, "retrieve_full", None)
    if full is not None:  # looked up once, not a question (issue 29.2)

        def call_full(item: GoldItem) -> RetrievalOutput:
            return full(item.question, k)  # type: ignore[no-any-return]

        return call_full, False

    def call(item: GoldItem) -> RetrievalOutput:
        return RetrievalOutput(
            hits=coerce_hits(retriever.retrieve(item.question, k), source=source)
        )

    return call, False


def evaluate(
    gold: GoldSet | str | Path,
    retriever: Any,
    *,
    k: int = DEFAULT_K,
    name: str | None = None,
    note: str = "",
    store: Store | None = None,
    level: Level | None = None,
    metrics: Sequence[str] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    resume: int | str | None = None,
    progress: Progress | None = None,
    commit: str | None = None,
    generator: Any = None,
    executor: Literal["local", "ray"] | Executor = "local",
    ray_address: str | None = None,
    corpus: Any = None,
    min_overlap: float | None = None,
) -> RunReport:
    """Evaluate ``retriever`` on every question of ``gold`` and store the run.

    ``retriever`` is a spec (``"bm25"``, ``"mymod:search"``, ``"http://…"``,
    ``"run:file.trec"``), a callable ``(question, k) -> hits`` (sync or async) or a
    retriever object; a ``RetrieverSetup`` wraps one with what the spec layer knows
    about it (spec, config, corpus chunks). ``level`` defaults to ``"doc"`` when the gold
    set names only documents, else ``"passage"`` (see ``docs/levels.md``); a passage-level
    run whose hits carry neither text nor spans is scored at ``"doc"`` level, with a
    warning; ``"chunk"`` needs ``RetrieverSetup(chunks=...)`` (the corpus's chunks) unless the
    gold set lists chunks only. What cannot be computed is absent with a stored warning, never
    0 (``ragmeter.evaluation.unknowns``). Retrieval errors become error rows; the run goes on.
    The run's config keeps the library versions that shaped it (``config["versions"]``).

    ``corpus`` (a folder or JSONL path, a ``Corpus``, or ``{doc id: Document}``) is
    ``--corpus``: hits' spans are read from its documents and absolute paths under a corpus
    folder become corpus-relative ids; for a chunk whose text is its document's text at its
    span it changes nothing. ``min_overlap`` is the coverage rule's share (default 0.5,
    ``docs/levels.md``).

    ``generator`` (a spec such as ``"mymod:answer"`` or ``"http://…"``, a function
    ``(question, chunks) -> str | {"answer", "context_ids"}`` or a generator object,
    see ``ragmeter.evaluation.generation``) answers each question from its retrieved chunks;
    the answer and the context texts it used are stored with the question.

    ``executor="ray"`` (or an ``Executor`` object such as ``RayExecutor(address)``, see
    ``ragmeter.executors``) spreads the per-question work over a Ray cluster
    (``ray_address``, or a local one); results still stream back to this process,
    which writes them to the store, so resume works the same.

    >>> import ragmeter
    >>> gold = ragmeter.GoldSet.from_records([{"id": "q1", "question": "refunds?",
    ...     "relevant": [{"doc": "refunds.md"}]}])
    >>> report = ragmeter.evaluate(gold, lambda q, k: [{"doc": "faq.md"}, {"doc": "refunds.md"}])
    >>> report.metrics["mrr"]
    0.5
    """
    settings = RunSettings(
        k=k,
        name=name,
        note=note,
        level=level,
        metrics=metrics,
        min_overlap=min_overlap,
        concurrency=concurrency,
        timeout=timeout,
        resume=resume,
        commit=commit,
        executor=_executor_for(executor, ray_address),
    )
    setup = retriever if isinstance(retriever, RetrieverSetup) else RetrieverSetup(retriever)
    setup = checked_call(with_corpus(setup, corpus), store, resume, timeout)  # issue 24
    return evaluate_setup(gold, setup, settings, store=store, progress=progress,
                          generator=generator)  # fmt: skip


def evaluate_setup(
    gold: GoldSet | str | Path | None,
    setup: RetrieverSetup,
    settings: RunSettings,
    *,
    store: Store | None = None,
    progress: Progress | None = None,
    generator: Any = None,
) -> RunReport:
    """``evaluate()`` with its settings as one value: what the job runner calls (``gold``
    ``None`` on resume: the run's stored gold set; given, it must hold the same content)."""
    with quiet_collector() as kept:
        return _evaluate_setup(gold, setup, settings, store, progress, generator, kept)


def _evaluate_setup(
    gold: GoldSet | str | Path | None,
    setup: RetrieverSetup,
    settings: RunSettings,
    store: Store | None,
    progress: Progress | None,
    generator: Any,
    kept: Callable[[], AbstractContextManager[None]],
) -> RunReport:
    store = store if store is not None else Store.memory()
    k, metrics, min_overlap = settings.k, settings.metrics, settings.min_overlap
    retriever, spec = setup.retriever, setup.spec
    run_config = dict(setup.config)
    if min_overlap is not None:
        run_config["min_overlap"] = check_min_overlap(min_overlap)
    if metrics is not None:
        check_metrics(metrics, gold)
        run_config["metrics"] = list(metrics)
        if deeper := unknowns.deeper_than_k(metrics, k):  # a visible note (issue 24.4)
            run_config["warnings"] = [*(run_config.get("warnings") or []), *deeper]
    if generator is not None:
        from ragmeter.retrievers.http import redact_url

        # A URL's password never reaches the store (resume then asks for the spec again).
        run_config["generator"] = (
            redact_url(generator)
            if isinstance(generator, str)
            else str(getattr(generator, "spec", None) or getattr(generator, "__qualname__", "?"))
        )
    with kept():  # a gold set read, its judgments: no cycles, kept all run (issue 29.2)
        plan = _plan(store, gold, replace(setup, config=run_config), settings)
    k = plan.run.k  # a resumed run asks for as many hits as its first part did
    if metrics is None and plan.run.config.get("metrics"):
        metrics = list(plan.run.config["metrics"])
    from ragmeter.retrievers import as_retriever

    retriever_obj = (
        as_retriever(retriever)
        if isinstance(retriever, str)
        else as_retriever(retriever, spec=spec)
    )
    work, is_async = retrieval_work(retriever_obj, k)
    # Issue 14.3: retrieved doc ids that match nothing stop the run instead of scoring zeros.
    from ragmeter.retrievers.ids import IdCheck

    id_check = IdCheck.for_run(plan.gold, setup.documents, retriever_obj)
    work = id_check.guard(work, is_async)

    generator_obj = None
    if generator is not None:
        from ragmeter.evaluation.generation import resolve_generator

        generator_obj = resolve_generator(generator)
        work = with_generator(work, is_async, generator_obj)
    total = len(plan.gold)
    done = plan.already_done
    writer = BatchWriter[tuple[Any, ...]](partial(_write, store, plan.run.id, plan.resumed))
    row_of, run_id = store.result_row, plan.run.id
    # A fresh run keeps only what scoring and the report read of each result; a resumed
    # one is scored from the store at the end (issue 29.2).
    with kept():  # with the retriever: what the collector walks is what questions make
        tally = Tally.start(plan.gold, plan.judgments, k) if plan.already_done == 0 else None
        # Each result, its summary (once, for the store and for the report, issue 29.1), the
        # id check's count and the tally, in one way through the hits when it can (29.2).
        take = QuestionPath(plan.judgments, plan.run.k, plan.run.level, id_check, tally).take

    def on_outcome(outcome: Outcome[GoldItem, Any]) -> None:
        nonlocal done
        result, summary = take(outcome)
        # Its row now: what waits for the writer is plain values, not hits (issue 29.2).
        writer.put(row_of(run_id, result, summary))
        done += 1
        if progress is not None:
            progress(done, total, result)

    failure: BaseException | None = None
    try:
        settings.executor.run(
            plan.pending,
            work,
            concurrency=settings.concurrency,
            timeout=settings.timeout,
            on_outcome=on_outcome,
            is_async=is_async,
            failed=lambda: writer.error,  # a failed write stops the run at once
        )
    except BaseException as error:  # noqa: BLE001 - every way out marks the run interrupted
        failure = error
    try:
        writer.close()
    except BaseException as error:  # noqa: BLE001 - the first failure is the one reported
        failure = failure or error
    finally:
        # Close only what we opened: a retriever object passed in belongs to the caller.
        close = getattr(retriever_obj, "close", None)
        if isinstance(retriever, str) and callable(close):
            close()
        if generator_obj is not None and isinstance(generator, str):
            generator_obj.close()
    if failure is not None:
        _stop(store, plan.run.id, plan.already_done + writer.written, total, failure)
    id_warnings = id_check.finish(
        on_fail=lambda: store.finish_run(plan.run.id, "failed", n_questions=total, n_errors=0)
    )
    id_notes = id_check.notes
    if id_warnings or id_notes:  # stored on the run, so `show` prints them too
        config = dict(plan.run.config)
        for key, said in (("warnings", id_warnings), ("notes", id_notes)):
            if said:  # notes inform (ids mapped); only warnings count as ⚠
                config[key] = list(dict.fromkeys([*(config.get(key) or []), *said]))
        run = store.update_run(plan.run.id, config=config)
        plan = replace(plan, run=run)
    try:
        # Scoring and the report make some 200,000 containers and no cycles: not walked
        # while they are made, frozen after (thawed with the rest as evaluate returns).
        with kept():
            plan = _settle(store, plan, tally, retriever_obj)
            if tally is not None and tally.judgments.level == plan.judgments.level:
                report = finish_scored(store, plan.run.id, tally, metrics)
            else:  # resumed, or scored at another level than it ran at: from the store
                report = finalize_run(
                    store, plan.run.id, gold=plan.gold, metrics=metrics, judgments=plan.judgments
                )
    except StoreError as error:
        _stop(store, plan.run.id, plan.already_done + writer.written, total, error)
    if report.n_questions and report.n_errors == report.n_questions:
        raise EvaluationError(
            f"all {report.n_questions} questions failed; first error: {report.errors[0].error}"
        )
    return report


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _stop(store: Store, run_id: int, stored: int, total: int, failure: BaseException) -> NoReturn:
    """Mark a run that did not finish ``interrupted`` (resumable) and raise why it stopped.

    Ctrl-C stays a ``KeyboardInterrupt``; anything else (a store that is full or
    gone, a ``SystemExit`` raised by the retriever) becomes ``RunInterruptedError``
    (exit 3) with a one-line reason (issue 19.1, 19.11).
    """
    resume = f"resume with: ragmeter eval --resume {run_id}"
    try:
        store.finish_run(run_id, "interrupted", n_questions=total, n_errors=0)
    except RagmeterError as error:
        resume = f"the store could not mark it interrupted either ({error}); {resume}"
    where = f"run {run_id} stopped with {stored} of {total} questions stored"
    if isinstance(failure, KeyboardInterrupt):
        raise KeyboardInterrupt(_one_line(f"{where}; {resume}")) from failure
    if isinstance(failure, RagmeterError):
        reason = str(failure)
    else:
        reason = f"{type(failure).__name__}: {failure}".rstrip(": ")
    raise RunInterruptedError(_one_line(f"{where}: {reason}; {resume}")) from failure


def _write(store: Store, run_id: int, resumed: bool, batch: list[tuple[Any, ...]]) -> None:
    """Store a batch of result rows (``Store.result_row``); only a resumed run has earlier
    rows to replace (issue 29.2)."""
    store.add_result_rows(run_id, batch, replace=resumed)


def _settle(store: Store, plan: _Plan, tally: Tally | None, retriever: Any) -> _Plan:
    """Record what shaped the run: the level it is scored at (passage may fall back to
    doc), the library versions, and the warnings, all stored on the run."""
    from ragmeter.evaluation.versions import run_versions, version_differences

    if tally is not None:
        level, warnings = tally.settle()
    else:
        results = list(store.results(plan.run.id))
        level, warnings = plan.judgments.settle(results)
        warnings += unknowns.unknown_warnings(plan.gold, results, plan.run.k)
    versions = run_versions(retriever)
    before = plan.run.config.get("versions")
    if isinstance(before, Mapping) and version_differences(before, versions):
        changed = ", ".join(version_differences(before, versions))
        warnings.append(f"the run was resumed with other library versions: {changed}")
    known = list(plan.run.config.get("warnings") or [])
    config = {
        **plan.run.config,
        "versions": versions,
        "warnings": list(dict.fromkeys([*known, *warnings])),
    }
    if not config["warnings"]:
        del config["warnings"]
    run = store.update_run(plan.run.id, level=level, config=config)
    judgments = plan.judgments
    if level != judgments.level:
        judgments = Judgments.build(plan.gold, level)
    return replace(plan, run=run, judgments=judgments)


def _plan(
    store: Store, gold_in: GoldSet | str | Path | None, setup: RetrieverSetup, new_run: RunSettings
) -> _Plan:
    """The run to fill: a new one (``setup.config`` is merged into its config) or
    ``new_run.resume``, which keeps its own name, k and level."""
    chunks, documents, config = setup.chunks, setup.documents, setup.config
    if new_run.resume is not None:
        run = store.get_run(new_run.resume)
        told = {"level": new_run.level, "min_overlap": new_run.min_overlap,
                "name": new_run.name, "note": new_run.note or None}  # fmt: skip
        check_resumed(run, {**told, "k": new_run.k if new_run.k != DEFAULT_K else None})
        gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
        if gold_in is not None:  # a gold set given again must be the run's (issue 24)
            check_resumed_gold(run, _as_gold(gold_in), documents)
        check_documents(gold, documents)
        judgments = Judgments.build(
            gold,
            run.level,
            chunks=chunks,
            documents=gold_documents(gold, documents),
            min_overlap=min_overlap_of(run.config),
        )
        finished = store.completed_items(run.id, include_errors=False)
        pending = [item for item in gold if item.id not in finished]
        store.update_run(run.id, status="running")
        return _Plan(gold, run, pending, judgments, already_done=len(finished), resumed=True)

    gold = _as_gold(gold_in)
    if len(gold) == 0:
        raise ConfigError("the gold set has no questions")
    gold, *said = one_spelling(gold, documents)  # one document, one gold id (issue 24)
    check_documents(gold, documents)
    chosen_level: Level = new_run.level or default_level(gold)
    unknowns.check_chunk_level(gold, chosen_level, chunks)
    judgments = Judgments.build(
        gold,
        chosen_level,
        chunks=chunks,
        documents=gold_documents(gold, documents),
        min_overlap=min_overlap_of(config),
    )
    retriever = setup.spec or setup.retriever
    spec = retriever if isinstance(retriever, str) else getattr(retriever, "spec", None)
    spec = spec or getattr(retriever, "__qualname__", type(retriever).__name__)
    run_config = dict(getattr(retriever, "config", {}) or {})
    run_config.update(config or {})
    for key, lines in zip(("notes", "warnings"), said, strict=True):
        if lines:
            run_config[key] = [*(run_config.get(key) or []), *lines]
    store.save_gold(gold, gold.hashed_records())  # one conversion for hash and content
    run = store.create_run(
        name=new_run.name,
        note=new_run.note,
        gold_hash=gold.hash,
        retriever=str(spec),
        config=run_config,
        k=new_run.k,
        level=chosen_level,
        commit=new_run.commit if new_run.commit is not None else git_commit(),
    )
    return _Plan(gold, run, list(gold), judgments)
