"""Issue 15.3: gold edits from a miss — the library, the store table, the API and the CLI.

Everything runs against real parts: a SQLite store, the dashboard app through an ASGI
client on the loopback Host, the click command through CliRunner, gold files on disk.
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
from ragmeter.errors import GoldEditError
from ragmeter.gold.edits import GoldEdit, apply_edits, apply_edits_to_file, check_edit
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store
from ragmeter.store.migrations import MIGRATIONS

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from ragmeter.web.app import create_app  # noqa: E402

LOCAL = "http://127.0.0.1"
GOLD_YAML = """\
- id: refunds
  question: How long do I have to ask for a refund?
  relevant: [{doc: faq.md}]
  tags: [billing]
- id: shipping
  question: Do you ship abroad?
  relevant: [{doc: shipping.md}]
"""
REFUND_TEXT = "Refunds are accepted within 30 days of delivery, no questions asked."
HITS = {
    "How long do I have to ask for a refund?": [
        {"id": "policy.md#0", "doc": "policy.md", "score": 2.0, "text": REFUND_TEXT},
        {"id": "about.md#0", "doc": "about.md", "score": 1.0, "text": "We are a small shop."},
    ],
    "Do you ship abroad?": [
        {"id": "shipping.md#0", "doc": "shipping.md", "score": 1.0, "text": "We ship worldwide."}
    ],
}


def search(question: str, k: int) -> list[dict[str, Any]]:
    return HITS[question][:k]


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def gold_file(tmp_path: Path) -> Path:
    path = tmp_path / "gold.yaml"
    path.write_text(GOLD_YAML, encoding="utf-8")
    return path


@pytest.fixture
def store_path(tmp_path: Path, gold_file: Path) -> Path:
    path = tmp_path / "runs.db"
    with Store.open(path) as store:
        ragmeter.evaluate(load_gold(gold_file), search, store=store, name="base", commit="")
    return path


@pytest.fixture
def client(store_path: Path) -> Iterator[TestClient]:
    app = create_app(str(store_path), user="ana")
    with TestClient(app, base_url=LOCAL) as test_client:
        yield test_client


def _mark(client: TestClient, **body: Any) -> Any:
    return client.post("/api/gold-edits", json={"run": "latest", "item_id": "refunds", **body})


# -- the library ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"action": "relevant", "grade": 4}, "grade must be an integer 0-3, got 4"),
        ({"action": "relevant", "grade": None}, "grade must be an integer 0-3, got None"),
        ({"action": "relevant", "grade": True}, "grade must be an integer"),
        ({"action": "delete", "grade": 1}, "unknown action 'delete'"),
        ({"action": "wrong", "grade": 2}, "a 'wrong' edit takes no grade"),
        ({"action": "relevant", "grade": 1, "quote": "x" * 2001}, "at most 2000"),
    ],
    ids=["grade-4", "no-grade", "bool-grade", "unknown-action", "wrong-with-grade", "long-quote"],
)
def test_an_edit_checks_its_own_fields(fields: dict[str, Any], needle: str) -> None:
    """Issue 15.3: a grade outside 0..3, an unknown action or an overlong quote is refused."""
    with pytest.raises(GoldEditError, match=needle):
        GoldEdit.new(run_id=1, item_id="q1", doc="a.md", **fields)


def test_an_edit_is_checked_against_its_run() -> None:
    """Issue 15.3: the question must be in the gold set, the chunk retrieved for it, the quote
    in the chunk's text, and a wrong document one that was expected."""
    gold = GoldSet.from_records([{"id": "q1", "question": "?", "relevant": ["a.md"]}])
    ranking = [{"id": "b.md#0", "doc": "b.md"}]
    texts = {"b.md#0": ["Refunds within 30 days."]}

    def edit(**fields: Any) -> GoldEdit:
        return GoldEdit.new(run_id=1, **({"item_id": "q1", "doc": "b.md"} | fields))

    check_edit(edit(action="relevant", grade=2, chunk="b.md#0", quote="WITHIN  30 days"),
               gold, ranking, texts)  # fmt: skip
    cases = [
        (edit(item_id="q9", action="relevant", grade=1), "has no question 'q9'"),
        (edit(action="relevant", grade=1, chunk="c.md#0"), "did not retrieve 'c.md#0'"),
        (edit(action="relevant", grade=1, chunk="b.md#0", doc="a.md"), "belongs to b.md"),
        (edit(action="relevant", grade=1, chunk="b.md#0", quote="60 days"), "is not in the text"),
        (edit(action="wrong", doc="b.md"), "not an expected document"),
    ]
    for bad, needle in cases:
        with pytest.raises(GoldEditError, match=needle):
            check_edit(bad, gold, ranking, texts)
    with pytest.raises(GoldEditError, match="kept no text of chunk"):
        check_edit(edit(action="relevant", grade=1, chunk="b.md#0", quote="30 days"),
                   gold, ranking, {})  # fmt: skip


