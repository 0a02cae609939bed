"""`ragmeter eval`, `runs`, `show`, `retrieve`, `demo`: the CLI with real files and processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from _net import wait_until
from _paths import SHARED as SHARED_ROOT
from _servers import closed_port, serve
from ragmeter.cli import main
from ragmeter.store import Store

SHARED = SHARED_ROOT / "data"

DOCS = {
    "install.md": "# Install\n\nRun the installer script with curl to install the tool.\n",
    "cache.md": "# Cache\n\nClean the cache with the clean command to free disk space.\n",
    "python.md": "# Python\n\nPin a Python version with the pin command.\n",
}
GOLD = [
    {
        "id": "install",
        "question": "how do I install the tool with curl",
        "tags": ["install"],
        "relevant": [{"doc": "install.md", "quote": "installer script"}],
        "answer_contains": ["curl"],
    },
    {
        "id": "cache",
        "question": "free disk space by cleaning the cache",
        "tags": ["cache"],
        "relevant": [{"doc": "cache.md"}],
    },
    {
        "id": "pin",
        "question": "wie lege ich die Pythonfassung fest",
        "tags": ["python", "lang:de"],
        "relevant": [{"doc": "python.md"}],
    },
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(GOLD, sort_keys=False), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_STORE", f"sqlite:///{tmp_path / 'runs.db'}")
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_eval_json_contract(project: Path) -> None:
    """Issue 3: `ragmeter eval --json` prints run, metrics, n_questions, n_errors and misses."""
    result = CliRunner().invoke(
        main,
        ["eval", "--gold", "gold.yaml", "--corpus", "docs", "-k", "2", "--name", "base", "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["run"]["name"] == "base" and isinstance(data["run"]["id"], int)
    assert data["n_questions"] == 3 and data["n_errors"] == 0
    assert {
        "hit@1",
        "hit@2",
        "recall@2",
        "mrr",
        "ndcg@2",
        "map",
        "latency_p95_ms",
    } <= set(data["metrics"])
    assert [m["id"] for m in data["misses"]] == ["pin"]
    miss = data["misses"][0]
    assert set(miss) >= {"id", "question", "tags", "expected", "retrieved"}
    assert miss["expected"] == ["python.md"]


def test_runs_and_show(project: Path) -> None:
    """Issue 3: `runs` is a run per row, newest last; `show` prints misses by tag; RUN = latest."""
    runner = CliRunner()
    for name, size in (("small", "100"), ("big", "1000")):
        result = runner.invoke(
            main,
            [
                "eval",
                "--gold",
                "gold.yaml",
                "--corpus",
                "docs",
                "--chunk-size",
                size,
                "--name",
                name,
                "--note",
                f"chunks of {size}",
            ],
        )
        assert result.exit_code == 0, result.output
        assert "Misses" in result.stdout
    runs = runner.invoke(main, ["runs", "--json"])
    assert [r["name"] for r in json.loads(runs.stdout)] == ["small", "big"]
    table = runner.invoke(main, ["runs"])
    assert table.exit_code == 0
    assert table.stdout.index("small") < table.stdout.index("big")
    assert "chunks of 1000" in table.stdout
    shown = runner.invoke(main, ["show", "latest", "--json"])
    data = json.loads(shown.stdout)
    assert data["run"]["name"] == "big"
    assert {t["tag"] for t in data["misses_by_tag"]} >= {"lang:de", "install"}
    assert len(data["questions"]) == 3
    text = runner.invoke(main, ["show", "small"])
    assert text.exit_code == 0 and "misses by tag" in text.stdout
    missing = runner.invoke(main, ["show", "nope"])
    assert missing.exit_code == 2 and "nope" in missing.output


def test_retrieve_marks_relevance(project: Path) -> None:
    """Issue 3: `retrieve` prints ranked chunks, marks them against the gold item, lists missing docs."""
    result = CliRunner().invoke(
        main,
        [
            "retrieve",
            "wie lege ich die Pythonfassung fest",
            "--corpus",
            "docs",
            "--gold",
            "gold.yaml",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["item_id"] == "pin"
    assert data["not_returned"] == ["python.md"]
    ok = CliRunner().invoke(
        main,
        ["retrieve", "x", "--item", "install", "--corpus", "docs", "--gold", "gold.yaml", "--json"],
    )
    rows = json.loads(ok.stdout)["rows"]
    assert rows[0]["doc"] == "install.md" and rows[0]["grade"] == 1


def test_missing_docs_warning_and_bad_gold(project: Path) -> None:
    """Issue 3: gold docs absent from the corpus give one warning; a bad gold set is exit 2."""
    gold = GOLD + [{"id": "ghost", "question": "ghost?", "relevant": [{"doc": "ghost.md"}]}]
    (project / "g2.yaml").write_text(yaml.safe_dump(gold), encoding="utf-8")
    result = CliRunner().invoke(main, ["eval", "--gold", "g2.yaml", "--corpus", "docs"])
    assert result.exit_code == 0
    assert result.stderr.count("ghost.md") == 1
    (project / "bad.yaml").write_text("- id: a\n  question: q\n  relevant: [{doc: x, grade: 7}]\n")
    bad = CliRunner().invoke(main, ["eval", "--gold", "bad.yaml", "--corpus", "docs"])
    assert bad.exit_code == 2
    assert "bad.yaml" in bad.output and "grade" in bad.output
    assert "Traceback" not in bad.output


def test_http_faults_and_all_failed(project: Path) -> None:
    """Issue 3: HTTP 500 and connection refused become error rows; all failed -> exit 3."""
    with serve() as server:
        result = CliRunner().invoke(
            main, ["eval", "--gold", "gold.yaml", "--retriever", server.url("/always500"), "--json"]
        )
        assert result.exit_code == 3, result.output
        assert "all 3 questions failed" in result.output and "HTTP 500" in result.output
        assert server.counts["/always500"] >= 3 * 2  # retried
    refused = CliRunner().invoke(
        main, ["eval", "--gold", "gold.yaml", "--retriever", f"http://127.0.0.1:{closed_port()}/x"]
    )
    assert refused.exit_code == 3 and "connection refused" in refused.output


def test_partial_failure_summary(project: Path) -> None:
    """Issue 3: some questions failing prints 'N of M questions failed' and exits 0."""
    (project / "flaky.py").write_text(
        textwrap.dedent(
            """
            def search(question, k):
                if "cache" in question:
                    raise RuntimeError("index shard 3 offline")
                return [{"doc": "install.md", "score": 1.0}]
            """
        )
    )
    result = CliRunner().invoke(
        main, ["eval", "--gold", "gold.yaml", "--retriever", "flaky:search"]
    )
    assert result.exit_code == 0, result.output
    assert "1 of 3 questions failed" in result.stdout
    assert "index shard 3 offline" in result.stdout


SLOW_RETRIEVER = """
import time
from pathlib import Path

