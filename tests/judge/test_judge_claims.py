"""Issue 17.5: claim-level diagnosis — claims, entailment per chunk, the RAGChecker metrics,
finer blame in `show` and `diff`, the offline lexical path and calibration of it.

Expected values are worked by hand from three questions (see ``QUESTIONS``):

- ``refund``: both answer claims come from the context; the second ("14 days before 2020")
  is wrong per the reference and only the irrelevant ``legacy.md`` chunk entails it
  -> noise_sensitivity_irrelevant 1/2, hallucination 0, claim recall 1, utilisation 1;
- ``ship``: the shipping document was not retrieved -> claim recall 0, hallucination 1;
- ``contact``: no reference answer; one of two answer claims is in no chunk
  -> hallucination 1/2 and nothing else.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ragmeter
from ragmeter.cli import main
from ragmeter.compare.diff import diff_runs
from ragmeter.evaluation.report import build_report
from ragmeter.examples import example_calibration_path
from ragmeter.gold.goldset import GoldSet
from ragmeter.judge import JudgeClient
from ragmeter.judge.claims import CLAIMS_VERSION, ClaimsCase, judge_claims
from ragmeter.judge.client import http_module
from ragmeter.judge.lexical import lexical_claims, lexical_entails
from ragmeter.judge.prompts import CLAIM_CHECK, CLAIMS
from ragmeter.judging.calibration import load_calibration_set
from ragmeter.judging.judge_runs import calibrate, judge_run_claims
from ragmeter.metrics.claims import claim_metrics
from ragmeter.store import Store

httpx = http_module()

DOCS = {
    "refunds.md": "Refunds are accepted within 30 days of delivery.",
    "legacy.md": "Refunds were accepted within 14 days of delivery before 2020.",
    "shipping.md": "Orders ship in 2 business days from Berlin.",
    "faq.md": "Contact support by email.",
}
# id: (question, relevant doc, retrieved docs, answer, reference answer, tags)
QUESTIONS: dict[str, tuple[str, str, list[str], str, str | None, list[str]]] = {
    "refund": (
        "How long do refunds take?",
        "refunds.md",
        ["refunds.md", "legacy.md"],
        "Refunds are accepted within 30 days of delivery. "
        "Refunds were accepted within 14 days before 2020.",
        "Refunds are accepted within 30 days of delivery.",
        ["policies"],
    ),
    "ship": (
        "How fast do orders ship?",
        "shipping.md",
        ["refunds.md"],
        "Orders ship in 2 business days.",
        "Orders ship in 2 business days from Berlin.",
        ["shipping"],
    ),
    "contact": (
        "How do I contact support?",
        "faq.md",
        ["faq.md"],
        "Contact support by email. Call us on 555-0100.",
        None,
        ["policies"],
    ),
}


def _gold(*, references: bool = True, only: tuple[str, ...] = ()) -> GoldSet:
    records = []
    for item_id, (question, doc, _, _, reference, tags) in QUESTIONS.items():
        if only and item_id not in only:
            continue
        record: dict[str, Any] = {
            "id": item_id,
            "question": question,
            "relevant": [{"doc": doc}],
            "tags": tags,
        }
        if reference is not None and references:
            record["reference_answer"] = reference
        records.append(record)
    return GoldSet.from_records(records)


def _search(question: str, k: int) -> list[dict[str, Any]]:
    found = next(v[2] for v in QUESTIONS.values() if v[0] == question)
    return [{"id": f"{d}#0", "doc": d, "text": DOCS[d]} for d in found[:k]]


def _answer(question: str, chunks: list[Any]) -> str:
    return next(v[3] for v in QUESTIONS.values() if v[0] == question)


def _run(
    store: Store, name: str = "gen", *, references: bool = True, only: tuple[str, ...] = ()
) -> int:
    gold = _gold(references=references, only=only)
    report = ragmeter.evaluate(gold, _search, k=2, store=store, generator=_answer, name=name)
    return report.run.id


def test_claim_metrics_by_hand() -> None:
    """Issue 17.5: the pure metrics on tables small enough to check by hand; undefined
    metrics are absent, never 0."""
    got = claim_metrics(
        answer_in_chunks=[[True, False], [False, True]],
        answer_in_reference=[True, False],
        reference_in_chunks=[[True, False]],
        reference_in_answer=[True],
        relevant=[True, False],
    )
    assert got == {
        "hallucination": 0.0,
        "context_claim_recall": 1.0,
        "noise_sensitivity_relevant": 0.0,
        "noise_sensitivity_irrelevant": 0.5,
        "noise_sensitivity": 0.5,
        "context_utilisation": 1.0,
    }
    # An incorrect claim entailed by a relevant AND an irrelevant chunk counts once, as relevant.
    both = claim_metrics(
        answer_in_chunks=[[True, True]],
        answer_in_reference=[False],
        reference_in_chunks=[[False, False]],
        reference_in_answer=[False],
        relevant=[True, False],
    )
    assert both["noise_sensitivity_relevant"] == 1.0
    assert both["noise_sensitivity_irrelevant"] == 0.0
    assert both["context_claim_recall"] == 0.0
    assert "context_utilisation" not in both  # no reference claim in the context: 0/0
    assert claim_metrics(answer_in_chunks=[], relevant=[True]) == {}
    # Nothing retrieved: every answer claim is unsupported and no reference claim is covered.
    empty = claim_metrics(
        answer_in_chunks=[[], []],
        answer_in_reference=[True, False],
        reference_in_chunks=[[]],
        reference_in_answer=[True],
        relevant=[],
    )
    assert empty["hallucination"] == 1.0 and empty["context_claim_recall"] == 0.0
    assert empty["noise_sensitivity"] == 0.0 and "context_utilisation" not in empty


def test_lexical_claims_run_end_to_end(store: Store) -> None:
    """Issue 17.5: `judge claims --lexical` path: per-question and per-tag metrics, stored
    verdicts with the judge identity, and the finer blame in the report."""
    run_id = _run(store)
    result = judge_run_claims(store, run_id, client=None)
    per_query = store.question_metrics(run_id)
    verdicts = store.judge_verdicts(run_id, "claims")
    report = build_report(store, run_id)
    judges = store.judge_runs(run_id)
    assert result.n_cases == result.n_verdicts == 3 and not result.errors
    assert result.metrics == {
        "context_claim_recall": 0.5,
        "hallucination": 0.5,
        "noise_sensitivity": 0.25,
        "noise_sensitivity_relevant": 0.0,
        "noise_sensitivity_irrelevant": 0.25,
        "context_utilisation": 1.0,
    }
    assert per_query["hallucination"] == {"refund": 0.0, "ship": 1.0, "contact": 0.5}
    assert per_query["context_claim_recall"] == {"refund": 1.0, "ship": 0.0}
    assert "contact" not in per_query["noise_sensitivity"]
    assert result.by_tag["policies"]["hallucination"] == 0.25
    assert result.by_tag["shipping"] == {
        "context_claim_recall": 0.0,
        "hallucination": 1.0,
        "noise_sensitivity": 0.0,
        "noise_sensitivity_relevant": 0.0,
        "noise_sensitivity_irrelevant": 0.0,
    }
    verdict = verdicts[("refund", "")]["verdict"]
    assert verdict["answer_in_chunks"] == [[True, False], [False, True]]
    assert verdict["judge"]["model"] == "lexical"
    assert judges["claims"]["config"]["prompt_version"] == "lexical-claims/1"
    blames = {row.id: row.blame for row in report.rows}
    assert blames == {
        "refund": "generation: noise",
        "ship": "retrieval",
        "contact": "generation: hallucination",
    }
    assert report.blame == {
        "retrieval": 1,
        "generation: hallucination": 1,
        "generation: noise": 1,
        "generation": 0,
        "ok": 0,
    }
    assert report.blame_by_tag["policies"]["generation: noise"] == 1


def test_runs_without_claims_keep_the_coarse_blame(store: Store) -> None:
    """Issue 17.5: a run never judged for claims keeps retrieval / generation / ok."""
    report = build_report(store, _run(store))
    assert list(report.blame) == ["retrieval", "generation", "ok"]


def test_cli_claims_show_and_diff(tmp_path: Path) -> None:
    """Issue 17.5: `ragmeter judge claims --lexical`, then `show` and `diff` print the
    finer blame per tag; old runs in the same diff show 0 for the finer tags."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    with Store.open(url) as store:
        _run(store, "old")
        _run(store, "new")
    runner = CliRunner()
    judged = runner.invoke(main, ["judge", "claims", "new", "--lexical", "--store", url])
    assert judged.exit_code == 0, judged.output
    assert "claims judged by lexical: 3/3 verdicts" in judged.output
    assert "hallucination = 0.500" in judged.output
    assert "claim metrics by tag" in judged.output
    shown = runner.invoke(main, ["show", "new", "--store", url])
    assert shown.exit_code == 0, shown.output
    assert (
        "blame: retrieval 1 · generation: hallucination 1 · generation: noise 1 · "
        "generation 0 · ok 0"
    ) in shown.output
    diffed = runner.invoke(main, ["diff", "old", "new", "--store", url])
    assert diffed.exit_code == 0, diffed.output
    assert "generation: noise" in diffed.output
    as_json = runner.invoke(main, ["judge", "claims", "new", "--lexical", "--json", "--store", url])
    payload = json.loads(as_json.output)
    assert payload["metrics"]["context_utilisation"] == 1.0
    assert payload["by_tag"]["policies"]["hallucination"] == 0.25


