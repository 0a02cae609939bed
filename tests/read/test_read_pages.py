"""Issue 29.1: every surface decodes only the rankings of the rows it shows.

On a stored run of 5,000 questions, ``show --json``, ``/api/runs/N``, the dashboard's run
page, the static report and the runs table decode the rankings of their page (and of the
misses they list, top 3 hits each), counted through the store's hook
(``_codec.RANKING_OBSERVERS``); the totals they print equal a count made here from the
questions' definition, and a page's questions are those of a full read, field by field.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import _decoded
import ragmeter
from ragmeter.cli import main
from ragmeter.evaluation.evaluate import evaluate
from ragmeter.gold.goldset import GoldSet
from ragmeter.read.fragments import spelled_out
from ragmeter.read.static_report import MAX_MISSES, render_static_report, report_view
from ragmeter.store import Store
from ragmeter.web.pages import MISSES_SHOWN, QUESTIONS_PAGE_SIZE

decoded = _decoded.decoded

N = 5_000
TAGS = 7
LOCAL = "http://127.0.0.1"


def _gold(n: int) -> GoldSet:
    return GoldSet.from_records(
        [
            {
                "id": f"q{i:05d}",
                "question": f"question {i}",
                "relevant": [{"doc": f"d{i}", "quote": f"fact number {i} is written here"}],
                "tags": [f"t{i % TAGS}"],
            }
            for i in range(n)
        ],
        name="pages",
    )


def _missed(i: int) -> bool:
    """The reference: question i finds its document at rank i % 13 + 1, or never when
    i % 97 == 0; at k=10 it misses when that rank is past 10."""
    return i % 13 >= 10 or i % 97 == 0


def _search(question: str, k: int) -> list[dict[str, Any]]:
    i = int(question.split()[1])
    docs = [f"x{i}-{j}" for j in range(k)]
    if i % 97:
        docs.insert(i % 13, f"d{i}")
    return [
        {"doc": d, "score": 1.0 / (j + 1), "text": f"{d}: fact number {i} is written here"}
        for j, d in enumerate(docs[:k])
    ]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pages") / "runs.db"
    with Store.open(path) as store:
        evaluate(_gold(N), _search, store=store, name="big", commit="", k=10)
    return path


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with Store.open(db, read_only=True) as opened:
        yield opened


@pytest.fixture(autouse=True)
def _no_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ragmeter.toml: default health thresholds everywhere


MISSED = {f"q{i:05d}" for i in range(N) if _missed(i)}


@pytest.fixture(scope="module")
def whole(db: Path) -> list[dict[str, Any]]:
    """Every question as a full read has it (every ranking decoded), read once."""
    with Store.open(db, read_only=True) as store:
        return list(ragmeter.read_run(store, "big").to_dict(texts=True)["questions"])


def _show(db: Path, *args: str) -> tuple[dict[str, Any], str]:
    result = CliRunner().invoke(main, ["show", "big", "--store", f"sqlite:///{db}", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


@pytest.fixture
def client(store: Store) -> Iterator[Any]:
    """The dashboard over ``store``, in process (ASGI app + httpx); its run cache is new."""
    from fastapi.testclient import TestClient

    from ragmeter.web.app import create_app

    with TestClient(create_app("unused", store=store), base_url=LOCAL) as opened:
        yield opened


def _get(client: Any, path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return response


def test_show_json_prints_a_page_and_says_how_to_get_the_rest(
    db: Path, whole: list[dict[str, Any]], decoded: list[str]
) -> None:
    data, note = _show(db, "--json")
    page = [q["id"] for q in data["questions"]]
    assert page == [f"q{i:05d}" for i in range(1_000)]
    assert data["questions"] == whole[:1_000]
    assert data["questions_page"] == {"page": 1, "limit": 1_000, "pages": 5, "total": N,
                                      "offset": 0, "shown": 1_000}  # fmt: skip
    assert data["n_questions"] == N and {m["id"] for m in data["misses"]} == MISSED
    assert note.strip() == (
        "show --json: questions 1–1,000 of 5,000 (page 1 of 5); --page 2 for the next; "
        "--all for every question"
    )
    # The misses' top hits for the summary, and the page's whole rankings: nothing else.
    _decoded_only(decoded, [*MISSED, *page])

    decoded.clear()
    data, note = _show(db, "--json", "--page", "3", "--limit", "2000")
    assert data["questions"] == whole[4_000:]
    assert data["questions_page"]["shown"] == 1_000 and "page 3 of 3" in note
    assert "--page 4" not in note
    _decoded_only(decoded, [*MISSED, *(q["id"] for q in whole[4_000:])])


def test_show_json_all_and_a_small_run_print_every_question(
    db: Path, whole: list[dict[str, Any]]
) -> None:
    data, note = _show(db, "--json", "--all")
    assert data["questions"] == whole and note == ""
    assert data["questions_page"]["total"] == data["questions_page"]["shown"] == N
    result = CliRunner().invoke(main, ["show", "big", "--store", f"sqlite:///{db}", "--page", "2"])
    assert result.exit_code == 2 and "--json" in result.output


def test_the_api_pages_the_kept_questions(
    whole: list[dict[str, Any]], client: Any, decoded: list[str]
) -> None:
    data = _get(client, "/api/runs/big?tag=t3&page=2&limit=50").json()
    tagged = [q for q in whole if "t3" in q["tags"]]
    assert len(tagged) == len([i for i in range(N) if i % TAGS == 3])  # the reference count
    assert data["questions"] == [
        {**q, "retrieved": [{k: v for k, v in h.items() if k != "text"} for h in q["retrieved"]]}
        for q in tagged[50:100]
    ]
    assert data["questions_page"] == {"page": 2, "limit": 50, "pages": -(-len(tagged) // 50),
                                      "total": len(tagged), "offset": 50, "shown": 50}  # fmt: skip
    assert {m["id"] for m in data["misses"]} == {m for m in MISSED if int(m[1:]) % TAGS == 3}
    assert data["n_questions"] == N
    _decoded_only(decoded, [*MISSED, *(q["id"] for q in tagged[50:100])])

    decoded.clear()
    data = _get(client, "/api/runs/big?misses_only=1&limit=10000&texts=1").json()
    assert [q["id"] for q in data["questions"]] == sorted(MISSED)
    assert data["questions"] == [q for q in whole if q["id"] in MISSED]
    assert data["questions_page"]["total"] == len(MISSED)
    # The run is cached, and so is each question built: only this page's others are read.
    before = {q["id"] for q in tagged[50:100]}
    _decoded_only(decoded, MISSED - before)
    decoded.clear()
    _get(client, "/api/runs/big?tag=t3&page=2&limit=50")
    assert decoded == []
    assert client.get("/api/runs/big?limit=10001").status_code == 422


def _decoded_only(decoded: list[str], shown: Iterable[str]) -> None:
    """Every ranking decoded is one of a question the surface shows, each at most twice (a
    miss's top hits for the misses list, then its whole ranking for a page)."""
    assert set(decoded) == set(shown)
    assert max(Counter(decoded).values(), default=0) <= 2


def _script_data(page: str) -> Any:
    found = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1))


