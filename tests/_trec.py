"""trec_eval (pytrec_eval) as the reference, each evaluation in a fresh process.

trec_eval keeps per-query state in C static variables; after many evaluators in one
long-lived process (a whole test session) pytrec-eval-terrier 0.5.x was seen to spin
forever inside ``evaluate``. A fresh interpreter per evaluation costs ~0.2 s and makes
the reference deterministic; a hang becomes a clear test failure instead of a stuck run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any

REFERENCE_TIMEOUT_S = 300

#: ragmeter's default metrics at k = 10 -> trec_eval's measure of the same number.
DEFAULT_MEASURES = {
    "hit@1": "success_1",
    "hit@5": "success_5",
    "hit@10": "success_10",
    "recall@5": "recall_5",
    "recall@10": "recall_10",
    "precision@5": "P_5",
    "mrr": "recip_rank",
    "ndcg@5": "ndcg_cut_5",
    "ndcg@10": "ndcg_cut_10",
    "map": "map",
}

_SCRIPT = """
import json, sys
import pytrec_eval
data = json.load(sys.stdin)
if data["run_lines"] is not None:
    run = pytrec_eval.parse_run(line for line in data["run_lines"] if line.strip())
else:
    run = data["run"]
out = pytrec_eval.RelevanceEvaluator(data["qrels"], set(data["measures"])).evaluate(run)
json.dump({"values": out, "parsed": run if data["return_run"] else None}, sys.stdout)
"""


def trec_eval(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]] | None,
    measures: Iterable[str],
    *,
    run_lines: list[str] | None = None,
    return_run: bool = False,
) -> Any:
    """pytrec_eval's per-query values (and, with ``return_run``, its parse of ``run_lines``)."""
    payload = json.dumps(
        {
            "qrels": qrels,
            "run": run,
            "run_lines": run_lines,
            "measures": sorted(measures),
            "return_run": return_run,
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        input=payload,
        capture_output=True,
        text=True,
        timeout=REFERENCE_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pytrec_eval failed (exit {done.returncode}): {done.stderr[-2000:]}")
    data = json.loads(done.stdout)
    return (data["values"], data["parsed"]) if return_run else data["values"]