def test_diff_refuses_claim_metrics_of_different_judges(tmp_path: Path, store: Store) -> None:
    """Issue 17.5 with 17.6: claim metrics made by different judges are not subtracted."""
    with _judge_server() as (client, _):
        a, b = _run(store, "a"), _run(store, "b")
        judge_run_claims(store, a, client=None)
        judge_run_claims(store, b, client=client)
        diff = diff_runs(store, a, b)
    refused = {r.metric for r in diff.judge_refusals}
    assert "hallucination" in refused and "context_claim_recall" in refused


# -- the model path, against a deterministic judge on a mock transport --------------------


class _Judge:
    """Plays a claims judge by the lexical rule: sentences for claims, the rule for
    entailment. Counts requests per prompt; ``short`` answers one value too few."""

    def __init__(self, *, short: bool = False) -> None:
        self.requests: dict[str, int] = {"claims": 0, "check": 0}
        self.short = short

    def __call__(self, request: Any) -> Any:
        body = json.loads(request.content)
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if system == CLAIMS.system:
            self.requests["claims"] += 1
            text = user.split("TEXT: ", 1)[1].rsplit("\n\nReply as", 1)[0]
            reply: dict[str, Any] = {"claims": lexical_claims(text)}
        else:
            assert system == CLAIM_CHECK.system
            self.requests["check"] += 1
            premise = user.split("PASSAGE:\n", 1)[1].split("\n\nCLAIMS:\n", 1)[0]
            listed = user.split("\n\nCLAIMS:\n", 1)[1].rsplit("\n\nReply as", 1)[0]
            claims = [re.sub(r"^\d+\. ", "", line) for line in listed.splitlines()]
            values = [lexical_entails(c, premise) for c in claims]
            reply = {"entailed": values[:-1] if self.short else values}
        return httpx.Response(
            200,
            json={
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "judge",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(reply)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )


class _judge_server:
    def __init__(self, **options: Any) -> None:
        self.judge = _Judge(short=options.pop("short", False))
        self.options = options

    def __enter__(self) -> tuple[JudgeClient, _Judge]:
        client = JudgeClient(
            model="judge",
            base_url="http://judge.test/v1",
            transport=httpx.MockTransport(self.judge),
            **self.options,
        )
        return client, self.judge

    def __exit__(self, *exc: object) -> None:
        return None


def test_model_path_matches_the_rule_and_caches_per_claim_and_chunk(store: Store) -> None:
    """Issue 17.5: through a JudgeClient the metrics equal the lexical ones when the model
    plays the same rule; a second pass sends nothing; a new question whose claim and chunk
    were seen before reuses the pair's cached verdict."""
    with _judge_server() as (client, judge):
        run_id = _run(store)
        first = judge_run_claims(store, run_id, client=client)
        sent = dict(judge.requests)
        second = judge_run_claims(store, run_id, client=client)
        again = dict(judge.requests)
        lexical = judge_run_claims(store, _run(store, "lex"), client=None)
    assert first.metrics == lexical.metrics
    assert first.judge == "claims" and first.source == "judge"
    # 3 answers + 2 references to split; checks: one request per distinct premise.
    assert sent["claims"] == 5 and sent["check"] > 0
    assert first.usage["requests"] == sent["claims"] + sent["check"]
    assert again == sent, "the second pass must send no request"
    assert second.usage["requests"] == 0 and second.usage["cached"] > 0
    assert second.metrics == first.metrics


def test_repeats_are_cached_per_repeat() -> None:
    """Issue 17.5 with 17.4: with --repeats 3 every check is sent three times (one cache
    entry per repeat), and a second pass sends none."""
    with _judge_server(repeats=3) as (client, judge), Store.memory() as store:
        run_id = _run(store)
        first = judge_run_claims(store, run_id, client=client)
        checks_once = judge.requests["check"]
        judge_run_claims(store, run_id, client=client)
        after = dict(judge.requests)
    with _judge_server() as (single, one_judge), Store.memory() as store:
        judge_run_claims(store, _run(store), client=single)
    assert checks_once == 3 * one_judge.requests["check"]
    assert after["claims"] == one_judge.requests["claims"], "extraction is not repeated"
    assert after["check"] == checks_once
    assert first.stability["repeats"] == 3 and first.stability["n_unstable"] == 0


def test_a_short_reply_is_a_per_question_error_not_a_guess(store: Store) -> None:
    """Issue 17.5: a check reply with fewer values than claims fails those questions (with a
    message) instead of padding the table."""
    with _judge_server(short=True) as (client, _):
        run_id = _run(store)
        result = judge_run_claims(store, run_id, client=client)
        verdicts = store.judge_verdicts(run_id, "claims")
    assert result.n_verdicts < result.n_cases
    assert all("claim check failed" in e for e in result.errors.values())
    assert all(v["error"] for k, v in verdicts.items() if k[0] in result.errors)


def test_judge_claims_identity() -> None:
    """Issue 17.5: the model judge's identity names both prompts and hashes them."""
    with _judge_server() as (client, _):
        case = ClaimsCase("q", "Q?", "Refunds take 30 days.", (DOCS["refunds.md"],), (True,))
        batch, _ = judge_claims(client, [case])
    assert batch.judge["prompt_version"] == CLAIMS_VERSION == "claims/1+claim-check/1"
    assert batch.judge["prompt_hash"] and batch.judge["repeats"] == 1


def test_calibrate_the_lexical_claims_judge_on_the_bundled_set(store: Store) -> None:
    """Issue 17.5: `judge calibrate --judge lexical-claims` agrees with the bundled labels
    by a measured amount, and a run judged by the same rule then shows as calibrated."""
    items = load_calibration_set(example_calibration_path())
    result, batch = calibrate(items, store=store, judge="claims")
    run_id = _run(store)
    judged = judge_run_claims(store, run_id, client=None)
    assert batch.judge["prompt_version"] == "lexical-claims/1"
    assert result.n == len(items)
    assert judged.calibration is not None
    assert judged.calibration["prompt_version"] == "lexical-claims/1"


def test_dashboard_run_page_shows_the_finer_blame(file_store: Store, store_path: Path) -> None:
    """Issue 17.5: the run page's blame badges and per-tag table carry the finer kinds."""
    pytest.importorskip("fastapi", reason="the dashboard needs the [web] extra")
    from fastapi.testclient import TestClient

    from ragmeter.web.app import create_app

    run_id = _run(file_store)
    judge_run_claims(file_store, run_id, client=None)
    with TestClient(create_app(str(store_path)), base_url="http://127.0.0.1") as client:
        page = client.get(f"/runs/{run_id}").text
    blame = page[page.index('id="blame"') : page.index("</section>", page.index('id="blame"'))]
    assert '<span class="badge blame-generation-noise">generation: noise 1</span>' in blame
    assert '<th data-sort="num" class="num">generation: hallucination</th>' in blame
    assert '<tr data-tag="shipping"><td>shipping</td><td class="num">1</td>' in blame


def test_bundled_set_has_reference_answers_for_every_claim_metric() -> None:
    """Issue 17.5: every bundled calibration item has a reference answer, so the lexical
    claims judge defines every claim metric on it (figures as in docs/judge.md)."""
    from ragmeter.judge.claims import judge_claims_lexical, mean_metrics
    from ragmeter.metrics.claims import CLAIM_METRICS

    items = load_calibration_set(example_calibration_path())
    assert len(items) == 28 and all(item.reference for item in items)
    means = mean_metrics(judge_claims_lexical([i.claims_case() for i in items]).verdicts)
    assert list(means) == list(CLAIM_METRICS)
    assert {k: (round(m, 3), n) for k, (m, n) in means.items()} == {
        "context_claim_recall": (0.845, 28),
        "hallucination": (0.417, 28),
        "noise_sensitivity": (0.054, 28),
        "noise_sensitivity_relevant": (0.054, 28),
        # Every bundled context entry is relevant: no claim can come from an irrelevant one.
        "noise_sensitivity_irrelevant": (0.0, 28),
        "context_utilisation": (0.741, 27),
    }


def test_cli_calibrate_lexical_claims_prints_the_set_metrics(tmp_path: Path) -> None:
    """Issue 17.5: `judge calibrate --judge lexical-claims` prints agreement and each claim
    metric on the set; reasons quoting `[tool.uv]` print as text, not markup."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    out = CliRunner().invoke(
        main, ["judge", "calibrate", "--judge", "lexical-claims", "--store", url]
    )
    assert out.exit_code == 0, out.output
    assert "judge: lexical (lexical-claims/1)" in out.output
    assert "context_claim_recall on this set: 0.845 (28 items)" in out.output
    assert "[tool.uv]" in out.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"reference": "a", "ground_truth": "b"}, "give one reference answer"),
        ({"reference_answer": ""}, '"reference_answer" must be a non-empty string'),
    ],
    ids=["two-references", "empty-reference"],
)
def test_calibration_reference_answer_is_validated(
    tmp_path: Path, extra: dict[str, str], message: str
) -> None:
    """Issue 17.5: a calibration item's reference answer is one non-empty string."""
    import yaml

    from ragmeter.errors import InputError

    item = {"id": "x", "question": "Q?", "context": ["c"], "answer": "A.", **extra}
    path = tmp_path / "set.yaml"
    path.write_text(yaml.safe_dump([item]), encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_calibration_set(path)


def test_a_context_chunk_without_text_is_an_error_not_a_hallucination(store: Store) -> None:
    """Issue 17.5: a run that kept no text for a context chunk cannot be checked; the
    question is an error (shown as coverage), not a question whose claims all look
    hallucinated."""
    gold = _gold(only=("ship",))

    def bare(question: str, k: int) -> list[dict[str, Any]]:
        return [{"id": "shipping.md#0", "doc": "shipping.md"}]

    run_id = ragmeter.evaluate(gold, bare, k=1, store=store, generator=_answer).run.id
    result = judge_run_claims(store, run_id, client=None)
    per_query = store.question_metrics(run_id)
    assert result.n_cases == 1 and result.n_verdicts == 0
    assert result.errors == {"ship": "no stored text for context chunk shipping.md#0"}
    assert "hallucination" not in per_query and result.metrics == {}


def test_no_reference_and_no_relevant_chunk_stays_retrieval(store: Store) -> None:
    """Issue 17.5: without a reference answer, a failed answer whose context held no
    relevant chunk stays `retrieval` even when its claims are unsupported."""
    records = [
        {
            "id": "ship",
            "question": QUESTIONS["ship"][0],
            "relevant": [{"doc": "shipping.md"}],
            "answer_contains": ["Berlin"],
        }
    ]
    gold = GoldSet.from_records(records)
    run_id = ragmeter.evaluate(gold, _search, k=2, store=store, generator=_answer).run.id
    judge_run_claims(store, run_id, client=None)
    report = build_report(store, run_id)
    assert report.rows[0].blame == "retrieval"


def _copy_first_chunk(question: str, chunks: list[Any]) -> str:
    return str(chunks[0].text)


def test_gate_and_diff_read_hallucination_as_lower_is_better(store: Store) -> None:
    """Issue 17.5: a fall in hallucination passes `--max-drop hallucination=0` and a rise
    fails it ("rose"), for the run and for its clusters; before, a fall counted as a drop."""
    from ragmeter.compare.gate import GateRules, check_gate

    worse = _run(store, "worse")  # hallucination 0.5
    better = ragmeter.evaluate(
        _gold(), _search, k=2, store=store, generator=_copy_first_chunk, name="better"
    ).run.id
    for run_id in (worse, better):
        judge_run_claims(store, run_id, client=None)
    # --strict: four questions are too few for evidence; the direction is what is tested.
    rules = GateRules.parse(["hallucination=0"], strict=True)
    improved = check_gate(diff_runs(store, worse, better), rules)
    regressed = check_gate(diff_runs(store, better, worse), rules)
    flags = diff_runs(store, better, worse).flagged
    assert improved.passed, improved.reasons
    assert not regressed.passed
    assert regressed.reasons[0].startswith("hallucination rose by 0.500 (0.000 -> 0.500)")
    assert any('cluster "policies": hallucination rose by 0.250' in r for r in regressed.reasons)
    assert all(f.metric != "hallucination" for f in flags)  # the total rose too: not flagged


def test_a_rise_in_hallucination_reads_as_worse_on_every_page(tmp_path: Path) -> None:
    """Issue 17.5: the dashboard's diff page, runs table and the static report colour a rise in
    hallucination or noise as worse, like the CLI's diff and the gate (it used to be 'better')."""
    from ragmeter.compare.diff_html import sign as _sign
    from ragmeter.metrics import lower_is_better
    from ragmeter.web.render import Renderer

    assert _sign(0.1, "hallucination") == "worse"
    assert _sign(0.1, "noise_sensitivity") == "worse"
    assert _sign(0.1, "mrr") == "better"
    assert lower_is_better("hallucination") and lower_is_better("noise_sensitivity")
    (tmp_path / "t.html").write_text(
        "{% for m in ms %}{{ m }}={{ 'low' if m is lower_is_better else 'high' }};{% endfor %}"
    )
    out = Renderer(tmp_path).render("t.html", {"ms": ["hallucination", "hit@5", "latency_p95_ms"]})
    assert out == "hallucination=low;hit@5=high;latency_p95_ms=low;"
