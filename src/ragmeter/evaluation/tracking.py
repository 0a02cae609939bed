"""Log a run to an experiment tracker (MLflow): parameters, metrics, the per-question CSV
and the static HTML report.

``ragmeter eval … --log-to mlflow`` and ``ragmeter export RUN --to mlflow`` call
:func:`log_to_mlflow`, which writes to whatever tracking URI MLflow is configured with
(``MLFLOW_TRACKING_URI``, or ``tracking_uri=``), in experiment ``ragmeter`` unless told.
The static HTML report (``ragmeter report``) is built a layer above this one, on the read
side: :func:`ragmeter.read.tracking.log_view` logs a read run with it (as
:data:`HTML_ARTIFACT`), and :func:`ragmeter.read.tracking.log_stored_run` reads a stored
run first.

Metric names: MLflow accepts letters, digits, ``_ - . / `` and space in a key, so ``hit@5``
is refused. :func:`mlflow_metric_name` rewrites each other character as a short escape
(``@`` → ``_at_``, ``=`` → ``_eq_``, ``(`` → ``_lp_``, ``)`` → ``_rp_``, ``,`` → ``_c_``,
anything else ``_xHH_`` by code point) and :func:`ragmeter_metric_name` turns it back;
the run also carries the exact mapping as the tag ``ragmeter.metric_names`` (JSON).

>>> mlflow_metric_name("hit@5"), mlflow_metric_name("P(rel=2)@5")
('hit_at_5', 'P_lp_rel_eq_2_rp__at_5')
>>> ragmeter_metric_name("P_lp_rel_eq_2_rp__at_5")
'P(rel=2)@5'
"""

from __future__ import annotations

import json
import math
import re
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.errors import ConfigError

if TYPE_CHECKING:
    from ragmeter.evaluation.report import RunReport

__all__ = [
    "DEFAULT_EXPERIMENT",
    "HTML_ARTIFACT",
    "TRACKERS",
    "Logged",
    "log_to_mlflow",
    "mlflow_metric_name",
    "ragmeter_metric_name",
]

TRACKERS = ("mlflow",)
DEFAULT_EXPERIMENT = "ragmeter"
# MLflow refuses longer parameter values on some backends; longer ones are cut and reported.
MAX_PARAM_CHARS = 500
CSV_ARTIFACT = "per_question.csv"
#: The file name the static HTML report is logged under (issue 18.3).
HTML_ARTIFACT = "report.html"

_ESCAPES = {"@": "at", "=": "eq", "(": "lp", ")": "rp", ",": "c"}
_UNESCAPES = {v: k for k, v in _ESCAPES.items()}
_SAFE = re.compile(r"[A-Za-z0-9_\-./ ]")
_ESCAPED = re.compile(r"_(at|eq|lp|rp|c|x[0-9a-f]{2,6})_")


def mlflow_metric_name(name: str) -> str:
    """The MLflow-safe spelling of a ragmeter metric name (reversible, see the module doc).

    >>> mlflow_metric_name("nDCG@10")
    'nDCG_at_10'
    """
    out = []
    for char in name:
        if _SAFE.fullmatch(char):
            out.append(char)
        elif char in _ESCAPES:
            out.append(f"_{_ESCAPES[char]}_")
        else:
            out.append(f"_x{ord(char):02x}_")
    safe = "".join(out)
    if ragmeter_metric_name(safe) != name:
        # A name already holding an escape-like run (say "a_at_b") would not come back.
        raise ConfigError(f"metric {name!r} has no reversible MLflow name ({safe!r})")
    return safe


def ragmeter_metric_name(safe: str) -> str:
    """Undo :func:`mlflow_metric_name`.

    >>> ragmeter_metric_name("recall_at_100")
    'recall@100'
    """

    def back(match: re.Match[str]) -> str:
        code = match.group(1)
        return _UNESCAPES.get(code) or chr(int(code[1:], 16))

    return _ESCAPED.sub(back, safe)


