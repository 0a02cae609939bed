"""Issue 25.1: one read side. ``read_run`` → ``RunView`` is what every surface renders, so
``show``, ``show --json``, ``/api/runs/N``, the static report and ``export`` say the same.

The run: every question's relevant document is retrieved first among five (precision@5 is
0.20, its ceiling), a generator answers, two answers are wrong (generation-side failures,
no retrieval miss), the offline lexical judge rates faithfulness, people labelled three
answers, and the run carries a stored warning.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ragmeter
from ragmeter.cli import main
from ragmeter.compare._html import esc
from ragmeter.evaluation.evaluate import evaluate
from ragmeter.gold.goldset import GoldSet
from ragmeter.judging.judge_runs import judge_run_faithfulness
from ragmeter.read.static_report import render_static_report, report_view
from ragmeter.store import Store

N = 6
WRONG = {"q1", "q4"}
WARNING = "a stored warning: the corpus lacks nothing, this is a test"
LOCAL = "http://127.0.0.1"


def _gold() -> GoldSet:
    return GoldSet.from_records(
        [
            {
                "id": f"q{n}",
                "question": f"what is fact {n}?",
                "relevant": [{"doc": f"d{n}.md"}],
                "answer_contains": [f"fact {n} holds"],
                "tags": ["even" if n % 2 == 0 else "odd"],
            }
            for n in range(N)
        ],
        name="facts",
    )


def _search(found: bool) -> Any:
    def search(question: str, k: int) -> list[dict[str, Any]]:
        n = int(question.split()[3].rstrip("?"))
        noise = [{"doc": f"noise{j}.md", "score": 0.5 / (j + 1), "text": "nothing useful"}
                 for j in range(k)]  # fmt: skip
        hit = {"doc": f"d{n}.md", "score": 1.0, "text": f"the fact {n} holds here"}
        return ([hit] + noise)[:k] if found or n % 3 else noise[:k]

    return search


def _generate(question: str, chunks: list[Any]) -> str:
    n = question.split()[3].rstrip("?")
    return "it is 42 days" if f"q{n}" in WRONG else f"the fact {n} holds here"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("read") / "runs.db"
    with Store.open(path) as store:
        evaluate(_gold(), _search(False), store=store, name="base", commit="", k=5)
        run = evaluate(
            _gold(), _search(True), store=store, name="gen", commit="", k=5, generator=_generate
        ).run
        judge_run_faithfulness(store, "gen", client=None)
        store.save_labels(f"run-{run.id}", {"q0": "supported", "q1": "unsupported",
                                            "q2": "supported"})  # fmt: skip
        config = {**store.get_run(run.id).config, "warnings": [WARNING]}
        store.update_run(run.id, config=config)
    return path


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with Store.open(db, read_only=True) as opened:
        yield opened


@pytest.fixture(autouse=True)
def _no_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ragmeter.toml: default health thresholds everywhere


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _get(store: Store, path: str) -> Any:
    """``path`` of the dashboard over ``store``, in process (ASGI app + httpx)."""
    from fastapi.testclient import TestClient

    from ragmeter.web.app import create_app

    with TestClient(create_app("unused", store=store), base_url=LOCAL) as client:
        response = client.get(path)
        assert response.status_code == 200, response.text
        return response


def _api(store: Store, path: str) -> Any:
    return _get(store, path).json()


def _page(store: Store, path: str) -> str:
    return str(_get(store, path).text)


def test_show_text_and_json_agree_on_health_with_the_ceiling(db: Path, store: Store) -> None:
    """Issue 25.1, the reproduced bug: `show` printed `precision@5 0.20 (max 0.20) good` and
    `show --json` said `noisy`, because the JSON's diagnose() lacked the precision ceiling."""
    text = _cli("show", "gen", "--store", str(db))
    data = json.loads(_cli("show", "gen", "--store", str(db), "--json"))
    assert "health: precision@5 0.20 (max 0.20) good" in text
    check = next(c for c in data["health"]["checks"] if c["metric"] == "precision@5")
    assert (check["value"], check["ceiling"], check["label"]) == (pytest.approx(0.2), 0.2, "good")
    for line in data["health_lines"]:
        assert line in text
    # Every check the JSON has is the one the text prints, with the same label.
    printed = next(line for line in text.splitlines() if line.startswith("health: "))
    for check in data["health"]["checks"]:
        if check["metric"] != "latency_p95_ms":
            assert f"{check['metric']} {check['value']:.2f}" in printed
        assert check["label"] in printed


