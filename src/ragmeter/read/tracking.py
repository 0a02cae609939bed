"""A read run logged to an experiment tracker (MLflow), issue 25.1: the parameters, metrics
and per-question CSV of its report, and its static HTML report, all from one
:class:`~ragmeter.read.view.RunView`, so the tracker holds what ``show`` and
``ragmeter report`` say. ``ragmeter eval --log-to mlflow`` and ``ragmeter export RUN --to
mlflow`` call :func:`log_view`; the MLflow side (names, params, the client) is
:mod:`ragmeter.evaluation.tracking`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragmeter.errors import ConfigError
from ragmeter.evaluation.tracking import (
    DEFAULT_EXPERIMENT,
    HTML_ARTIFACT,
    TRACKERS,
    Logged,
    log_to_mlflow,
)
from ragmeter.read.static_report import render_static_report
from ragmeter.read.view import RunView, read_run

if TYPE_CHECKING:
    from ragmeter.store import Store

__all__ = ["log_stored_run", "log_view"]


def log_view(
    view: RunView,
    *,
    tracking_uri: str | None = None,
    experiment: str = DEFAULT_EXPERIMENT,
    artifacts: Mapping[str, str] | None = None,
) -> Logged:
    """Log a read run to MLflow: its report's params, metrics and CSV, and its static HTML
    report as :data:`~ragmeter.evaluation.tracking.HTML_ARTIFACT` (``artifacts`` adds more
    files, by name and text).

    >>> log_view(ragmeter.read_run(store, "latest")).run_id  # doctest: +SKIP
    """
    html = {HTML_ARTIFACT: render_static_report(view).html}
    return log_to_mlflow(
        view.report,
        tracking_uri=tracking_uri,
        experiment=experiment,
        artifacts=html | dict(artifacts or {}),
    )


def log_stored_run(
    store: Store,
    run_ref: int | str,
    tracker: str = "mlflow",
    *,
    tracking_uri: str | None = None,
    experiment: str = DEFAULT_EXPERIMENT,
    artifacts: Mapping[str, str] | None = None,
) -> Logged:
    """Read run ``run_ref`` (:func:`~ragmeter.read.view.read_run`) and log it to ``tracker``
    with its static HTML report (:func:`log_view`).

    >>> with Store.open(".ragmeter/ragmeter.db") as store:  # doctest: +SKIP
    ...     log_stored_run(store, "latest", "mlflow").run_id
    """
    if tracker not in TRACKERS:
        raise ConfigError(f"unknown tracker {tracker!r} (known: {', '.join(TRACKERS)})")
    view = read_run(store, run_ref)
    return log_view(view, tracking_uri=tracking_uri, experiment=experiment, artifacts=artifacts)