@dataclass(frozen=True)
class Logged:
    """Where a run went: the tracker's run id and URI, what was logged, and any warnings."""

    tracker: str
    run_id: str
    experiment_id: str
    tracking_uri: str
    params: Mapping[str, str]
    metrics: Mapping[str, float]
    artifacts: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary for ``--json``."""
        return {
            "tracker": self.tracker,
            "run_id": self.run_id,
            "experiment_id": self.experiment_id,
            "tracking_uri": self.tracking_uri,
            "params": dict(self.params),
            "metrics": dict(self.metrics),
            "artifacts": list(self.artifacts),
            "warnings": list(self.warnings),
        }


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
    elif isinstance(value, list | tuple):
        out[prefix] = json.dumps(list(value), default=str)
    elif value is not None:
        out[prefix] = value


def run_params(report: RunReport) -> tuple[dict[str, str], list[str]]:
    """The run's parameters as MLflow params: retriever (redacted by the store), k, level, …

    The run config (chunker, metrics, library versions when recorded, …) is flattened to
    dotted keys under ``config.``; values past ``MAX_PARAM_CHARS`` are cut and reported.
    """
    run = report.run
    flat: dict[str, Any] = {
        "retriever": run.retriever,
        "k": run.k,
        "level": run.level,
        "commit": run.commit,
        "gold_hash": run.gold_hash,
        "ragmeter_run_id": run.id,
        "ragmeter_run_name": run.name,
    }
    _flatten("config", dict(run.config), flat)
    params: dict[str, str] = {}
    warnings: list[str] = []
    for key, value in flat.items():
        if value is None:
            continue
        text = str(value)
        safe_key = "".join(c if _SAFE.fullmatch(c) else "_" for c in key)
        if len(text) > MAX_PARAM_CHARS:
            warnings.append(f"parameter {key} cut to {MAX_PARAM_CHARS} characters")
            text = text[:MAX_PARAM_CHARS]
        params[safe_key] = text
    return params, warnings


def _client(tracking_uri: str | None) -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as e:
        raise ConfigError(
            "--log-to mlflow needs MLflow: pip install 'ragmeter[mlflow]' (mlflow-skinny)"
        ) from e
    return MlflowClient(tracking_uri=tracking_uri)


def log_to_mlflow(
    report: RunReport,
    *,
    tracking_uri: str | None = None,
    experiment: str = DEFAULT_EXPERIMENT,
    artifacts: Mapping[str, str] | None = None,
) -> Logged:
    """Log ``report`` as one MLflow run: params, metrics (safe names), per-question CSV.

    ``artifacts`` maps more file names to their text, logged beside the CSV (the CLI passes
    the static HTML report as ``{HTML_ARTIFACT: html}``).

    >>> logged = log_to_mlflow(report, tracking_uri="sqlite:///mlflow.db")  # doctest: +SKIP
    >>> logged.metrics["hit_at_5"]  # doctest: +SKIP
    0.83
    """
    client = _client(tracking_uri)  # first: a missing extra is named before anything else
    extra = dict(artifacts or {})
    for name in extra:
        if Path(name).name != name or name in ("", ".", "..", CSV_ARTIFACT):
            raise ConfigError(f"artifact name {name!r} must be a plain file name, not the CSV's")
    from mlflow.entities import Metric, Param, RunTag

    from ragmeter.evaluation.export import export_run

    found = client.get_experiment_by_name(experiment)
    experiment_id = (
        found.experiment_id if found is not None else client.create_experiment(experiment)
    )
    params, warnings = run_params(report)
    metrics: dict[str, float] = {}
    names: dict[str, str] = {}
    for name, value in report.metrics.items():
        if value is None or not math.isfinite(value):
            warnings.append(f"metric {name} has no finite value; not logged")
            continue
        safe = mlflow_metric_name(name)
        names[safe] = name
        metrics[safe] = float(value)
    metrics["n_questions"] = float(report.n_questions)
    metrics["n_errors"] = float(report.n_errors)
    tags = {
        "ragmeter.metric_names": json.dumps(names, sort_keys=True),
        "ragmeter.run_status": report.run.status,
        "mlflow.note.content": report.run.note,
    }
    run = client.create_run(experiment_id, run_name=report.run.name, tags=tags)
    run_id = run.info.run_id
    try:
        stamp = int(time.time() * 1000)
        client.log_batch(
            run_id,
            metrics=[Metric(k, v, stamp, 0) for k, v in metrics.items()],
            params=[Param(k, v) for k, v in params.items()],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / CSV_ARTIFACT
            export_run(report, "csv", path)
            client.log_artifact(run_id, str(path))
            for name, text in extra.items():
                file = Path(folder) / name
                file.write_text(text, encoding="utf-8")
                client.log_artifact(run_id, str(file))
    except BaseException:
        client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id)
    return Logged(
        tracker="mlflow",
        run_id=run_id,
        experiment_id=str(experiment_id),
        tracking_uri=str(client.tracking_uri),
        params=params,
        metrics=metrics,
        artifacts=(CSV_ARTIFACT, *extra),
        warnings=tuple(warnings) + tuple(report.warnings),
    )