def search(question, k):
    with open(Path(__file__).with_name("calls.log"), "a") as log:
        log.write(question + "\\n")
    time.sleep(0.05)
    return [{"doc": "doc%d" % (hash(question) % 7), "score": 1.0}]
"""


def _write_big_gold(path: Path, n: int) -> None:
    items = [
        {"id": f"q{i}", "question": f"question {i}", "relevant": [{"doc": f"doc{i % 7}"}]}
        for i in range(n)
    ]
    path.write_text("\n".join(json.dumps(item) for item in items) + "\n", encoding="utf-8")


def _env(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGMETER_", "OPENAI_"))}
    env["RAGMETER_STORE"] = f"sqlite:///{project / 'runs.db'}"
    env["PYTHONHASHSEED"] = "0"
    return env


@pytest.mark.slow
def test_sigkill_then_resume(project: Path) -> None:
    """Issue 3: SIGKILL mid-run loses at most the questions in flight; --resume completes the run."""
    (project / "slowmod.py").write_text(SLOW_RETRIEVER)
    _write_big_gold(project / "big.jsonl", 120)
    cmd = [
        sys.executable,
        "-m",
        "ragmeter",
        "eval",
        "--gold",
        "big.jsonl",
        "--retriever",
        "slowmod:search",
        "--concurrency",
        "2",
        "--name",
        "killed",
    ]
    proc = subprocess.Popen(
        cmd, cwd=project, env=_env(project), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    store = Store.open(project / "runs.db")

    def thirty_stored() -> bool:
        try:
            return len(store.completed_items(store.get_run("killed").id)) >= 30
        except Exception:  # the run may not exist yet
            return False

    wait_until(thirty_stored, timeout=60, what="30 stored results")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    calls_before = len((project / "calls.log").read_text().splitlines())
    kept = store.completed_items(store.get_run("killed").id)
    # Results reach the store within a short linger: at most the in-flight questions are lost.
    assert calls_before - len(kept) <= 2 + 2
    resumed = subprocess.run(
        [sys.executable, "-m", "ragmeter", "eval", "--resume", "killed", "--json"],
        cwd=project,
        env=_env(project),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads(resumed.stdout)
    assert data["n_questions"] == 120 and data["run"]["status"] == "complete"
    calls = (project / "calls.log").read_text().splitlines()
    assert len(calls) == calls_before + (120 - len(kept))
    assert len(store.completed_items(store.get_run("killed").id)) == 120
    store.close()


@pytest.mark.slow
def test_two_processes_share_one_store(project: Path) -> None:
    """Issue 3: two `ragmeter eval` processes writing one SQLite store both complete, no lost rows."""
    fast = "def search(question, k):\n    return [{'doc': 'doc1', 'score': 1.0}]\n"
    (project / "fastmod.py").write_text(fast)
    _write_big_gold(project / "big.jsonl", 3000)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ragmeter",
                "eval",
                "--gold",
                "big.jsonl",
                "--retriever",
                "fastmod:search",
                "--name",
                f"p{i}",
                "--json",
            ],
            cwd=project,
            env=_env(project),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert json.loads(out)["n_questions"] == 3000
    with Store.open(project / "runs.db") as store:
        for name in ("p0", "p1"):
            run = store.get_run(name)
            assert len(store.completed_items(run.id)) == 3000
            assert run.status == "complete"


@pytest.mark.slow
def test_scifact_bm25_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 3: BM25 on SciFact (chunker none, k=100) gives nDCG@10 within 0.01 of 0.680."""
    if not (SHARED / "scifact").is_dir():
        pytest.skip(f"shared data not found at {SHARED / 'scifact'}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    scifact = str(SHARED / "scifact")
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--gold",
            scifact,
            "--corpus",
            scifact,
            "--retriever",
            "bm25",
            "--chunker",
            "none",
            "-k",
            "100",
            "--store",
            str(tmp_path / "r.db"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["n_questions"] == 300
    assert abs(data["metrics"]["ndcg@10"] - 0.680) <= 0.01
    assert data["run"]["level"] == "doc"


def test_demo_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 3: `ragmeter demo` evaluates two variants as stored runs and prints the misses."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["demo", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["runs"]) >= 2
    assert all(run["n_questions"] >= 40 for run in data["runs"])
    with Store.open(tmp_path / ".ragmeter" / "demo.db") as store:
        assert len(store.list_runs()) == len(data["runs"])
    text = CliRunner().invoke(main, ["demo", "--store", str(tmp_path / "d2.db")])
    assert text.exit_code == 0
    assert "misses by tag" in text.stdout and "Better run" in text.stdout


def test_corpus_one_folder_too_high_is_read_through_the_id_resolver(tmp_path: Path) -> None:
    """Issue 14.3 stopped --corpus one folder above the one gold ids are relative to (every
    corpus id gains a "docs/" prefix) instead of scoring zeros; issue 24.2 reads both sides
    through the one id resolver: docs/concepts/x.md is the gold set's concepts/x.md (the
    only corpus id ending so), so the run scores exactly as with the right folder and says
    once, as a note, what it mapped."""
    from ragmeter.examples import example_corpus_dir, example_gold_path

    def run(corpus: Path) -> Any:
        return CliRunner().invoke(
            main,
            [
                "eval",
                "--gold",
                str(example_gold_path()),
                "--corpus",
                str(corpus),
                "--retriever",
                "bm25",
                "--json",
                "--store",
                str(tmp_path / "runs.db"),
            ],
        )

    high, right = run(example_corpus_dir().parent), run(example_corpus_dir())
    assert high.exit_code == 0 and right.exit_code == 0, high.output
    metrics = [
        {n: v for n, v in json.loads(r.stdout)["metrics"].items() if "latency" not in n}
        for r in (high, right)
    ]
    assert metrics[0] == metrics[1] and metrics[0]["hit@10"] > 0.5
    notes = json.loads(high.stdout)["notes"]
    assert "'docs/" in notes[0] and json.loads(high.stdout)["warnings"] == []
