"""``ragmeter explain`` and the "why missed" of ``ragmeter show`` through the CLI (issue 28)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from ragmeter.cli import main
from ragmeter.evaluation.job import EvalJob
from ragmeter.evaluation.jobs import run_job
from ragmeter.store import Store


def _run(args: list[str]) -> str:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _bm25_run(
    tmp_path: Path,
    docs: dict[str, str] | None = None,
    items: list[dict[str, object]] | None = None,
) -> tuple[str, int]:
    """A BM25 run (k=1) over ``docs`` and ``items``; by default one question whose gold
    document is missing from the corpus."""
    folder = tmp_path / "docs"
    folder.mkdir()
    docs = docs or {"here.md": "Install with pip.", "x.md": "Unrelated words."}
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    gold = tmp_path / "gold.yaml"
    gold.write_text(yaml.safe_dump(items or [
        {"id": "q1", "question": "how to uninstall", "relevant": ["gone.md"], "tags": ["t"]},
        {"id": "q2", "question": "install with pip", "relevant": ["here.md"], "tags": ["t"]},
    ]), encoding="utf-8")  # fmt: skip
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Store.open(url) as store:
        run_id = run_job(EvalJob(str(gold), "bm25", str(folder), k=1), store=store).run.id
    return url, run_id


def test_explain_then_show_prints_why_missed(tmp_path: Path) -> None:
    """Issue 28: explain prints each miss's cause and evidence and stores it; show prints
    it under the miss ("why missed") and in --json."""
    url, run_id = _bm25_run(tmp_path)
    out = _run(["explain", str(run_id), "--store", url, "--no-dense", "--depth", "5"])
    assert "✗ q1" in out and "→ not in index (indexing): gone.md not in the corpus" in out
    assert "indexing: recovers 1 of 1 misses → hit@1 ≤ 1.00 (now 0.50)" in out
    data = json.loads(_run(["explain", str(run_id), "--store", url, "--no-dense", "--json",
                            "--depth", "5", "--cause", "unexplained"]))  # fmt: skip
    assert data["misses"] == [] and data["counts"] == {"not_in_index": 1}
    shown = _run(["show", str(run_id), "--store", url])
    assert "why missed: not in index: gone.md not in the corpus" in shown
    shown_json = json.loads(_run(["show", str(run_id), "--store", url, "--json"]))
    assert shown_json["explanation"]["misses"][0]["causes"][0]["cause"] == "not_in_index"


def test_show_without_an_explanation_has_none(tmp_path: Path) -> None:
    """Issue 28: a run never explained shows no "why missed" and ``"explanation": null``."""
    url, run_id = _bm25_run(tmp_path)
    assert "why missed" not in _run(["show", str(run_id), "--store", url])
    assert json.loads(_run(["show", str(run_id), "--store", url, "--json"]))["explanation"] is None


def test_explanation_round_trips_on_each_store(store_url: str) -> None:
    """Issue 28: the explanations table stores and replaces one JSON per run (SQLite and
    PostgreSQL), and goes with its run when the run is deleted."""
    import ragmeter

    gold = ragmeter.GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["a"]}])
    with Store.open(store_url) as store:
        run = ragmeter.evaluate(gold, lambda q, k: [{"doc": "b"}], store=store).run
        store.save_explanation(run.id, {"run": run.id, "misses": ["é"]})
        store.save_explanation(run.id, {"run": run.id, "misses": []})
        assert store.explanation(run.id) == {"run": run.id, "misses": []}
        assert store.explanation(run.id + 1) is None
        store.delete_run(run.id)
        assert store.explanation(run.id) is None


def test_run_page_api_and_static_report_show_the_explanation(tmp_path: Path) -> None:
    """Issue 28: the dashboard's run page and /api/runs/N, and the static report, show the
    knob summary and each miss's why once explain ran."""
    import pytest

    pytest.importorskip("fastapi", reason="the dashboard needs the [web] extra")
    from fastapi.testclient import TestClient

    from ragmeter.read.static_report import static_report
    from ragmeter.web.app import create_app

    url, run_id = _bm25_run(tmp_path)
    line = "indexing: recovers 1 of 1 misses → hit@1 ≤ 1.00 (now 0.50)"
    with TestClient(create_app(url), base_url="http://127.0.0.1") as client:
        assert client.get(f"/api/runs/{run_id}").json()["explanation"] is None
        # Explained while the dashboard runs: the page it had read is not served stale.
        _run(["explain", str(run_id), "--store", url, "--no-dense", "--depth", "5"])
        data = client.get(f"/api/runs/{run_id}").json()
        assert data["explanation"]["misses"][0]["why"].startswith("not in index: gone.md")
        page = client.get(f"/runs/{run_id}").text
    assert 'id="why-missed"' in page and line in page
    assert '<option value="not_in_index">not in index (1)</option>' in page  # filter by cause
    assert '<tr data-causes="not_in_index"><td>q1</td>' in page
    with Store.open(url) as store:
        html = static_report(store, run_id).html
    assert "Why missed (explain, depth 5)" in html and line in html


