"""Issue 25.3: one job spec: ``EvalJob`` from the command line, ``ragmeter.toml`` and a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ragmeter
from _project import write_project
from ragmeter.cli import main
from ragmeter.config import load_config
from ragmeter.errors import ConfigError
from ragmeter.evaluation.job import EvalJob, RetrieverOptions
from ragmeter.executors.base import LocalExecutor
from ragmeter.executors.ray import RayExecutor
from ragmeter.pipelines.chunkers import ChunkerConfig
from ragmeter.store import Store

DOCS = {
    "install.md": "# Install\n\nRun the installer script with curl to install the tool.\n",
    "cache.md": "# Cache\n\nClean the cache with the clean command to free disk space.\n",
    "python.md": "# Python\n\nPin a Python version with the pin command.\n",
}
GOLD = [
    {"id": "install", "question": "install the tool with curl", "relevant": ["install.md"]},
    {"id": "cache", "question": "clean the cache to free disk space", "relevant": ["cache.md"]},
    {"id": "pin", "question": "pin a python version", "relevant": ["python.md"]},
]
TOML = """
[eval]
gold = "gold.yaml"
corpus = "docs"
retriever = "bm25"
k = 2
level = "doc"
metrics = ["ndcg@2"]
chunker = {kind = "paragraph", size = 200}
name = "from-toml"
"""


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in config.items() if key not in ("versions",)}


def test_the_cli_and_ragmeter_toml_make_the_same_job_and_the_same_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_project(tmp_path, DOCS, GOLD, monkeypatch)
    (root / "ragmeter.toml").write_text(TOML, encoding="utf-8")
    args = ["eval", "--gold", "gold.yaml", "--corpus", "docs", "-k", "2", "--level", "doc"]
    args += ["-m", "ndcg@2", "--chunker", "paragraph", "--chunk-size", "200", "--json"]
    done = CliRunner().invoke(main, [*args, "--name", "from-cli"])
    assert done.exit_code == 0, done.output
    cli_run = json.loads(done.output)["run"]["id"]

    job = EvalJob.from_toml(root / "ragmeter.toml")
    assert load_config().eval == job  # the one [eval] reader behind both
    assert job.chunker == ChunkerConfig(kind="paragraph", size=200)
    with Store.open(f"sqlite:///{root / 'runs.db'}") as store:
        toml_run = ragmeter.run_job(job, store=store).run
        cli = store.get_run(cli_run)
        assert (cli.name, toml_run.name) == ("from-cli", "from-toml")
        assert _comparable(dict(cli.config)) == _comparable(dict(toml_run.config))
        assert (cli.k, cli.level) == (toml_run.k, toml_run.level) == (2, "doc")
        ranked = {r.item_id: [h.doc for h in r.hits] for r in store.results(cli_run)}
        again = {r.item_id: [h.doc for h in r.hits] for r in store.results(toml_run.id)}
        assert ranked == again
        # The job rebuilt from the stored run is the job that made it, set to resume it.
        rebuilt = EvalJob.from_run(store, toml_run.id)
    assert rebuilt.resume == toml_run.id
    for name in ("gold", "retriever", "corpus", "k", "level", "chunker", "name"):
        assert getattr(rebuilt, name) == getattr(job, name), name
    assert "ndcg@2" in rebuilt.metrics and "mrr" in rebuilt.metrics  # the run's full list


def test_a_job_is_plain_data_without_credentials() -> None:
    job = EvalJob(
        gold="gold.yaml",
        retriever="http://search.internal/q",
        store="postgresql://ana:pg-s3cret@db/runs",
        metrics=("ndcg@10",),
        min_overlap=0.3,
        options=RetrieverOptions(
            doc_field="meta.path",
            headers=("Authorization: Bearer s3cret", "X-Key: env:SEARCH_KEY"),
        ),
        executor=RayExecutor(address="ray://head:10001"),
    )
    data = job.to_dict()
    text = json.dumps(data)
    assert "s3cret" not in text and data["store"] == "postgresql://ana:***@db/runs"
    assert data["headers"] == ["X-Key: env:SEARCH_KEY"]
    assert (data["executor"], data["ray_address"]) == ("ray", "ray://head:10001")
    back = EvalJob.from_dict(data)
    assert back.executor == RayExecutor(address="ray://head:10001")
    assert back.options.headers == ("X-Key: env:SEARCH_KEY",)
    assert back.to_dict() == data and back.retriever == job.retriever
    with pytest.raises(AttributeError):
        job.k = 3  # type: ignore[misc]


def test_names_become_objects_at_the_cli_boundary() -> None:
    job = EvalJob.from_cli({"gold_path": "g.yaml", "executor": "ray", "ray_address": "auto"})
    assert job.executor == RayExecutor(address="auto")
    assert EvalJob.from_cli({"gold_path": "g.yaml"}).executor == LocalExecutor()
    with pytest.raises(ConfigError, match="--ray-address needs --executor ray"):
        EvalJob.from_cli({"executor": "local", "ray_address": "auto"})


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('gold = "g.yaml"\nretreiver = "bm25"', "unknown key 'retreiver'"),
        ('gold = "g.yaml"\nk = "ten"', "k: expected int"),
        ('gold = "g.yaml"\nmetrics = "ndcg@10"', "metrics: expected a list of strings"),
        ('gold = "g.yaml"\nexecutor = "spark"', "unknown executor 'spark'"),
        ('gold = "g.yaml"\nlevel = "page"', "unknown level 'page'"),
    ],
)
def test_a_bad_eval_table_names_the_file_and_the_key(
    tmp_path: Path, table: str, message: str
) -> None:
    path = tmp_path / "ragmeter.toml"
    path.write_text(f"[eval]\n{table}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        EvalJob.from_toml(path)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_unknown_keys_are_named_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ragmeter.toml"
    path.write_text('[eval]\ngold = "g.yaml"\nretreiver = "bm25"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"ragmeter\.toml \[eval\]: unknown key"):
        EvalJob.from_toml(path)
    path.write_text("[health]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"no \[eval\] table"):
        EvalJob.from_toml(path)