def test_the_run_page_decodes_the_misses_only(client: Any, decoded: list[str]) -> None:
    page = _get(client, "/runs/big").text
    assert f"{N} questions" in page
    _decoded_only(decoded, MISSED)
    # A run this big gets one page of table rows, not 5,000 (the filters in the URL).
    data = _script_data(page)
    assert "questions" not in data and len(data["server"]["questions"]) == QUESTIONS_PAGE_SIZE
    assert len(page) < 200_000
    decoded.clear()
    data = _script_data(_get(client, "/runs/big?tag=t3&misses=1&sort=-id&page=2").text)
    assert decoded == []  # the run is cached: nothing more is read
    # The reference: tagged t3 and missed, last id first.
    kept = [i for i in range(N) if i % TAGS == 3 and _missed(i)]
    ordered = sorted(kept, reverse=True)
    size = QUESTIONS_PAGE_SIZE
    server = data["server"]
    assert [q["id"] for q in server["questions"]] == [f"q{i:05d}" for i in ordered[size : 2 * size]]
    assert (server["shown"], server["total"], server["page"]) == (len(kept), N, 2)
    assert server["n_missed"] == len(MISSED) and server["n_misses"] == len(kept)
    assert [m["id"] for m in server["misses"]] == [f"q{i:05d}" for i in kept[:MISSES_SHOWN]]
    decoded.clear()
    question = _get(client, "/api/runs/big/questions/q00011").json()
    assert [h["doc"] for h in question["retrieved"]][:1] == ["x11-0"]
    assert decoded == ["q00011"]


