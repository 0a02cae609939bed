"""Issue 26: does the gate fail on regressions and not on noise? Simulated pairs of runs.

Each scenario draws pairs of runs (A = baseline, B = candidate) over a gold set of
``tags x size`` questions and puts every pair through ragmeter's own ``compare_runs`` and
the gate's verdicts (``--max-drop hit@5=0.02 --tag-max-drop 0.1``, the README's gate):

- a question's chance of a hit is drawn once per gold set (Beta(2, 1), mean 0.67);
- *high noise*: A and B draw each question's hit independently (two retrievers that agree
  only through the question's difficulty); *low noise*: B keeps A's outcome for 90% of
  the questions and redraws the rest (a small change);
- a *true drop* lowers every question's chance in B so hit@5 falls by that much on average;
- a *tag loses 80%*: one tag's hits in B are kept with probability 0.2.

Printed per scenario: how often the default gate fails (and is inconclusive), how often
the raw-threshold gate (``--strict``) fails, and how often diff's hidden-cluster flag
fires. Then the coverage of the judge's corrected estimate (``ppi_mean``) at 10 labels and
of the kappa interval at 20 labels.

    .venv/bin/python benchmarks/gate_calibration.py [--pairs 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.compare.comparison import Comparison, compare_runs, lower_is_better
from ragmeter.compare.verdicts import FAIL, INCONCLUSIVE, decide
from ragmeter.metrics.uncertainty import kappa_bootstrap_ci, ppi_mean

METRIC = "hit@5"
MAX_DROP = 0.02
TAG_MAX_DROP = 0.1


@dataclass(frozen=True)
class Scenario:
    name: str
    tags: int
    size: int
    noise: str = "high"  # "high" or "low"
    drop: float = 0.0  # a true drop of hit@5 over every question
    tag_loss: float = 0.0  # share of one tag's hits lost in B
    gain: float = 0.0  # a true rise of hit@5 (an improvement)

    @property
    def n(self) -> int:
        return self.tags * self.size


SCENARIOS = [
    Scenario("A/A high noise", 8, 5),
    Scenario("A/A high noise", 8, 25),
    Scenario("A/A high noise", 20, 10),
    Scenario("A/A low noise", 8, 5, noise="low"),
    Scenario("A/A low noise", 8, 25, noise="low"),
    Scenario("true drop 0.15", 8, 25, drop=0.15),
    Scenario("true drop 0.15, low noise", 8, 25, noise="low", drop=0.15),
    Scenario("true +0.10 (improvement)", 8, 5, gain=0.10),
    Scenario("true +0.10 (improvement)", 20, 10, gain=0.10),
    Scenario("one tag loses 80%", 8, 5, tag_loss=0.8),
    Scenario("one tag loses 80%", 8, 25, tag_loss=0.8),
    Scenario("one tag loses all", 8, 5, tag_loss=1.0),
]


def draw_pair(
    scenario: Scenario, rng: np.random.Generator
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]], dict[str, list[str]]]:
    """One pair of runs (per-question hit@5) and the tags of the questions."""
    n = scenario.n
    p = rng.beta(2.0, 1.0, size=n)
    a = (rng.random(n) < p).astype(np.float64)
    p_b = p
    if scenario.drop:
        p_b = p * (1.0 - scenario.drop / float(p.mean()))
    if scenario.gain:
        p_b = 1.0 - (1.0 - p) * (1.0 - scenario.gain / float(1.0 - p.mean()))
    p_b = np.clip(p_b, 0.0, 1.0)
    if scenario.noise == "low":
        keep = rng.random(n) < 0.9
        fresh = (rng.random(n) < p_b).astype(np.float64)
        # A kept outcome still feels a true change: a kept hit is lost with the drop's odds.
        kept = a * (rng.random(n) < np.divide(p_b, p, out=np.ones(n), where=p > 0))
        if scenario.gain:
            kept = np.maximum(a, (rng.random(n) < (p_b - p) / np.maximum(1 - p, 1e-9)))
        b = np.where(keep, kept, fresh)
    else:
        b = (rng.random(n) < p_b).astype(np.float64)
    if scenario.tag_loss:
        lost = slice(0, scenario.size)  # the first tag
        b[lost] = b[lost] * (rng.random(scenario.size) >= scenario.tag_loss)
    ids = [f"q{i:04d}" for i in range(n)]
    tags = {ids[i]: [f"t{i // scenario.size}"] for i in range(n)}
    return (
        {METRIC: dict(zip(ids, a.tolist(), strict=True))},
        {METRIC: dict(zip(ids, b.tolist(), strict=True))},
        tags,
    )


def compare(scenario: Scenario, rng: np.random.Generator, *, resamples: int) -> Comparison:
    a, b, tags = draw_pair(scenario, rng)
    return compare_runs(
        a,
        b,
        tags=tags,
        metrics=[METRIC],
        tag_drop_threshold=TAG_MAX_DROP,
        n_resamples=resamples,
        n_permutations=resamples,
        seed=int(rng.integers(1 << 31)),
    )


def gate_outcome(c: Comparison) -> tuple[str, bool, bool]:
    """(default verdict of the whole gate, strict gate failed, tag 0 failed by default)."""
    verdicts = decide(
        c, max_drop={METRIC: MAX_DROP}, tag_max_drop=TAG_MAX_DROP, tag_metrics={METRIC}
    )
    kinds = {v.verdict for v in verdicts}
    overall = FAIL if FAIL in kinds else (INCONCLUSIVE if INCONCLUSIVE in kinds else "pass")
    tag0 = any(v.tag == "t0" and v.verdict == FAIL for v in verdicts)
    sign = -1.0 if lower_is_better(METRIC) else 1.0
    m = c.metric(METRIC)
    strict = -sign * m.delta > MAX_DROP + 1e-12 or any(
        -sign * t.delta > TAG_MAX_DROP + 1e-12 for t in c.tags
    )
    return overall, strict, tag0


def run_scenario(scenario: Scenario, pairs: int, seed: int, resamples: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    fails = inconclusive = strict = flagged = tag0 = 0
    mde: list[float] = []
    tag_mde: list[float | None] = []
    for _ in range(pairs):
        c = compare(scenario, rng, resamples=resamples)
        overall, raw, t0 = gate_outcome(c)
        fails += overall == FAIL
        inconclusive += overall == INCONCLUSIVE
        strict += raw
        tag0 += t0
        flagged += bool(c.flagged)
        m = c.metric(METRIC)
        if m.detectable is not None:
            mde.append(m.detectable)
        tag_mde.append(c.tags[0].detectable)
    known = [x for x in tag_mde if x is not None]
    return {
        "scenario": scenario.name,
        "questions": f"{scenario.n} ({scenario.tags} x {scenario.size})",
        "pairs": pairs,
        "fail": fails / pairs,
        "inconclusive": inconclusive / pairs,
        "strict_fail": strict / pairs,
        "tag0_fail": tag0 / pairs,
        "flag": flagged / pairs,
        "mde_run": float(np.median(mde)) if mde else None,
        "mde_tag": float(np.median(known)) if len(known) > len(tag_mde) / 2 else None,
    }


def ppi_coverage(
    judge_error: tuple[float, float], labels: int, draws: int, seed: int, n_total: int = 200
) -> float:
    """Share of draws whose corrected interval holds the true mean.

    ``judge_error`` = (P(judge says 1 | truth 0), P(judge says 0 | truth 1)): (0.5, 0.0) is
    a lenient judge, (0.0, 0.3) a harsh one. The labelled questions are a random sample.
    """
    rng = np.random.default_rng(seed)
    covered = 0
    false_yes, false_no = judge_error
    for _ in range(draws):
        truth = (rng.random(n_total) < 0.7).astype(np.float64)
        flip = np.where(
            truth == 1.0, rng.random(n_total) < false_no, rng.random(n_total) < false_yes
        )
        judge = np.where(flip, 1.0 - truth, truth)
        idx = rng.choice(n_total, size=labels, replace=False)
        r = ppi_mean(judge, judge[idx], truth[idx])
        if r.interval is not None and r.interval[0] <= truth.mean() <= r.interval[1]:
            covered += 1
    return covered / draws


def kappa_coverage(
    labels: int, draws: int, seed: int, *, prevalence: float = 0.6, agreement: float = 0.85
) -> tuple[float, float]:
    """(coverage, share without an interval): how often the kappa interval holds the
    population kappa (estimated once from 200,000 items of the same model) among the draws
    that have one, and how often there is none ("too few labels", said to the user)."""
    rng = np.random.default_rng(seed)

    def sample(size: int) -> tuple[list[str], list[str]]:
        people = np.where(rng.random(size) < prevalence, "y", "n")
        same = rng.random(size) < agreement
        judge = np.where(same, people, np.where(people == "y", "n", "y"))
        return people.tolist(), judge.tolist()

    big_a, big_b = sample(200_000)
    pa = np.asarray(big_a) == "y"
    pb = np.asarray(big_b) == "y"
    p_o = float(np.mean(pa == pb))
    p_e = float(pa.mean() * pb.mean() + (1 - pa.mean()) * (1 - pb.mean()))
    kappa = (p_o - p_e) / (1 - p_e)
    covered = missing = 0
    for i in range(draws):
        a, b = sample(labels)
        ci = kappa_bootstrap_ci(a, b, seed=i)
        if ci is None:
            missing += 1
        elif ci[0] <= kappa <= ci[1]:
            covered += 1
    return covered / max(draws - missing, 1), missing / draws


def mc_error(rate: float, pairs: int) -> float:
    """Two standard errors of a simulated rate."""
    return 2.0 * math.sqrt(max(rate * (1 - rate), 1.0 / pairs) / pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows = [
        run_scenario(s, args.pairs, args.seed + i, args.resamples) for i, s in enumerate(SCENARIOS)
    ]
    judges = {
        "lenient judge (says yes to half the no's)": (0.5, 0.0),
        "lenient judge (to 30% of the no's)": (0.3, 0.0),
        "harsh judge (says no to 30% of the yes's)": (0.0, 0.3),
        "fair judge (10% wrong either way)": (0.1, 0.1),
    }
    coverage: dict[str, float | tuple[float, float]] = {
        f"PPI, 10 labels, {name}": ppi_coverage(err, 10, args.pairs * 2, args.seed)
        for name, err in judges.items()
    }
    for labels in (20, 50):
        for prevalence, agreement in ((0.6, 0.85), (0.5, 0.95), (0.85, 0.9), (0.85, 0.95)):
            name = f"kappa, {labels} labels, {prevalence:.0%} yes, {agreement:.0%} agreement"
            coverage[name] = kappa_coverage(
                labels, args.pairs, args.seed, prevalence=prevalence, agreement=agreement
            )
    if args.json:
        print(json.dumps({"gate": rows, "coverage": coverage}, indent=2))
        return
    print(
        f"{args.pairs} pairs per row; ± = two Monte Carlo standard errors of a rate near 5%: "
        f"{mc_error(0.05, args.pairs):.3f}"
    )
    head = ("scenario", "questions", "fails", "inconcl.", "strict fails", "tag t0 fails",
            "flag", "MDE run", "MDE tag")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [
            r["scenario"], r["questions"], f"{r['fail']:.1%}", f"{r['inconclusive']:.1%}",
            f"{r['strict_fail']:.1%}", f"{r['tag0_fail']:.1%}", f"{r['flag']:.1%}",
            "–" if r["mde_run"] is None else f"{r['mde_run']:.2f}",
            "none alone" if r["mde_tag"] is None else f"{r['mde_tag']:.2f}",
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    print()
    print("| interval | coverage (nominal 95%) | no interval (too few labels) |")
    print("|---|---|---|")
    for name, value in coverage.items():
        share, missing = value if isinstance(value, tuple) else (value, 0.0)
        print(f"| {name} | {share:.1%} | {missing:.1%} |")


if __name__ == "__main__":
    main()