def test_apply_sets_grades_replaces_wrong_documents_and_is_idempotent() -> None:
    """Issue 15.3: relevant adds {doc, quote?, grade} or changes its grade; wrong leaves one
    {doc, grade: 0}; applying again changes nothing; other items are untouched."""
    gold = GoldSet.from_records(
        [
            {
                "id": "q1",
                "question": "?",
                "relevant": [{"doc": "a.md"}, {"doc": "c.md", "grade": 1}],
            },
            {"id": "q2", "question": "!", "relevant": [{"doc": "z.md", "quote": "zz"}]},
        ]
    )
    edits = [
        GoldEdit.new(run_id=1, item_id="q1", action="relevant", doc="b.md", grade=2, quote="p"),
        GoldEdit.new(run_id=1, item_id="q1", action="relevant", doc="c.md", grade=3),
        GoldEdit.new(run_id=1, item_id="q1", action="wrong", doc="a.md"),
    ]
    result = apply_edits(gold, edits)
    assert [r.model_dump(exclude_none=True) for r in result.gold["q1"].relevant] == [
        {"doc": "c.md", "grade": 3},
        {"doc": "b.md", "quote": "p", "grade": 2},
        {"doc": "a.md", "grade": 0},
    ]
    assert result.gold["q2"] == gold["q2"]
    assert len(result.applied) == 3 and result.unchanged == ()
    again = apply_edits(result.gold, edits)
    assert again.applied == () and len(again.unchanged) == 3
    assert again.gold.hash == result.gold.hash


def test_conflicting_edits_are_refused_together() -> None:
    """Issue 15.3: two grades for one passage, or relevant and wrong for one document, are
    each named, and nothing is applied."""
    gold = GoldSet.from_records([{"id": "q1", "question": "?", "relevant": ["a.md"]}])
    edits = [
        GoldEdit(run_id=1, item_id="q1", action="relevant", doc="b.md", grade=2, id=1),
        GoldEdit(run_id=2, item_id="q1", action="relevant", doc="b.md", grade=3, id=2),
        GoldEdit(run_id=1, item_id="q1", action="relevant", doc="a.md", grade=1, id=3),
        GoldEdit(run_id=1, item_id="q1", action="wrong", doc="a.md", id=4),
    ]
    with pytest.raises(GoldEditError) as caught:
        apply_edits(gold, edits)
    message = str(caught.value)
    assert message.startswith("2 conflicting gold edit(s): #1 q1: b.md relevant, grade 2")
    assert "#2 q1: b.md relevant, grade 3" in message
    assert "#3 q1: a.md relevant, grade 1" in message and "#4 q1: a.md is not relevant" in message
    assert "--exclude ID" in message and "nothing was written" in message
    with pytest.raises(GoldEditError, match="no question q7; the edits were made on another"):
        apply_edits(gold, [GoldEdit(run_id=1, item_id="q7", action="wrong", doc="a.md")])


# -- the store -----------------------------------------------------------------------