def test_the_static_report_decodes_what_it_spells_out(store: Store, decoded: list[str]) -> None:
    full = render_static_report(ragmeter.read_run(store, "big")).html
    decoded.clear()
    view = report_view(store, "big")
    shown = spelled_out(view, MAX_MISSES)
    assert len(shown) == MAX_MISSES and set(shown) <= MISSED
    _decoded_only(decoded, [*MISSED, *shown])
    assert render_static_report(view).html == full
    assert f"{len(MISSED) - MAX_MISSES} of {len(MISSED)} misses not shown" in full


def test_the_runs_table_decodes_nothing(db: Path, client: Any, decoded: list[str]) -> None:
    data = _get(client, "/api/runs").json()
    assert [r["n_questions"] for r in data["runs"]] == [N]
    result = CliRunner().invoke(main, ["runs", "--store", f"sqlite:///{db}"])
    assert result.exit_code == 0, result.output
    assert decoded == []


def test_a_page_on_sqlite_and_postgresql(store_url: str, decoded: list[str]) -> None:
    """SQLite and PostgreSQL: a page holds the questions of a full read, with their metric
    values read for the page only, and decodes those rankings only."""
    from ragmeter.read.pages import questions_page

    with Store.open(store_url) as store:
        evaluate(_gold(300), _search, store=store, name="r", commit="", k=10)
        whole = ragmeter.read_run(store, "r").to_dict()["questions"]
        view = ragmeter.read_run(store, "r", rankings="shown")
        decoded.clear()
        questions, page = questions_page(store, view, page=3, limit=40)
        assert questions == whole[80:120] and page.total == 300 and page.pages == 8
        _decoded_only(decoded, [q["id"] for q in whole[80:120]])
        assert all(q["metrics"]["mrr"] is not None for q in questions)
        values = store.question_metrics(view.run.id, item_ids=["q00001", "nope"])
        assert values["mrr"] == {"q00001": 0.5}  # found at rank 2 (1 % 13 + 1)


def test_the_label_queue_reads_the_answered_run_only(decoded: list[str]) -> None:
    """The label page finds the newest run with answers without reading the newer runs that
    have none, and decodes the rankings of the answered questions only."""
    from ragmeter.web.work import label_queue

    with Store.memory() as store:
        evaluate(_gold(60), _search, store=store, name="gen", commit="", k=10,
                 generator=lambda question, chunks: f"answer to {question}")  # fmt: skip
        evaluate(_gold(400), _search, store=store, name="plain", commit="", k=10)
        decoded.clear()
        queue = label_queue(store, None)
        assert queue["run"]["name"] == "gen" and queue["counts"] == {"answers": 60, "labelled": 0}
        answered = {f"q{i:05d}" for i in range(60)}  # the misses' top hits read once more
        _decoded_only(decoded, [*answered, *(MISSED & answered)])
        item = next(i for i in queue["items"] if i["item_id"] == "q00001")
        assert item["answer"] == "answer to question 1"
        assert item["context_source"] == "generation" and item["context"]