def test_every_surface_renders_the_same_view(db: Path, store: Store) -> None:
    """Issue 25.1: show, show --json, /api/runs/N (in-process ASGI), the static report and
    export all come from one RunView and agree, field by field."""
    view = ragmeter.read_run(store, "gen")
    expected = json.loads(json.dumps(view.to_dict(texts=True)))
    shown = json.loads(_cli("show", "gen", "--store", str(db), "--json"))
    # One page holds every question of a small run (issue 29.1), and says so.
    n = len(expected["questions"])
    page_of_all = {"page": 1, "limit": 1000, "pages": 1, "total": n, "offset": 0, "shown": n}
    assert shown.pop("questions_page") == page_of_all
    assert shown == expected
    api = _api(store, "/api/runs/gen?texts=1")
    assert api.pop("questions_page") == page_of_all
    assert api == shown
    plain = _api(store, "/api/runs/gen")
    assert plain.pop("questions_page") == page_of_all
    assert {k: v for k, v in plain.items() if k not in ("questions", "misses")} == {
        k: v for k, v in shown.items() if k not in ("questions", "misses")
    }

    # What the view holds, checked against the run by hand: no retrieval miss, the two
    # wrong answers failed on the generation side, the warning, the labels.
    assert shown["misses"] == [] and shown["warnings"] == [WARNING]
    assert [(f["id"], f["blame"]) for f in shown["failed_answers"]] == [
        ("q1", "generation"),
        ("q4", "generation"),
    ]
    faithful = shown["faithful_corrected"]
    assert faithful["n_labels"] == 3 and faithful["status"] != "uncalibrated"
    assert shown["judged_corrected"]["faithful"] == faithful
    assert shown["judges"] == ["faithfulness"] and "faithfulness" in shown["judge_trust"]

    text = _cli("show", "gen", "--store", str(db))
    assert "failed answers: 2" in text
    for entry in shown["judged"]:
        assert f"{entry['metric']} {entry['line']}" in text
    assert WARNING in text

    html = render_static_report(view).html
    # `ragmeter report` reads briefly and decodes the rows it spells out: the same file.
    assert render_static_report(report_view(store, "gen")).html == html
    for line in shown["health_lines"]:
        assert esc(line) in html
    for name, value in shown["metrics"].items():
        if value is not None:
            assert f"{esc(name)}<b>{value:.3f}</b>" in html
    assert "No misses" not in html and "No retrieval misses." in html
    assert html.count('<details class="miss failed">') == len(shown["failed_answers"]) == 2
    for entry in shown["judged"]:
        assert f"{esc(entry['metric'])} {esc(entry['line'])}" in html
    assert esc(WARNING) in html

    page = _page(store, "/runs/gen")
    assert f"Failed answers <small>{len(shown['failed_answers'])}</small>" in page
    for failed in shown["failed_answers"]:
        assert f'<li data-id="{failed["id"]}"><span class="badge blame-generation">' in page
    for line in shown["health_lines"]:
        assert f"<p>{esc(line)}</p>" in page

    rows = [json.loads(line) for line in _cli("export", "gen", "--store", str(db)).splitlines()]
    assert [r["id"] for r in rows] == [q["id"] for q in shown["questions"]]
    for row, question in zip(rows, shown["questions"], strict=True):
        for key in ("hit", "blame", "answer", "answer_ok", "faithful", "first_relevant_rank"):
            assert row[key] == question[key], key
        assert row["metrics"] == question["metrics"]
        assert [h["id"] for h in row["ranking"]] == [h["id"] for h in question["retrieved"]]
        assert [h["text"] for h in row["ranking"]] == [h["text"] for h in question["retrieved"]]


def test_a_view_against_a_baseline_holds_the_diff(db: Path, store: Store) -> None:
    """Issue 25.1: `read_run(against=)` carries the diff that `diff --json` prints, and the
    static report of `report --against` shows it."""
    view = ragmeter.read_run(store, "gen", against="base")
    assert view.diff is not None and view.diff.a.name == "base"
    data = view.to_dict()
    diffed = json.loads(_cli("diff", "base", "gen", "--store", str(db), "--json"))
    for key in ("metrics", "tags", "newly_missed", "newly_found", "flip_metric"):
        assert data["diff"][key] == diffed[key], key
    assert {t["tag"] for t in data["diff"]["tag_intervals"]} == {"even", "odd"}
    html = render_static_report(view).html
    # `ragmeter report` reads briefly and decodes the rows it spells out: the same file.
    assert render_static_report(report_view(store, "gen", against="base")).html == html
    assert "Against run 1 · base" in html
    for flip in view.diff.newly_found:
        assert f"<code>{flip.id}</code>" in html


