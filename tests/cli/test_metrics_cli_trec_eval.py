"""Issue 16: `ragmeter metrics -m official` on trec_eval 10's own test files prints the
values of trec_eval's expected-output files, for every measure both have.

No build needed: the expected outputs ship with the source (`test/out.*`). trec_eval
prints counts (num_ret, num_rel, num_rel_ret) as sums over questions, ragmeter as
means: the test compares the mean with sum / num_q.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from _trec_eval10 import SOURCE
from ragmeter.cli import main
from ragmeter.metrics import TREC_CUTOFFS

TEST = SOURCE / "test"
pytestmark = pytest.mark.skipif(
    not TEST.is_dir(), reason=f"trec_eval 10 test files not found at {TEST} (needs ../shared)"
)

OURS_TO_TREC = {
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "map": "map",
    "rprec": "Rprec",
    "bpref": "bpref",
    "mrr": "recip_rank",
    **{f"precision@{k}": f"P_{k}" for k in TREC_CUTOFFS},
}
EXTRA = {  # measures outside `official` that -m all_trec prints
    "ndcg": "ndcg",
    **{f"ndcg@{k}": f"ndcg_cut_{k}" for k in TREC_CUTOFFS},
    **{f"recall@{k}": f"recall_{k}" for k in TREC_CUTOFFS},
    **{f"map@{k}": f"map_cut_{k}" for k in TREC_CUTOFFS},
    **{f"hit@{k}": f"success_{k}" for k in (1, 5, 10)},
    "rbp(p=0.9)": "rbp",
}


def expected_all(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        if qid == "all":
            out[name] = value
    return out


CASES = [
    # (qrels, run, expected output, measures beyond official it holds)
    ("qrels.test", "results.test", "out.test", False),
    ("qrels.test.with-comments", "results.test", "out.test", False),
    ("qrels.comment.test", "results.comment.test", "out.comment.test", False),
    ("qrels.test", "results.test", "out.test.a", True),
    ("qrels.test", "results.trunc", "out.test.aqc", True),  # -c: a question is missing
]


@pytest.mark.parametrize(("qrels", "run", "out", "all_trec"), CASES, ids=[c[2] for c in CASES])
def test_official_matches_trec_eval_expected_output(
    qrels: str, run: str, out: str, all_trec: bool
) -> None:
    """Issue 16: same four-decimal values as trec_eval 10's own expected outputs."""
    expected = expected_all(TEST / out)
    names = dict(OURS_TO_TREC)
    args = ["metrics", "--qrels", str(TEST / qrels), "--run", str(TEST / run), "-m", "official"]
    if all_trec:
        names.update(EXTRA)
        for metric in EXTRA:
            args += ["-m", metric]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    printed = {}
    for line in result.stdout.splitlines():
        name, qid, value = line.split("\t")
        assert qid == "all"
        printed[name] = value
    assert list(printed)[: len(OURS_TO_TREC)] == list(OURS_TO_TREC)
    num_q = int(expected["num_q"])
    for metric, key in names.items():
        if key.startswith("num_"):
            # the printed mean has four decimals: its sum is exact to 0.00005 * num_q
            total = float(printed[metric]) * num_q
            assert abs(total - float(expected[key])) <= 0.00005 * num_q + 1e-9, metric
        else:
            assert printed[metric] == expected[key], (metric, key)
