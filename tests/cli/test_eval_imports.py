"""Issue 29.2: `eval --json` over a run file imports only what the work needs.

A whole `ragmeter eval --retriever run:FILE --json` runs in a fresh interpreter; afterwards
its ``sys.modules`` is checked, so a module-level import that drags a printing library back
onto this path fails here instead of costing every scripted eval.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _fresh import Ran, command_modules, fresh_json

#: Loaded only to print for a person: a ``--json`` eval must not import them.
NOT_FOR_JSON = ("rich",)
#: What an eval of plain gold records and a run file does not use (issue 29.2): a TOML
#: parser (no ``ragmeter.toml`` here) and pydantic's plugin loader, which pydantic imports
#: when it builds a model's validators: plain gold records are made without them.
NOT_FOR_A_RUN_FILE = ("tomllib", "pydantic.plugin._loader")
#: What ``evaluate()`` into a store never writes: the query log and its row redaction
#: (issue 29.2, round 2); nor, for a gold set in memory on the local executor, the gold
#: file readers and the Ray executor's module (round 5).
NOT_FOR_EVALUATE = (
    "ragmeter.store._querylog",
    "ragmeter.store._scrub",
    "ragmeter.gold.files",
    "ragmeter.executors.ray",
)


@pytest.fixture(scope="module")
def run_file_eval(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """A 3-question BEIR gold folder and a run file, evaluated with --json in a subprocess."""
    folder = tmp_path_factory.mktemp("runfile-imports")
    gold = folder / "gold"
    (gold / "qrels").mkdir(parents=True)
    (gold / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n"
    )
    queries = [{"_id": f"q{i}", "text": f"question {i}"} for i in (1, 2, 3)]
    (gold / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    # q1 finds d1 first, q2 finds d2 second, q3 misses.
    run = folder / "run.trec"
    lines = ["q1 Q0 d1 1 3.0 t", "q1 Q0 d9 2 2.0 t", "q2 Q0 d9 1 3.0 t", "q2 Q0 d2 2 2.0 t"]
    run.write_text("\n".join([*lines, "q3 Q0 d8 1 1.0 t"]) + "\n")
    args = ["eval", "--gold", str(gold), "--retriever", f"run:{run}",
            "--store", f"sqlite:///{folder / 'r.db'}", "--json"]  # fmt: skip
    return command_modules(args, folder)


def test_the_json_report_is_complete(run_file_eval: Ran) -> None:
    """Issue 29.2: the lean path still prints the whole report (hand-counted means)."""
    report = json.loads(run_file_eval.output)
    metrics = report["metrics"]
    assert metrics["hit@1"] == pytest.approx(1 / 3)
    assert metrics["mrr"] == pytest.approx((1 + 1 / 2 + 0) / 3)
    assert [row["id"] for row in report["misses"]] == ["q3"]


@pytest.mark.parametrize("module", NOT_FOR_JSON + NOT_FOR_A_RUN_FILE)
def test_json_eval_of_a_run_file_does_not_import(module: str, run_file_eval: Ran) -> None:
    """Issue 29.2: printing JSON needs no terminal library; importing it cost ~40 ms of a
    run:FILE eval whose floor (pytrec_eval on the same files) is ~140 ms."""
    modules = run_file_eval.modules
    assert "ragmeter.cli.eval" in modules and "ragmeter.store" in modules
    assert not {m for m in modules if m == module or m.startswith(module + ".")}


_EVALUATE_A_CALLABLE = """
import json, sys
import ragmeter
from ragmeter.gold.goldset import GoldSet
from ragmeter.gold.items import GoldItem, Relevance
from ragmeter.store import Store

records = [{"id": f"q{i}", "question": f"question {i}", "relevant": [f"d{i}"]} for i in range(3)]
gold = GoldSet.from_records(records, name="lean")
with Store.memory() as store:
    report = ragmeter.evaluate(gold, lambda q, k: [{"id": "d1", "doc": "d1"}], k=3, store=store)
built = GoldItem.__pydantic_complete__ or Relevance.__pydantic_complete__
print(json.dumps({"mrr": report.metrics["mrr"], "built": built, "modules": sorted(sys.modules)}))
"""


def test_evaluate_of_a_callable_builds_no_pydantic_validator(tmp_path: Path) -> None:
    """Issue 29.2: ``evaluate()`` of plain gold records and a Python function neither builds
    the gold models' validators (~30 ms of every eval) nor loads what the run does not use."""
    out, _ = fresh_json(_EVALUATE_A_CALLABLE, tmp_path)
    assert out["mrr"] == pytest.approx(1 / 3)  # q1 finds d1 first; q0 and q2 miss
    assert out["built"] is False
    assert not set(NOT_FOR_A_RUN_FILE + NOT_FOR_EVALUATE) & set(out["modules"])