def test_every_diff_surface_renders_the_same_view(db: Path, store: Store) -> None:
    """Issue 25: `diff` (text and --json), /api/diff, the diff page and the compare page all
    render one `read_diff` view. Checked by hand against the fixture: the base run misses
    every question whose number divides by 3, the generating run finds them all."""
    from ragmeter.read.diff import read_diff

    view = read_diff(store, "base", "gen")
    expected = json.loads(json.dumps(view.to_dict()))
    assert json.loads(_cli("diff", "base", "gen", "--store", str(db), "--json")) == expected
    api = _api(store, "/api/diff?a=base&b=gen")
    assert api == expected

    found = [f"q{n}" for n in range(N) if n % 3 == 0]
    assert [f["id"] for f in expected["newly_found"]] == found and expected["newly_missed"] == []
    assert expected["not_compared"] == [] and expected["primary"] == expected["flip_metric"]
    # Only the generating run was judged and labelled: its corrected faithfulness, not A's.
    assert list(expected["judged_corrected"]["faithful"]) == ["b"]
    assert expected["judged_lines"] and all(x.startswith("B ") for x in expected["judged_lines"])

    text = _cli("diff", "base", "gen", "--store", str(db))
    page = _page(store, "/diff?a=base&b=gen")
    for side in ("a", "b"):
        for line in expected["health_lines"][side]:
            assert f"{side.upper()} {line}" in text
            assert f"<p><strong>{side.upper()}</strong> {esc(line)}</p>" in page
    for line in expected["judged_lines"]:
        assert line in text and f'<p class="judged">{esc(line)}</p>' in page
    for m in expected["metrics"]:
        assert f"{m['delta']:+.3f}" in text
        assert f'data-value="{m["delta"]}"' in page
    for question in found:
        assert question in text

    compared = _api(store, "/api/compare?a=base&b=gen")
    assert compared["not_compared"] == expected["not_compared"]
    assert compared["n_questions"] == expected["n"] == N
    assert compared["changes"] == {"found": len(found), "same": N - len(found)}
    for row in compared["questions"]:
        assert (row["change"] == "found") == (row["id"] in found), row["id"]


def test_notebooks_show_the_metrics_and_misses(store: Store) -> None:
    """Issue 25.1: RunView and RunDiff render in a notebook with the static report's pieces."""
    base = ragmeter.read_run(store, "base")
    html = base._repr_html_()
    for name, value in base.metrics.items():
        assert f'<tr><td>{esc(name)}</td><td class="num">{value:.3f}</td></tr>' in html
    assert html.count('<details class="miss">') == len(base.report.misses)
    assert len(base.report.misses) == 2  # q0 and q3: nothing relevant retrieved
    gen = ragmeter.read_run(store, "gen", against="base")
    html = gen._repr_html_()
    assert html.count('<details class="miss failed">') == 2 and "Against run 1" in html
    assert gen.diff is not None
    diff_html = gen.diff._repr_html_()
    for delta in gen.diff.metrics:
        assert f"<td>{esc(delta.metric)}</td>" in diff_html


def test_read_run_is_public(store: Store) -> None:
    """Issue 25.1: reading a stored run back is part of the public API."""
    assert {"read_run", "RunView"} <= set(ragmeter.__all__)
    view = ragmeter.read_run(store, "latest")
    assert isinstance(view, ragmeter.RunView) and view.run.name == "gen"
    assert view.to_dict(questions=False).keys() == view.summary().keys()


def test_docstring_examples_hold() -> None:
    """Issue 25.1: the examples in the read side's docstrings run and hold."""
    import doctest

    import ragmeter.compare.diff_html
    import ragmeter.read.diff
    import ragmeter.read.questions
    import ragmeter.read.runs
    import ragmeter.read.view

    modules = (ragmeter.read.view, ragmeter.read.questions, ragmeter.compare.diff_html,
               ragmeter.read.diff, ragmeter.read.runs)  # fmt: skip
    for module in modules:
        failures, tried = doctest.testmod(module)
        assert failures == 0 and tried > 0, module.__name__


@pytest.mark.slow
def test_mlflow_logs_the_same_view(
    db: Path, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25.1: `export --to mlflow` logs the view's run, metrics and static report (the
    failed answers and the health line included). Slow: MLflow takes seconds to import."""
    pytest.importorskip("mlflow", reason="MLflow is not installed (pip install 'ragmeter[mlflow]')")
    from mlflow.tracking import MlflowClient

    from ragmeter.evaluation.tracking import mlflow_metric_name

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"file://{tmp_path / 'mlruns'}")
    result = CliRunner().invoke(main, ["export", "gen", "--to", "mlflow", "--store", str(db),
                                       "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"Warning: {WARNING}" in result.stderr  # the run's warning, said once more
    logged = json.loads(result.stdout)
    client = MlflowClient(tracking_uri=f"file://{tmp_path / 'mlruns'}")
    run = client.get_run(logged["run_id"])
    shown = json.loads(_cli("show", "gen", "--store", str(db), "--json"))
    assert run.data.params["ragmeter_run_id"] == str(shown["run"]["id"])
    assert run.data.params["k"] == str(shown["run"]["k"])
    for name, value in shown["metrics"].items():
        assert run.data.metrics[mlflow_metric_name(name)] == value
    html = Path(client.download_artifacts(logged["run_id"], "report.html", str(tmp_path / "dl")))
    text = html.read_text(encoding="utf-8")
    assert text.count('<details class="miss failed">') == len(shown["failed_answers"]) == 2
    for line in shown["health_lines"]:
        assert esc(line) in text
