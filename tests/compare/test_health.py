"""Health line, diagnosis hints and the ``[health]`` section of ragmeter.toml (issue 5)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import ragmeter.compare.health
import ragmeter.config
from ragmeter.compare.health import HealthThresholds, diagnose, health_lines, precision_ceiling
from ragmeter.config import load_config, load_health
from ragmeter.errors import ConfigError

GOOD = {
    "precision@5": 0.75,
    "recall@10": 0.85,
    "mrr": 0.8,
    "ndcg@5": 0.72,
    "latency_p95_ms": 120.0,
}


def test_a_healthy_run_is_good_everywhere_and_has_no_hints() -> None:
    """Issue 5: every metric at or past its "good" threshold: one line, no hints."""
    assert health_lines(GOOD) == [
        "health: precision@5 0.75 good · recall@10 0.85 good · mrr 0.80 good · "
        "ndcg@5 0.72 good · p95 120 ms good"
    ]


@pytest.mark.parametrize(
    ("metric", "value", "label"),
    [
        ("precision@5", 0.7, "good"),
        ("precision@5", 0.6, "fair"),
        ("precision@5", 0.49, "noisy"),
        ("recall@10", 0.8, "good"),
        ("recall@10", 0.7, "fair"),
        ("recall@10", 0.59, "missing answers"),
        ("mrr", 0.69, "below 0.7"),
        ("ndcg@5", 0.7, "good"),
        ("latency_p95_ms", 499.0, "good"),
        ("latency_p95_ms", 500.0, "slow"),
    ],
    ids=lambda v: str(v),
)
def test_thresholds_from_practice(metric: str, value: float, label: str) -> None:
    """Issue 5: the documented thresholds, at and around their boundaries."""
    check = diagnose({**GOOD, metric: value}).check(metric)
    assert check is not None and check.label == label


def test_high_precision_low_recall_says_widen_the_search() -> None:
    """Issue 5: high precision + low recall -> widen the search or change chunk size."""
    lines = health_lines({**GOOD, "recall@10": 0.4})
    assert any("widen the search" in line and "chunk size" in line for line in lines[1:])


def test_high_recall_low_precision_says_add_a_reranker() -> None:
    """Issue 5: high recall + low precision -> add a re-ranker."""
    lines = health_lines({**GOOD, "precision@5": 0.3})
    assert lines[1] == (
        "hint: high recall, low precision: the answer is retrieved but buried in noise -- "
        "add a re-ranker"
    )


def test_slow_retrieval_gets_a_hint_and_missing_metrics_are_skipped() -> None:
    """Issue 5: p95 >= 500 ms is slow; metrics a run lacks are left out, not guessed."""
    lines = health_lines({"mrr": 0.9, "latency_p95_ms": 820.0})
    assert lines[0] == "health: mrr 0.90 good · p95 820 ms slow"
    assert "820 ms" in lines[1]
    assert health_lines({"hit@5": 0.5}) == []


def test_precision_is_judged_against_its_ceiling() -> None:
    """Issue 5: with one relevant document per question precision@5 tops out at 0.2."""
    assert precision_ceiling([1] * 10) == pytest.approx(0.2)
    lines = health_lines({**GOOD, "precision@5": 0.18}, precision_ceiling=0.2)
    assert "precision@5 0.18 (max 0.20) good" in lines[0]
    assert "precision@5 0.18 noisy" in health_lines({**GOOD, "precision@5": 0.18})[0]


def test_custom_thresholds_change_the_verdict() -> None:
    """Issue 5: thresholds are configurable."""
    strict = HealthThresholds(recall_good=0.9, recall_low=0.88)
    assert diagnose(GOOD, strict).check("recall@10").label == "missing answers"  # type: ignore[union-attr]


def test_config_file_sets_thresholds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 5: ragmeter.toml in the working directory sets [health] thresholds."""
    (tmp_path / "ragmeter.toml").write_text(
        '[health]\nrecall_good = 0.9\nrecall_metric = "R@5"\nlatency_p95_ms = 200\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    config = load_config()
    assert config.path == tmp_path / "ragmeter.toml"
    assert config.health.recall_good == 0.9
    assert config.health.recall_metric == "recall@5"
    assert config.health.latency_p95_ms == 200.0
    assert config.health.precision_good == 0.7  # untouched default


def test_no_config_file_means_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 5: no ragmeter.toml: the documented defaults."""
    monkeypatch.chdir(tmp_path)
    assert load_config().health == HealthThresholds()
    assert load_config().path is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[health\n", "not valid TOML"),
        ("[health]\nrecal_good = 0.9\n", 'unknown key "recal_good"'),
        ('[health]\nrecall_good = "high"\n', '"recall_good" must be a number'),
        ("[health]\nrecall_good = 0.5\nrecall_low = 0.6\n", "recall_low must not exceed"),
        ("[healht]\n", "unknown section [healht]"),
        ("health = 3\n", "[health]: expected a table"),
    ],
    ids=["bad-toml", "unknown-key", "not-a-number", "inverted", "unknown-section", "not-a-table"],
)
def test_bad_config_names_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    """Issue 5: a wrong ragmeter.toml is a ConfigError naming the file and what is wrong;
    ``load_health`` (what ``show`` reads, issue 29.1) says the same of its table."""
    path = tmp_path / "ragmeter.toml"
    path.write_text(text, encoding="utf-8")
    for load in (load_config, load_health):
        with pytest.raises(ConfigError) as info:
            load(path)
        assert str(path) in str(info.value)
        assert message in str(info.value)


def test_load_health_reads_only_the_health_table(tmp_path: Path) -> None:
    """Issue 29.1: ``show`` reads ``[health]`` without the judge settings it does not use."""
    path = tmp_path / "ragmeter.toml"
    path.write_text("[health]\nrecall_good = 0.9\n[judge]\nnot_a_key = 1\n", encoding="utf-8")
    assert load_health(path) == HealthThresholds(recall_good=0.9)
    with pytest.raises(ConfigError, match="not_a_key"):
        load_config(path)
    assert load_health(tmp_path / "missing.toml") == HealthThresholds()


@pytest.mark.parametrize(
    "module", [ragmeter.compare.health, ragmeter.config], ids=["health", "config"]
)
def test_docstring_examples_hold(module: object) -> None:
    """Issue 5: the examples in the docstrings are true."""
    failures, tried = doctest.testmod(module)  # type: ignore[arg-type]
    assert tried > 0 and failures == 0


def test_one_loader_reads_the_judge_table_too(tmp_path: Path) -> None:
    """Issue 13.3: ragmeter.toml is read once; [judge] is checked there and handed on."""
    from ragmeter.judge.config import resolve_judge_config

    path = tmp_path / "ragmeter.toml"
    path.write_bytes(b'\xef\xbb\xbf[judge]\nmodel = "m"\nbase_url = "http://127.0.0.1:1/v1"\n')
    config = load_config(path)
    assert config.judge.get("model") == "m" and config.judge.path == path
    assert resolve_judge_config(env={}, settings=config.judge).base_url == "http://127.0.0.1:1/v1"
    path.write_text('[judge]\napi_key = "sk-secret"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[judge\]: keys never live in files"):
        load_config(path)


def test_judge_config_does_not_read_files_itself() -> None:
    """Issue 13.3: only ragmeter.config parses ragmeter.toml (one loader, not two)."""
    import inspect

    import ragmeter.judge.config

    source = inspect.getsource(ragmeter.judge.config)
    assert "tomllib" not in source and "read_bytes" not in source


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("timeout = nan", "timeout must be a positive number, got nan"),
        ("concurrency = inf", "concurrency must be a positive number, got inf"),
        ("max_retries = nan", "max_retries must be a whole number >= 0, got nan"),
        ('max_retries = "3"', "max_retries must be a whole number >= 0, got '3'"),
        ('[judge.prices]\n"m" = { prompt = nan, completion = 1.0 }', "[judge.prices]: m: expected"),
    ],
    ids=["nan-timeout", "inf-concurrency", "nan-retries", "string-retries", "nan-price"],
)
def test_judge_numbers_refuse_nan_and_inf(tmp_path: Path, table: str, message: str) -> None:
    """Issue 19.10: TOML's nan and inf reached the judge client (or a traceback)."""
    from ragmeter.judge.config import resolve_judge_config

    path = tmp_path / "ragmeter.toml"
    path.write_text(f'[judge]\nmodel = "m"\nbase_url = "http://127.0.0.1:1/v1"\n{table}\n')
    with pytest.raises(ConfigError) as caught:
        resolve_judge_config(env={}, settings=load_config(path).judge)
    assert message in str(caught.value) and str(path) in str(caught.value)
