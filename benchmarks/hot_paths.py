"""Speed of the paths a test used to time (issues 2, 3, 7, 19.3, 19.9, 29.1; moved here from
the tests by issue 25.4).

The tests check what is computed, and where a time bound guarded an algorithmic blow-up
they count the work instead (``tests/_scaling.py``). This prints the time, beside a named
peer measured in the same rounds:

- loading a 5,000-item gold set (JSONL, YAML) beside the parser underneath (``json.loads``
  of each line, ``yaml.safe_load``);
- ``QueryLogger.log()`` p50/p99 over 3,000 calls paced at ~1,000/s on a SQLite file, beside
  ``queue.Queue.put`` of the same values;
- ``ragmeter show`` of a run with a 1 MB document id beside the same run with short ids;
- refusing the 570-byte YAML "billion laughs" beside loading a plain gold file that size;
- an async retriever sleeping 0.2 s, 4 questions at concurrency 4, beside one 0.2 s call;
- the distinct-value bootstrap and randomization test beside the per-question procedures.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/hot_paths.py [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import queue
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _timing import ROOT, Row, footer, header, show, side_by_side

sys.path.insert(0, str(Path(ROOT) / "tests"))

import ragmeter  # noqa: E402
from ragmeter.errors import GoldSetError  # noqa: E402
from ragmeter.gold.files import load_gold  # noqa: E402
from ragmeter.gold.goldset import GoldSet  # noqa: E402
from ragmeter.store import Store  # noqa: E402

N_ITEMS = 5_000
N_LOGGED = 3_000
N_STATS = 20_000


def gold_loading(rounds: int, tmp: Path) -> None:
    from gold.test_goldset import _records

    gold = GoldSet.from_records(_records(N_ITEMS))
    for suffix, peer, parse, budget in (
        (".jsonl", "json.loads of each line", lambda t: [json.loads(x) for x in t.splitlines()],
         "< 5 s"),
        (".yaml", "yaml.safe_load", yaml.safe_load, "< 15 s"),
    ):  # fmt: skip
        path = tmp / f"big{suffix}"
        gold.save(path)
        text = path.read_text(encoding="utf-8")
        side_by_side(
            f"load_gold: {N_ITEMS:,} items ({suffix[1:]})",
            lambda path=path: load_gold(path),
            peer,
            lambda parse=parse, text=text: parse(text),
            budget,
            rounds=rounds,
        )


def query_log(rounds: int, tmp: Path) -> None:
    from ragmeter.feedback.querylog import QueryLogger

    hits = [{"id": f"d{i}.md#0", "doc": f"d{i}.md", "score": 1.0, "text": "x" * 300}
            for i in range(10)]  # fmt: skip
    logged: list[float] = []
    floor: list[float] = []
    for run in range(rounds):
        with QueryLogger(store=str(tmp / f"q{run}.db")) as logger:
            for i in range(N_LOGGED):
                start = time.perf_counter()
                logger.log(f"query {i}", hits, latency_ms=12.0, user="u")
                logged.append(time.perf_counter() - start)
                bare: queue.Queue[Any] = queue.Queue()
                start = time.perf_counter()
                bare.put(("q", (f"query {i}", hits, 12.0, "u")))
                floor.append(time.perf_counter() - start)
                time.sleep(0.0005)  # paced like a busy service, ~1,000 requests/s
    for name, q in (("p50", 49), ("p99", 98)):
        show(
            Row(
                f"QueryLogger.log(): {name} of {N_LOGGED:,} calls, SQLite",
                statistics.quantiles(logged, n=100)[q],
                "queue.Queue.put",
                statistics.quantiles(floor, n=100)[q],
                "p99 < 2 ms" if name == "p99" else "",
            )
        )


def show_big_id(rounds: int, tmp: Path) -> None:
    from click.testing import CliRunner

    from cli.test_terminal_output import _gold, _search
    from ragmeter.cli import main

    def short(question: str, k: int) -> list[dict[str, Any]]:
        return [{"doc": "evil.md"}, {"doc": "shipping.md"}]

    stores = {}
    for name, search in (("big", _search), ("short", short)):
        stores[name] = tmp / f"{name}.db"
        with Store.open(stores[name]) as store:
            ragmeter.evaluate(_gold(), search, store=store, commit="")

    def shown(name: str) -> None:
        result = CliRunner().invoke(main, ["show", "1", "--store", str(stores[name])])
        assert result.exit_code == 0, result.output

    side_by_side(
        "ragmeter show: a run with a 1 MB document id",
        lambda: shown("big"),
        "the same run with short ids",
        lambda: shown("short"),
        "< 5 s (was 90 s)",
        rounds=rounds,
    )


def yaml_laughs(rounds: int, tmp: Path) -> None:
    from project.test_input_hardening import _laughs

    laughs = _laughs(tmp / "laughs.yaml")
    plain = tmp / "plain.yaml"
    GoldSet.from_records(
        [{"id": f"q{i}", "question": f"Question {i}?", "relevant": [f"d{i}.md"]} for i in range(8)]
    ).save(plain)

    def refused() -> None:
        try:
            load_gold(laughs)
        except GoldSetError:
            return
        raise SystemExit("the billion laughs file was loaded")

    side_by_side(
        f"load_gold: YAML billion laughs ({laughs.stat().st_size} B) refused",
        refused,
        f"load_gold: a plain {plain.stat().st_size} B gold file",
        lambda: load_gold(plain),
        "< 1 s (was 64 s)",
        rounds=rounds,
    )


def async_retriever(rounds: int) -> None:
    gold = GoldSet.from_records(
        [{"id": f"q{i}", "question": f"q{i}", "relevant": ["a.md"]} for i in range(4)]
    )

    async def slow(question: str, k: int) -> list[dict[str, Any]]:
        await asyncio.sleep(0.2)
        return [{"id": "a.md#0", "doc": "a.md"}]

    side_by_side(
        "evaluate: 4 async calls of 0.2 s, concurrency 4",
        lambda: ragmeter.evaluate(gold, slow, k=5, store=Store.memory(), concurrency=4),
        "one 0.2 s call",
        lambda: asyncio.run(slow("q", 5)),
        "< 0.75 s",
        rounds=rounds,
    )


def distinct_stats(rounds: int) -> None:
    from compare.test_stats_distinct import _case, _plain_bootstrap, _plain_sign_flips
    from ragmeter.compare.stats import paired_bootstrap_ci, paired_randomization_test

    a, b = _case("binary", N_STATS, 5)
    d = b - a
    side_by_side(
        f"bootstrap + randomization, {N_STATS:,} questions",
        lambda: (paired_bootstrap_ci(a, b), paired_randomization_test(a, b)),
        "the per-question procedures",
        lambda: (_plain_bootstrap(d, 0), _plain_sign_flips(d, 0)),
        "< 2 s CPU at 100,000",
        rounds=rounds,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    header()
    with tempfile.TemporaryDirectory() as tmp:
        gold_loading(args.rounds, Path(tmp))
        query_log(args.rounds, Path(tmp))
        show_big_id(args.rounds, Path(tmp))
        yaml_laughs(args.rounds, Path(tmp))
        async_retriever(args.rounds)
        distinct_stats(args.rounds)
    footer()


if __name__ == "__main__":
    main()
