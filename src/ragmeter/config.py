"""``ragmeter.toml``: project settings read from the working directory.

Only the CLI (and the pytest plugin) call :func:`load_config`; the library takes
every setting as an argument. This is the one place the file is read: the
``[judge]`` table (see :mod:`ragmeter.judge.config`) is checked here too and
handed to ``resolve_judge_config`` as ``Config.judge``. The ``[health]`` section::

    [health]
    precision_good = 0.7      # precision@5 at or above this is good
    precision_noisy = 0.5     # below this the context is noisy
    recall_good = 0.8         # recall@10
    recall_low = 0.6          # below this answers are missing
    mrr_good = 0.7
    ndcg_good = 0.7           # ndcg@5
    latency_p95_ms = 500      # retrieval p95 must stay below this

The ``[dashboard]`` section names who makes the gold edits of ``ragmeter serve``
(``--user`` wins)::

    [dashboard]
    user = "ana"

The ``[eval]`` section is a whole evaluation job, the keys of
``EvalJob.to_dict()`` (``ragmeter.evaluation.job``; read by ``EvalJob.from_toml``)::

    [eval]
    gold = "gold.yaml"
    corpus = "docs/"
    retriever = "bm25"
    k = 10
    metrics = ["ndcg@10"]
    executor = "local"        # or "ray" (with ray_address)

A missing file means the defaults. A file that does not parse, an unknown key or a
value of the wrong type is a :class:`~ragmeter.errors.ConfigError` naming the file
and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.compare.health import HealthThresholds
from ragmeter.errors import ConfigError, located
from ragmeter.formats.text import read_toml

if TYPE_CHECKING:
    from ragmeter.evaluation.job import EvalJob
    from ragmeter.judge.config import JudgeSettings

__all__ = ["CONFIG_FILE", "Config", "load_config", "load_health"]

CONFIG_FILE = "ragmeter.toml"
_KIND = "config"
_SECTIONS = ("dashboard", "eval", "health", "judge")


def _judge_settings() -> JudgeSettings:
    """The default ``[judge]`` settings (the judge package is imported when they are made,
    not with this module: ``show`` reads only ``[health]``, issue 29.1)."""
    from ragmeter.judge.config import JudgeSettings

    return JudgeSettings()


@dataclass(frozen=True)
class Config:
    """The settings of ``ragmeter.toml`` (defaults when there is no file)."""

    health: HealthThresholds = field(default_factory=HealthThresholds)
    judge: JudgeSettings = field(default_factory=_judge_settings)
    path: Path | None = None
    user: str | None = None  # [dashboard] user: who makes the dashboard's gold edits
    eval: EvalJob | None = None  # [eval]: a whole evaluation job (issue 25.3)


def _health(path: Path, table: Any) -> HealthThresholds:
    if not isinstance(table, Mapping):
        raise ConfigError(located(_KIND, path, "[health]", "expected a table"))
    try:
        return HealthThresholds.from_mapping(table)
    except ConfigError as error:
        raise ConfigError(located(_KIND, path, "[health]", str(error))) from None


def _dashboard_user(path: Path, table: Any) -> str | None:
    if not isinstance(table, Mapping):
        raise ConfigError(located(_KIND, path, "[dashboard]", "expected a table"))
    unknown = sorted(set(table) - {"user"})
    if unknown:
        raise ConfigError(located(_KIND, path, "[dashboard]", f"unknown key {unknown[0]!r}"))
    user = table.get("user")
    if user is not None and (not isinstance(user, str) or not user.strip()):
        raise ConfigError(located(_KIND, path, "[dashboard] user", "expected a non-empty string"))
    return user.strip() if user else None


def load_config(path: str | Path | None = None) -> Config:
    """Read ``ragmeter.toml`` (default: the one in the working directory).

    >>> load_config("/nonexistent/ragmeter.toml").health.precision_good
    0.7
    """
    from ragmeter.judge.config import JudgeSettings

    target, data = _read(path)
    if data is None:
        return Config()
    health = _health(target, data["health"]) if "health" in data else HealthThresholds()
    judge = JudgeSettings.from_table(data.get("judge", {}), target)
    user = _dashboard_user(target, data["dashboard"]) if "dashboard" in data else None
    job = None
    if "eval" in data:  # imported only when there is one: the pytest plugin reads this file
        from ragmeter.evaluation.job import EvalJob

        job = EvalJob.from_table(data["eval"], target)
    return Config(health=health, judge=judge, path=target, user=user, eval=job)


def load_health(path: str | Path | None = None) -> HealthThresholds:
    """The ``[health]`` thresholds of ``ragmeter.toml`` (default: the working directory's),
    read without the other sections' settings: what ``show`` needs (issue 29.1).

    >>> load_health("/nonexistent/ragmeter.toml").precision_good
    0.7
    """
    target, data = _read(path)
    if data is None or "health" not in data:
        return HealthThresholds()
    return _health(target, data["health"])


def _read(path: str | Path | None) -> tuple[Path, dict[str, Any] | None]:
    """``ragmeter.toml``'s path and tables (None: no file); an unknown section is an error."""
    target = Path(path) if path is not None else Path.cwd() / CONFIG_FILE
    data = read_toml(target, _KIND, ConfigError)
    if data is None:
        return target, None
    unknown = sorted(set(data) - set(_SECTIONS))
    if unknown:
        known = ", ".join(f"[{s}]" for s in _SECTIONS)
        message = f"unknown section [{unknown[0]}] (known: {known})"
        raise ConfigError(located(_KIND, target, None, message))
    return target, data