def test_gate_report_names_the_candidates_top_knob(tmp_path: Path) -> None:
    """Issue 28: the pull-request report of `gate` names the knob that recovers most of the
    candidate's misses, when the candidate was explained."""
    url, baseline = _bm25_run(tmp_path)
    with Store.open(url) as store:
        job = EvalJob(str(tmp_path / "gold.yaml"), "bm25", str(tmp_path / "docs"), k=1)
        candidate = run_job(job, store=store).run.id
    _run(["explain", str(candidate), "--store", url, "--no-dense", "--depth", "5"])
    report = tmp_path / "gate.md"
    args = ["gate", "--baseline", str(baseline), "--candidate", str(candidate), "--store", url]
    CliRunner().invoke(main, [*args, "--markdown", str(report)], catch_exceptions=False)
    text = report.read_text(encoding="utf-8")
    assert (
        "**Top knob** (ragmeter explain of the candidate) · indexing: recovers 1 of 1 misses"
        in text
    )


def test_an_http_retriever_is_asked_again_over_loopback(tmp_path: Path) -> None:
    """Issue 28: a run of an HTTP service is rebuilt from its stored URL and asked again
    deeper, for the missed question only: doc7 at rank 8 is *ranked too low*."""
    from _servers import serve

    gold = tmp_path / "gold.yaml"
    gold.write_text(yaml.safe_dump([
        {"id": "q1", "question": "far", "relevant": ["doc7"]},
        {"id": "q2", "question": "near", "relevant": ["doc0"]},
    ]), encoding="utf-8")  # fmt: skip
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with serve() as server:
        spec = server.url("/good")
        _run(["eval", "--gold", str(gold), "--retriever", spec, "-k", "5", "--store", url,
              "--header", "X-Team: search"])  # fmt: skip
        before = len(server.bodies)
        data = json.loads(_run(["explain", "latest", "--store", url, "--no-dense", "--json",
                                "--depth", "10", "--header", "X-Team: search"]))  # fmt: skip
        asked = server.bodies[before:]
    assert [(m["id"], [c["cause"] for c in m["causes"]]) for m in data["misses"]] == [
        ("q1", ["ranked_too_low"])
    ]
    assert data["misses"][0]["causes"][0]["evidence"]["rank"] == 8
    assert asked == [{"question": "far", "k": 10}]


def test_vocabulary_with_the_configured_llm_rewriter(tmp_path: Path) -> None:
    """Issue 28: with --rewriter (a pipeline file's `rewrite: {method: llm}`), the
    vocabulary probe asks that model instead of RM3 (a chat server on loopback)."""
    from _openai_server import serve_chat

    url, run_id = _bm25_run(
        tmp_path,
        {"cats.md": "Feline purring explained.", "dogs.md": "Why does a dog bark at night?"},
        [{"id": "q1", "question": "why does my kitty rumble", "relevant": ["cats.md"]},
         {"id": "q2", "question": "feline purring", "relevant": ["cats.md"]}],
    )  # fmt: skip
    with serve_chat() as server:
        pipeline = tmp_path / "rewrite.yaml"
        pipeline.write_text(yaml.safe_dump({"rewrite": {"method": "llm", "llm": {
            "base_url": server.base_url, "model": "m"}}}), encoding="utf-8")  # fmt: skip
        data = json.loads(_run(["explain", str(run_id), "--store", url, "--no-dense",
                                "--json", "--depth", "2", "--rewriter", str(pipeline)]))  # fmt: skip
    (miss,) = data["misses"]
    assert [c["cause"] for c in miss["causes"]] == ["vocabulary"]
    evidence = miss["causes"][0]["evidence"]
    assert (evidence["rewriter"], evidence["overlap"], evidence["rank"]) == ("llm", 0.0, 1)
    assert "feline, meow, purring" in evidence["rewritten"]


def test_the_suggested_gold_edit_is_accepted_by_the_dashboard(tmp_path: Path) -> None:
    """Issue 28: a *gold may be wrong* suggestion is the body of the run page's "mark
    relevant" request: posted as it is, the dashboard stores the gold edit."""
    import pytest

    pytest.importorskip("fastapi", reason="the dashboard needs the [web] extra")
    from fastapi.testclient import TestClient

    import ragmeter
    from ragmeter.evaluation.explain import ExplainOptions, explain_run
    from ragmeter.web.app import create_app

    texts = {"faq.md": "You can get your money back within 30 days.", "x.md": "Hello."}
    ranking = {"refund window?": ["x.md", "faq.md"], "policy?": ["policy.md"]}

    def search(question: str, k: int) -> list[dict[str, str]]:
        return [{"id": d, "doc": d, "text": texts.get(d, d)} for d in ranking[question][:k]]

    gold = ragmeter.GoldSet.from_records([
        {"id": "q1", "question": "refund window?", "relevant": ["policy.md"],
         "answer_contains": ["30 days"]},
        {"id": "q2", "question": "policy?", "relevant": ["policy.md"]},
    ])  # fmt: skip
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Store.open(url) as store:
        run = ragmeter.evaluate(gold, search, k=2, store=store).run
        explanation = explain_run(
            store, run.id, ExplainOptions(retriever=search, depth=5, dense=False)
        )
    suggestion = explanation.misses[0].causes[0].suggestion
    assert suggestion is not None
    with TestClient(create_app(url), base_url="http://127.0.0.1") as client:
        posted = client.post("/api/gold-edits", json=dict(suggestion))
        assert posted.status_code == 201, posted.text
        (edit,) = client.get("/api/gold-edits", params={"run": str(run.id)}).json()["edits"]
    assert (edit["doc"], edit["chunk"], edit["quote"]) == ("faq.md", "faq.md", "30 days")