def test_migration_5_adds_the_gold_edits_table(tmp_path: Path) -> None:
    """Issue 15.3: migration number 5 is gold_edits; a version-4 store gets it on open."""
    assert (MIGRATIONS[4].number, MIGRATIONS[4].name) == (5, "gold_edits")
    path = tmp_path / "old.db"
    with Store.open(path, schema_version=4) as old:
        assert old.schema_version == 4
    with Store.open(path) as store:
        assert store.schema_version >= 5
        first = store.add_gold_edit(
            GoldEdit.new(run_id=7, item_id="q1", action="relevant", doc="a.md", grade=2,
                         quote="thirty days", chunk="a.md#3", user="ana", gold_hash="h")
        )  # fmt: skip
        store.add_gold_edit(GoldEdit.new(run_id=8, item_id="q2", action="wrong", doc="b.md"))
        assert first.id == 1
        assert store.gold_edits() == [first, store.gold_edits(8)[0]]
        assert [e.to_dict() for e in store.gold_edits(7)] == [first.to_dict()]
        with Store.memory() as copy:
            assert store.copy_to(copy)["gold_edits"] == 2
            assert copy.gold_edits(8)[0].user == "local"


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A real SQLite file and real PostgreSQL (``tests/_postgres.py``)."""
    if request.param == "sqlite":
        opened = Store.open(tmp_path / "r.db")
    else:
        opened = Store.open(request.getfixturevalue("postgres_url"))
    with opened:
        yield opened


def test_gold_edits_round_trip_on_sqlite_and_postgres(any_store: Store) -> None:
    """Issue 15.3: every field of an edit comes back as written, ids in order, on both stores."""
    edits = [
        GoldEdit.new(run_id=3, item_id="q1", action="relevant", doc="a.md", grade=0,
                     quote="“quoted” — ünïcode", chunk="a.md#1", user="ana", gold_hash="h")
        for _ in range(2)
    ] + [GoldEdit.new(run_id=4, item_id="q2", action="wrong", doc="b.md")]  # fmt: skip
    saved = [any_store.add_gold_edit(e) for e in edits]
    assert [e.id for e in saved] == [1, 2, 3]
    assert any_store.gold_edits() == saved
    assert [e.to_dict() for e in any_store.gold_edits(3)] == [e.to_dict() for e in saved[:2]]
    assert any_store.gold_edits(99) == []


# -- the API -------------------------------------------------------------------------


def test_marking_a_retrieved_chunk_relevant_is_stored_with_who_and_when(
    client: TestClient, store_path: Path
) -> None:
    """Issue 15.3: POST /api/gold-edits stores a reviewed edit; GET lists it."""
    response = _mark(client, action="relevant", doc="policy.md", chunk="policy.md#0", grade=2,
                     quote="within 30 days of delivery")  # fmt: skip
    assert response.status_code == 201, response.text
    edit = response.json()["edit"]
    assert {k: edit[k] for k in ("id", "run_id", "item_id", "action", "doc", "chunk", "grade",
                                 "quote", "user")} == {  # fmt: skip
        "id": 1, "run_id": 1, "item_id": "refunds", "action": "relevant", "doc": "policy.md",
        "chunk": "policy.md#0", "grade": 2, "quote": "within 30 days of delivery", "user": "ana",
    }  # fmt: skip
    assert edit["created"].endswith("Z")
    listed = client.get("/api/gold-edits", params={"run": "1", "item": "refunds"}).json()
    assert listed["edits"] == [edit]
    with Store.open(store_path) as store:
        assert store.gold_edits(1)[0].to_dict() == edit


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"item_id": "nope", "action": "wrong", "doc": "faq.md"}, 400, "has no question 'nope'"),
        ({"action": "relevant", "doc": "x.md", "chunk": "x.md#0", "grade": 1}, 400,
         "did not retrieve 'x.md#0'"),
        ({"action": "relevant", "doc": "about.md", "chunk": "policy.md#0", "grade": 1}, 400,
         "belongs to policy.md"),
        ({"action": "relevant", "doc": "policy.md", "chunk": "policy.md#0", "grade": 5}, 400,
         "grade must be an integer 0-3, got 5"),
        ({"action": "relevant", "doc": "policy.md", "chunk": "policy.md#0", "grade": 1,
          "quote": "within 60 days"}, 400, 'the quote "within 60 days" is not in the text'),
        ({"action": "wrong", "doc": "policy.md"}, 400, "not an expected document"),
        ({"run": "99", "action": "wrong", "doc": "faq.md"}, 404, "no run"),
        ({"action": "remove", "doc": "faq.md"}, 422, "action"),
    ],
    ids=["unknown-question", "not-retrieved", "wrong-doc", "grade-5", "quote-not-in-chunk",
         "wrong-not-expected", "unknown-run", "unknown-action"],
)  # fmt: skip
def test_a_bad_edit_gets_a_clear_error_and_is_not_stored(
    client: TestClient, body: dict[str, Any], status: int, needle: str
) -> None:
    """Issue 15.3: every way an edit can be wrong is refused with a message naming it."""
    response = _mark(client, **body)
    assert response.status_code == status
    assert needle in response.json()["error"]["message"]
    assert client.get("/api/gold-edits").json()["edits"] == []


def test_gold_edit_posts_keep_the_write_protections(client: TestClient) -> None:
    """Issue 15.3: JSON only (415 for a cross-site form body), a foreign Origin is 403, a
    foreign Host 421; nothing is stored."""
    body = json.dumps({"run": "latest", "item_id": "refunds", "action": "wrong", "doc": "faq.md"})
    form = client.post("/api/gold-edits", content=body, headers={"content-type": "text/plain"})
    assert form.status_code == 415
    origin = client.post("/api/gold-edits", content=body, headers={
        "content-type": "application/json", "origin": "http://attacker.example"})  # fmt: skip
    assert origin.status_code == 403
    host = client.post("/api/gold-edits", content=body, headers={
        "content-type": "application/json", "host": "attacker.example"})  # fmt: skip
    assert host.status_code == 421
    assert client.get("/api/gold-edits").json()["edits"] == []


def test_the_default_user_is_local(store_path: Path) -> None:
    """Issue 15.3: a dashboard started without --user records edits as "local"."""
    with TestClient(create_app(str(store_path)), base_url=LOCAL) as plain:
        response = plain.post("/api/gold-edits", json={
            "run": "1", "item_id": "refunds", "action": "wrong", "doc": "faq.md"})  # fmt: skip
    assert response.status_code == 201
    assert response.json()["edit"]["user"] == "local"


# -- the CLI: edits -> gold file -> a run that finds the question ------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".jsonl"])
def test_apply_edits_round_trip(
    client: TestClient, store_path: Path, gold_file: Path, tmp_path: Path, suffix: str, store: Store
) -> None:
    """Issue 15.3: a chunk marked relevant on a miss, written by `gold apply-edits`, loads with
    load_gold, passes `gold check`, and the same retriever now finds the question."""
    source = tmp_path / f"source{suffix}"
    load_gold(gold_file).save(source)
    assert _mark(client, action="relevant", doc="policy.md", chunk="policy.md#0", grade=2,
                 quote="within 30 days").status_code == 201  # fmt: skip
    code, out, err = cli("gold", "edits", "--store", str(store_path), "--json")
    assert code == 0, err
    assert [e["doc"] for e in json.loads(out)["edits"]] == ["policy.md"]

    fixed = tmp_path / f"fixed{suffix}"
    before = source.read_text(encoding="utf-8")
    code, out, err = cli("gold", "apply-edits", str(source), "--store", str(store_path),
                         "--out", str(fixed))  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[:2] == [
        f"applied 1 gold edit(s) to {source}; wrote {fixed}",
        '  #1 refunds: policy.md relevant, grade 2, quote "within 30 days" (ana, run 1)',
    ]
    assert source.read_text(encoding="utf-8") == before
    new = load_gold(fixed)
    assert [r.model_dump(exclude_none=True) for r in new["refunds"].relevant] == [
        {"doc": "faq.md", "grade": 1},
        {"doc": "policy.md", "quote": "within 30 days", "grade": 2},
    ]
    assert new["shipping"] == load_gold(source)["shipping"]
    assert cli("gold", "check", str(fixed))[0] == 0
    report = ragmeter.evaluate(new, search, store=store, name="fixed", commit="")
    assert report.metrics["hit@5"] == 1.0

    code, out, _ = cli("gold", "apply-edits", str(fixed), "--store", str(store_path),
                       "--in-place", "--json")  # fmt: skip
    assert code == 0
    assert (json.loads(out)["applied"], len(json.loads(out)["unchanged"])) == ([], 1)


def test_apply_edits_refuses_conflicts_and_bad_flags(
    client: TestClient, store_path: Path, gold_file: Path, tmp_path: Path
) -> None:
    """Issue 15.3: conflicting edits exit 2 and write nothing; --exclude resolves them;
    --dry-run writes nothing; --out and --in-place are one or the other."""
    for grade in (2, 3):
        assert _mark(client, action="relevant", doc="policy.md", chunk="policy.md#0",
                     grade=grade).status_code == 201  # fmt: skip
    before = gold_file.read_text(encoding="utf-8")
    code, _, err = cli("gold", "apply-edits", str(gold_file), "--store", str(store_path),
                       "--in-place")  # fmt: skip
    assert code == 2
    assert "1 conflicting gold edit(s): #1 refunds: policy.md relevant, grade 2" in err
    assert gold_file.read_text(encoding="utf-8") == before
    code, out, _ = cli("gold", "apply-edits", str(gold_file), "--store", str(store_path),
                       "--exclude", "1", "--dry-run")  # fmt: skip
    assert code == 0
    assert out.startswith("would apply 1 gold edit(s)") and "#2 refunds" in out
    assert gold_file.read_text(encoding="utf-8") == before
    assert cli("gold", "apply-edits", str(gold_file), "--store", str(store_path))[0] == 2
    code, _, err = cli("gold", "apply-edits", str(gold_file), "--store", str(store_path),
                       "--exclude", "9", "--dry-run")  # fmt: skip
    assert code == 2 and "--exclude 9: no such gold edit (ids: 1, 2)" in err
    beir = tmp_path / "beir"
    beir.mkdir()
    with pytest.raises(GoldEditError, match="YAML or JSONL"):
        apply_edits_to_file(beir, [], dry_run=True)


def test_the_dashboard_user_can_come_from_ragmeter_toml(tmp_path: Path) -> None:
    """Issue 15.3: `[dashboard] user` in ragmeter.toml names who makes the gold edits
    (`ragmeter serve --user` wins); a wrong value is a config error naming the key."""
    from ragmeter.config import load_config
    from ragmeter.errors import ConfigError

    path = tmp_path / "ragmeter.toml"
    path.write_text('[dashboard]\nuser = "ana"\n', encoding="utf-8")
    assert load_config(path).user == "ana"
    assert load_config(tmp_path / "missing.toml").user is None
    path.write_text("[dashboard]\nuser = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[dashboard\] user: expected a non-empty string"):
        load_config(path)
    path.write_text('[dashboard]\nname = "ana"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key 'name'"):
        load_config(path)
