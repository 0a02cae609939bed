"""Several processes writing to one store at once: SQLite and PostgreSQL (issues 3 and 9)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _net import wait_until
from ragmeter.store import Store

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from types import SimpleNamespace
    from ragmeter.documents import Hit
    from ragmeter.run import QuestionResult
    from ragmeter.store import Store

    db, name, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    n, batch = int(sys.argv[4]), int(sys.argv[5])
    go.with_name(f"ready-{name}").touch()  # imported: waiting at the start line
    while not go.exists():  # start together, so migrations and writes overlap
        time.sleep(0.005)
    records = [{"id": f"q{i}"} for i in range(n)]
    gold = SimpleNamespace(hash="shared-gold", name="g", to_records=lambda: records)
    with Store.open(db) as store:
        store.save_gold(gold)
        run = store.create_run(name=name, gold_hash=gold.hash, retriever="x", config={},
                               k=10, level="doc", commit=None)
        for start in range(0, n, batch):
            rows = [
                QuestionResult(
                    item_id=f"q{i}",
                    hits=tuple(Hit(id=f"d{j}#{i}", doc=f"d{j}", score=float(10 - j))
                               for j in range(10)),
                    latency_ms=0.1,
                )
                for i in range(start, min(n, start + batch))
            ]
            store.add_results(run.id, rows)
            store.completed_items(run.id)  # readers interleave with the other writer
        store.set_metrics(run.id, {"mrr": 1.0}, {"mrr": {f"q{i}": 1.0 for i in range(n)}})
        store.finish_run(run.id, "complete", n_questions=n, n_errors=0)
    print(run.id)
    """
)


@pytest.mark.slow
def test_processes_write_one_store(store_url: str, tmp_path: Path) -> None:
    """Issue 3, 9: three `ragmeter eval` processes on one store all complete, no lost rows.

    All open a store that does not exist yet (so they race on creating and
    migrating it), then write 2,000 results each in batches of 50.
    """
    db, go, script = store_url, tmp_path / "go", tmp_path / "writer.py"
    script.write_text(WRITER)
    n = 2_000
    names = ("first", "second", "third")
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(db), name, str(go), str(n), "50"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    wait_until(
        lambda: all((tmp_path / f"ready-{name}").exists() for name in names),
        timeout=120,
        what="every writer at the start line",
    )
    go.touch()
    outputs = [p.communicate(timeout=240) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert err == ""
    with Store.open(db) as store:
        runs = store.list_runs()
        assert sorted(r.name for r in runs) == sorted(names)
        assert sorted(int(out) for out, _ in outputs) == sorted(r.id for r in runs)
        expected = {f"q{i}" for i in range(n)}
        for run in runs:
            assert (run.status, run.n_questions, run.metrics) == ("complete", n, {"mrr": 1.0})
            back = list(store.results(run.id))
            assert len(back) == n and {r.item_id for r in back} == expected
            assert all(len(r.hits) == 10 for r in back)
            assert len(store.question_metrics(run.id)["mrr"]) == n
        assert store.load_gold_records("shared-gold")[0] == {"id": "q0"}
