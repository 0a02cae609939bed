"""The read surfaces of one stored run (issue 29.1): CPU and peak RSS of ``show --json``, a
cold ``/api/runs/N``, a cold run page and ``ragmeter report``, each in a fresh process.

    PYTHONPATH=src .venv/bin/python benchmarks/read_surfaces.py STORE.db [--run 1]
        [--src DIR ...] [--repeat 3]

``--src`` runs the surfaces with that source tree first on ``PYTHONPATH`` (give the tree
before a change and after it to compare them; default: the ``src`` beside this file).
Peak RSS comes from ``os.wait4``, CPU is user + system of the child (interpreter start and
imports included); the dashboard is served in-process (ASGI app + httpx), one request to a
new app, so the run is read from the store. Stores: ``benchmarks/scale.py --read
--read-100k --keep DIR`` leaves ``read-100000.db`` there. What each surface printed is given
in bytes (the JSON, the page or the report file).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CLI = "import sys; from ragmeter.cli import main; sys.exit(main())"
SERVED = """
import sys
from fastapi.testclient import TestClient
from ragmeter.store import Store
from ragmeter.web.app import create_app
with Store.open(sys.argv[1], read_only=True) as store, TestClient(
    create_app("unused", store=store), base_url="http://127.0.0.1"
) as client:
    response = client.get(sys.argv[2])
    response.raise_for_status()
    sys.stdout.buffer.write(response.content)
"""


def commands(db: str, run: str, report: str) -> dict[str, list[str]]:
    url = f"sqlite:///{db}"
    return {
        "show --json": ["-c", CLI, "show", run, "--json", "--store", url],
        "/api/runs/N": ["-c", SERVED, db, f"/api/runs/{run}"],
        "/runs/N": ["-c", SERVED, db, f"/runs/{run}"],
        "report": ["-c", CLI, "report", run, "--html", report, "--store", url],
    }


def measure(src: str, argv: list[str], report: str) -> tuple[float, float, int]:
    """CPU seconds, peak RSS (MB) and bytes printed (or written) of one child process."""
    env = {**os.environ, "PYTHONPATH": src}
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen([sys.executable, *argv], stdout=out, stderr=subprocess.PIPE,
                                 env=env, cwd=tempfile.gettempdir())  # fmt: skip
        _, status, usage = os.wait4(child.pid, 0)
        assert child.stderr is not None
        err = child.stderr.read().decode(errors="replace")
        if status != 0:
            raise SystemExit(f"{argv[2:]} failed: {err[-500:]}")
        printed = out.seek(0, 2)
    if "report" in argv:
        printed = Path(report).stat().st_size
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, printed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--run", default="1")
    parser.add_argument("--src", action="append", default=[])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sources = args.src or [str(ROOT / "src")]
    with tempfile.TemporaryDirectory() as tmp:
        report = str(Path(tmp) / "report.html")
        for name, argv in commands(args.db, args.run, report).items():
            for src in sources:
                samples = [measure(src, argv, report) for _ in range(args.repeat)]
                cpu = statistics.median(s[0] for s in samples)
                rss = statistics.median(s[1] for s in samples)
                print(
                    f"{name:12s} {src:32s} cpu {cpu:6.2f} s  peak {rss:6.0f} MB  "
                    f"printed {samples[0][2]:>12,} B  (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
