"""Labelling by hand in a terminal, and printing a calibration result.

The terminal I/O is injected (``ask``, ``show``), so the same loop serves the CLI
and tests. Labels are saved one by one: Ctrl-C keeps every label given so far.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ragmeter.judge.calibration import Calibration, CalibrationItem

__all__ = ["label_items", "print_calibration"]

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


def print_calibration(result: Calibration, batch: Any, show: Callable[[str], Any]) -> None:
    """Agreement, kappa, the confusion matrix and the disagreements, as text."""
    kappa = "undefined" if result.kappa is None else f"{result.kappa:.3f}"
    show(f"judge: {batch.judge.get('model')} ({batch.judge.get('prompt_version')})")
    show(f"items judged: {result.n}   agreement: {result.agreement:.3f}   kappa: {kappa}")
    labels = list(result.confusion)
    show("confusion (rows: people, columns: judge)")
    show(" " * 14 + "".join(f"{label:>14}" for label in labels))
    for human in labels:
        counts = "".join(f"{result.confusion[human].get(j, 0):>14}" for j in labels)
        show(f"{human:>14}{counts}")
    if result.disagreements:
        show("disagreements:")
        for d in result.disagreements:
            show(f"  {d.id}: people {d.human}, judge {d.judge}. {d.reason}".rstrip())
    for item_id in result.missing:
        show(f"  no verdict for {item_id}: {batch.errors.get(item_id, 'not judged')}")
    show(("FLAGGED: " if result.flagged else "") + result.verdict)
