"""Issue 19 fault-and-load benchmark: what survives SIGKILL, concurrent writers and a burst.

Real processes on loopback, a fresh SQLite store per measurement:

1. resume repeats: ``ragmeter eval`` over 300 questions (a retriever sleeping 50 ms) at
   concurrency 8 and 16 is killed with SIGKILL once 100 results are stored, then
   ``--resume``d; prints how many questions were asked but not stored at the kill (the ones in
   flight plus the writer's unflushed batch), how many the retriever was asked again on resume
   (exactly those: nothing stored is repeated, nothing is lost), and whether the resumed run is
   complete;
2. concurrent writers: 2 and 4 ``ragmeter eval`` processes share one store, 1,000 questions
   each with an instant retriever; prints rows lost (target 0);
3. ingest: runs ``benchmarks/ingest_durability.py`` (throughput with durable acknowledgement,
   acknowledged-but-lost ids after SIGKILL; target 0).

Timings depend on the machine's load; the counts do not.

    .venv/bin/python benchmarks/faults.py [--json] [--skip-ingest]
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ragmeter.store import Store

N_RESUME = 300
KILL_AT = 100
N_WRITERS_QUESTIONS = 1_000
TIMEOUT_S = 300.0

SLOW = """
import time
from pathlib import Path

def search(question, k):
    with open(Path(__file__).with_name("calls.log"), "a") as log:
        log.write(question + "\\n")
    time.sleep(0.05)
    return [{"doc": "doc%d" % (len(question) % 7), "score": 1.0}]
"""
FAST = "def search(question, k):\n    return [{'doc': 'doc1', 'score': 1.0}]\n"


def _gold(path: Path, n: int) -> None:
    items = [
        {"id": f"q{i}", "question": f"question {i}", "relevant": [{"doc": f"doc{i % 7}"}]}
        for i in range(n)
    ]
    path.write_text("\n".join(json.dumps(item) for item in items) + "\n", encoding="utf-8")


def _env(folder: Path, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGMETER_", "OPENAI_"))}
    env["RAGMETER_STORE"] = f"sqlite:///{db}"
    env["PYTHONPATH"] = os.pathsep.join([str(folder), env.get("PYTHONPATH", "")])
    return env


def _eval(name: str, gold: Path, module: str, concurrency: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ragmeter",
        "eval",
        "--gold",
        str(gold),
        "--retriever",
        f"{module}:search",
        "--concurrency",
        str(concurrency),
        "--name",
        name,
        "--json",
    ]


def resume_repeats(concurrency: int) -> dict[str, Any]:
    """Kill a run mid-way, resume it, count lost and repeated questions."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "slowmod.py").write_text(SLOW)
        gold, db = folder / "gold.jsonl", folder / "runs.db"
        _gold(gold, N_RESUME)
        env = _env(folder, db)
        proc = subprocess.Popen(
            _eval("killed", gold, "slowmod", concurrency),
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + TIMEOUT_S
        stored = 0
        with Store.open(db) as store:
            while time.monotonic() < deadline and stored < KILL_AT:
                try:
                    stored = len(store.completed_items(store.get_run("killed").id))
                except Exception:  # the run may not exist yet
                    stored = 0
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kept = len(store.completed_items(store.get_run("killed").id))
        asked_before = len((folder / "calls.log").read_text().splitlines())
        started = time.perf_counter()
        resumed = subprocess.run(
            [sys.executable, "-m", "ragmeter", "eval", "--resume", "killed", "--json"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        seconds = time.perf_counter() - started
        calls = (folder / "calls.log").read_text().splitlines()
        status = json.loads(resumed.stdout)["run"]["status"] if resumed.returncode == 0 else None
        return {
            "concurrency": concurrency,
            "stored_at_kill": kept,
            "asked_before_kill": asked_before,
            "lost_at_kill": asked_before - kept,
            "asked_twice": len(calls) - len(set(calls)),
            "resumed_status": status,
            "resume_seconds": round(seconds, 2),
        }


def concurrent_writers(n_processes: int) -> dict[str, Any]:
    """Several eval processes on one SQLite store: rows lost."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "fastmod.py").write_text(FAST)
        gold, db = folder / "gold.jsonl", folder / "runs.db"
        _gold(gold, N_WRITERS_QUESTIONS)
        env = _env(folder, db)
        started = time.perf_counter()
        procs = [
            subprocess.Popen(
                _eval(f"writer{i}", gold, "fastmod", 8),
                cwd=folder,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(n_processes)
        ]
        failures = [p.communicate(timeout=TIMEOUT_S)[1] for p in procs if p.wait() != 0]
        seconds = time.perf_counter() - started
        with Store.open(db) as store:
            rows = sum(len(list(store.results(run.id))) for run in store.list_runs())
        return {
            "processes": n_processes,
            "failed_processes": len(failures),
            "rows_expected": n_processes * N_WRITERS_QUESTIONS,
            "rows_lost": n_processes * N_WRITERS_QUESTIONS - rows,
            "seconds": round(seconds, 2),
        }


def ingest() -> dict[str, Any]:
    script = Path(__file__).with_name("ingest_durability.py")
    done = subprocess.run(
        [sys.executable, str(script), "--json"], capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main(argv: list[str]) -> None:
    load = os.getloadavg()[0]
    out: dict[str, Any] = {
        "load_average_1m": round(load, 2),
        "resume": [resume_repeats(c) for c in (8, 16)],
        "writers": [concurrent_writers(n) for n in (2, 4)],
    }
    if "--skip-ingest" not in argv:
        out["ingest"] = ingest()
    if "--json" in argv:
        print(json.dumps(out, indent=2))
        return
    print(f"load average at start: {load:.2f} (timings move with load; counts do not)")
    for r in out["resume"]:
        print(
            f"resume  concurrency {r['concurrency']:>2}: stored {r['stored_at_kill']} at the kill, "
            f"{r['lost_at_kill']} asked but not stored (in flight or in the writer's batch), "
            f"{r['asked_twice']} asked again on resume, "
            f"resumed {r['resumed_status']} in {r['resume_seconds']} s"
        )
    for w in out["writers"]:
        print(
            f"writers {w['processes']} processes: {w['rows_lost']} of {w['rows_expected']} rows "
            f"lost, {w['failed_processes']} failed, {w['seconds']} s"
        )
    if "ingest" in out:
        print(f"ingest: {json.dumps(out['ingest'])}")


if __name__ == "__main__":
    main(sys.argv[1:])
