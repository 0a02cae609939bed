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
   acknowledged-but-lost ids after SIGKILL; target 0);
4. amplification (issue 27.1): a real ``ragmeter ingest serve`` gets the red-team's bodies,
   one trace of N retriever spans and N feedback events (N = 1,000 and 2,000) and 1,000 span
   annotations on a trace of 500 retriever spans; prints the rows each request wrote (before
   the fix: 1,000,000, 4,000,000 and 500,000);
5. review race (issue 27.2): a real ``ragmeter serve --candidates`` gets 20 review decisions
   at the same moment; prints how many the file kept (target 20; before the fix 3).

Timings depend on the machine's load; the counts do not.

    .venv/bin/python benchmarks/faults.py [--json] [--skip-ingest] [--only-attacks]
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from ragmeter.store import Store

N_RESUME = 300
KILL_AT = 100
N_WRITERS_QUESTIONS = 1_000
TIMEOUT_S = 300.0
#: Retriever spans (and as many feedback events) in the one-trace amplification bodies.
AMPLIFICATION_SIZES = (1_000, 2_000)
#: The span-annotations body: this many annotations on a trace of half as many retriever spans.
N_ANNOTATIONS = 1_000
#: Review decisions posted at the same moment.
N_DECISIONS = 20

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
    # The servers run in a temporary folder: a relative PYTHONPATH (src) would name nothing.
    paths = env.get("PYTHONPATH", "").split(os.pathsep)
    env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths if p)
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


def _serve(command: list[str], folder: Path, probe: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start a ragmeter server on a free loopback port; its process and base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragmeter", *command, "--port", str(port)],
        cwd=folder, env=_env(folder, folder / "runs.db"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(base + probe, timeout=5)
            return proc, base
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"ragmeter {command[0]} did not start")


def _otlp_span(trace: int, span: int, query: str | None, events: int = 0) -> dict[str, Any]:
    kv = [] if query is None else [
        {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
        {"key": "input.value", "value": {"stringValue": query}},
    ]  # fmt: skip
    return {
        "traceId": f"{trace:032x}", "spanId": f"{span:016x}", "name": "s",
        "startTimeUnixNano": "1", "endTimeUnixNano": "2", "attributes": kv,
        "events": [{"name": "feedback", "timeUnixNano": str(n + 1), "attributes": [
            {"key": "thumbs_up", "value": {"boolValue": False}}]} for n in range(events)],
    }  # fmt: skip


def _traces(spans: list[dict[str, Any]]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def _rows_written(base: str, db: Path, path: str, body: bytes) -> dict[str, Any]:
    with Store.open(db) as store:
        before = sum(store.query_log_counts())
    started = time.perf_counter()
    answer = httpx.post(base + path, content=body, timeout=TIMEOUT_S,
                        headers={"Content-Type": "application/json"})  # fmt: skip
    seconds = time.perf_counter() - started
    with Store.open(db) as store:
        after = sum(store.query_log_counts())
    return {"path": path, "body_bytes": len(body), "status": answer.status_code,
            "rows_written": after - before, "seconds": round(seconds, 2)}  # fmt: skip


def amplification() -> list[dict[str, Any]]:
    """Issue 27.1: rows one request writes, for the red-team's bodies."""
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "runs.db"
        proc, base = _serve(["ingest", "serve", "--store", str(db)], folder, "/api/log")
        try:
            for trace, n in enumerate(AMPLIFICATION_SIZES, start=1):
                spans = [_otlp_span(trace, s + 1, f"q{s}") for s in range(n)]
                spans.append(_otlp_span(trace, n + 1, None, events=n))
                row = _rows_written(base, db, "/v1/traces", _traces(spans))
                out.append({"body": f"{n} retriever spans + {n} feedback events"} | row)
            trace, n = len(AMPLIFICATION_SIZES) + 1, N_ANNOTATIONS // 2
            spans = [_otlp_span(trace, 10_000 + s, f"a{s}") for s in range(n)]
            httpx.post(base + "/v1/traces", content=_traces(spans), timeout=TIMEOUT_S,
                       headers={"Content-Type": "application/json"})  # fmt: skip
            data = [{"span_id": f"{10_000:016x}", "name": f"f{k}", "identifier": f"u{k}",
                     "result": {"label": "thumbs-down"}} for k in range(N_ANNOTATIONS)]  # fmt: skip
            row = _rows_written(
                base, db, "/v1/span_annotations", json.dumps({"data": data}).encode()
            )
            out.append({"body": f"{N_ANNOTATIONS} annotations on {n} retriever spans"} | row)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
    return out


def review_race() -> dict[str, Any]:
    """Issue 27.2: review decisions kept out of N_DECISIONS posted at the same moment."""
    from ragmeter.gold.files import load_gold
    from ragmeter.gold.goldset import GoldItem
    from ragmeter.gold.review import save_items

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        candidates = folder / "candidates.yaml"
        save_items(candidates, [GoldItem(id=f"c{k}", question=f"q{k}?", status="candidate",
                                         relevant=[{"doc": f"d{k}.md"}])
                                for k in range(N_DECISIONS)])  # fmt: skip
        command = ["serve", "--candidates", str(candidates), "--store", str(folder / "runs.db")]
        proc, base = _serve(command, folder, "/api/review")
        start = threading.Barrier(N_DECISIONS)

        def decide(k: int) -> int:
            with httpx.Client(base_url=base, headers={"Origin": base}, timeout=60) as client:
                start.wait()
                return client.post("/api/review", json={"item_id": f"c{k}",
                                                        "decision": "accept"}).status_code  # fmt: skip

        try:
            with ThreadPoolExecutor(N_DECISIONS) as pool:
                statuses = list(pool.map(decide, range(N_DECISIONS)))
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        kept = sum(1 for item in load_gold(candidates) if item.status == "accepted")
    return {"decisions": N_DECISIONS, "answered_200": statuses.count(200), "kept": kept}


def main(argv: list[str]) -> None:
    load = os.getloadavg()[0]
    out: dict[str, Any] = {"load_average_1m": round(load, 2)}
    if "--only-attacks" not in argv:
        out["resume"] = [resume_repeats(c) for c in (8, 16)]
        out["writers"] = [concurrent_writers(n) for n in (2, 4)]
        if "--skip-ingest" not in argv:
            out["ingest"] = ingest()
    out["amplification"] = amplification()
    out["review_race"] = review_race()
    if "--json" in argv:
        print(json.dumps(out, indent=2))
        return
    print(f"load average at start: {load:.2f} (timings move with load; counts do not)")
    for r in out.get("resume", []):
        print(
            f"resume  concurrency {r['concurrency']:>2}: stored {r['stored_at_kill']} at the kill, "
            f"{r['lost_at_kill']} asked but not stored (in flight or in the writer's batch), "
            f"{r['asked_twice']} asked again on resume, "
            f"resumed {r['resumed_status']} in {r['resume_seconds']} s"
        )
    for w in out.get("writers", []):
        print(
            f"writers {w['processes']} processes: {w['rows_lost']} of {w['rows_expected']} rows "
            f"lost, {w['failed_processes']} failed, {w['seconds']} s"
        )
    if "ingest" in out:
        print(f"ingest: {json.dumps(out['ingest'])}")
    for a in out["amplification"]:
        print(
            f"amplification {a['path']} ({a['body']}, {a['body_bytes']:,} bytes): "
            f"HTTP {a['status']}, {a['rows_written']:,} rows written, {a['seconds']} s"
        )
    race = out["review_race"]
    print(
        f"review race: {race['kept']} of {race['decisions']} concurrent decisions kept "
        f"({race['answered_200']} answered 200)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
