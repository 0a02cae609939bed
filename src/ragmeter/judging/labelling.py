"""Labelling by hand in a terminal, and printing a calibration result.

The terminal I/O is injected (``ask``, ``show``), so the same loop serves the CLI
and tests. Labels are saved one by one: Ctrl-C keeps every label given so far.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ragmeter.judging.calibration import CONFIDENCE, Calibration, CalibrationItem, Suggestion

__all__ = ["label_items", "print_calibration", "print_suggestions"]

_ANSWERS = {"y": "supported", "yes": "supported", "n": "unsupported", "no": "unsupported"}


def label_items(
    items: Sequence[CalibrationItem],
    *,
    store: Any,
    set_name: str,
    ask: Callable[[str], str],
    show: Callable[[str], Any],
    relabel: bool = False,
) -> int:
    """Show each item and ask "supported? [y/n/s/q]"; returns how many labels were saved.

    >>> from ragmeter.store import Store
    >>> item = CalibrationItem("a", "How long?", ("Refunds within 30 days.",), "30 days")
    >>> with Store.memory() as store:
    ...     label_items([item], store=store, set_name="s", ask=lambda p: "y", show=lambda t: None)
    ...     store.labels("s")
    1
    {'a': 'supported'}
    """
    existing = store.labels(set_name)
    saved = 0
    todo = [item for item in items if relabel or item.id not in existing]
    try:
        for number, item in enumerate(todo, start=1):
            show(f"\n[{number}/{len(todo)}] {item.id}")
            show(f"QUESTION: {item.question}")
            for index, text in enumerate(item.context, start=1):
                show(f"CONTEXT [{index}]: {text}")
            show(f"ANSWER: {item.answer}")
            while True:
                reply = ask("Is every claim supported by the context? [y/n/s=skip/q=quit]")
                reply = reply.strip().lower()
                if reply in _ANSWERS:
                    store.save_labels(set_name, {item.id: _ANSWERS[reply]})
                    saved += 1
                    break
                if reply in ("s", "skip", ""):
                    break
                if reply in ("q", "quit"):
                    return saved
    except (KeyboardInterrupt, EOFError):
        show(f"\nstopped: {saved} label(s) kept")
    return saved


def _span(interval: Any) -> str:
    return "undefined" if interval is None else f"{interval[0]:.3f}-{interval[1]:.3f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_calibration(result: Calibration, batch: Any, show: Callable[[str], Any]) -> None:
    """Agreement and kappa with their intervals, the confusion matrix, precision and
    recall per label, the disagreements, the corrected faithfulness, as text."""
    kappa = "undefined" if result.kappa is None else f"{result.kappa:.3f}"
    show(f"judge: {batch.judge.get('model')} ({batch.judge.get('prompt_version')})")
    show(f"items judged: {result.n}   agreement: {result.agreement:.3f}   kappa: {kappa}")
    show(
        f"{CONFIDENCE:.0%} intervals: agreement {_span(result.agreement_interval)} (Wilson), "
        f"kappa {_span(result.kappa_interval)} (bootstrap)"
    )
    labels = list(result.confusion)
    show("confusion (rows: people, columns: judge)")
    show(" " * 14 + "".join(f"{label:>14}" for label in labels))
    for human in labels:
        counts = "".join(f"{result.confusion[human].get(j, 0):>14}" for j in labels)
        show(f"{human:>14}{counts}")
    show(f"{'per label':>14}{'precision':>14}{'recall':>14}{'people':>14}")
    for label, row in result.per_label.items():
        precision, recall = row["precision"], row["recall"]
        show(f"{label:>14}{_share(precision):>14}{_share(recall):>14}{row['support']:>14}")
    if result.disagreements:
        show("disagreements:")
        for d in result.disagreements:
            show(f"  {d.id}: people {d.human}, judge {d.judge}. {d.reason}".rstrip())
    for item_id in result.missing:
        show(f"  no verdict for {item_id}: {batch.errors.get(item_id, 'not judged')}")
    if result.faithful is not None:
        show(f"faithful on this set: {result.faithful.describe()}")
    prefix = {"flagged": "FLAGGED: ", "too_few_labels": "UNDECIDED: "}.get(result.status, "")
    show(prefix + result.verdict)


def print_suggestions(suggestions: Sequence[Suggestion], show: Callable[[str], Any]) -> None:
    """The items to label next, most disagreement-prone first."""
    if not suggestions:
        show("no unlabelled item to suggest: every judged item has a label")
        return
    show("label next (chance people disagree with the judge, from the labelled items):")
    for s in suggestions:
        show(f"  {s.id}: judge says {s.judge}; disagreement {s.disagreement:.2f}")
