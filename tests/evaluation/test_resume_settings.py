"""A resumed run scores its rest as its first part: a setting it would ignore is refused (issue 24).

``--min-overlap`` (and ``-k``, ``--level``, ``-m``, ``--chunker``) given with ``--resume`` used
to be dropped without a word; the resumed questions were scored with the run's own settings,
or (``evaluate(resume=..., k=...)``) retrieved at another depth.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from sqlalchemy import delete

import ragmeter
from ragmeter.cli import main
from ragmeter.errors import ConfigError
from ragmeter.gold.goldset import GoldSet
from ragmeter.store import Store, schema

# The chunk ends with the quote's first four words: 22 of the quote's 33 letters (0.67 of the
# shorter text), so it covers the quote at share 0.5 and not at 0.7.
QUOTE = "alpha bravo charlie delta echo foxtrot"
HEAD_ONLY = "Unrelated words before it here. alpha bravo charlie delta"
GOLD = [
    {"id": "first", "question": "first?", "relevant": [{"doc": "a.md", "quote": QUOTE}]},
    {"id": "second", "question": "second?", "relevant": [{"doc": "a.md", "quote": QUOTE}]},
]


def _letters(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def test_the_case_sits_between_the_two_shares() -> None:
    """The hand count behind the case: the quote's head inside the chunk, by plain search."""
    quote, chunk = _letters(QUOTE), _letters(HEAD_ONLY)
    shared = max(n for n in range(len(quote) + 1) if chunk.endswith(quote[:n]))
    assert (shared, len(quote)) == (22, 33) and 0.5 < shared / min(len(quote), len(chunk)) < 0.7


def _search(question: str, k: int) -> list[dict[str, Any]]:
    return [{"id": "a.md#0", "doc": "a.md", "text": HEAD_ONLY}]


def _interrupted(store: Store, name: str, min_overlap: float) -> None:
    def stop_at_second(question: str, k: int) -> list[dict[str, Any]]:
        if question == "second?":
            raise KeyboardInterrupt
        return _search(question, k)

    with pytest.raises(KeyboardInterrupt):
        ragmeter.evaluate(GoldSet.from_records(GOLD), stop_at_second, k=2, store=store,
                          concurrency=1, name=name, min_overlap=min_overlap)  # fmt: skip
    assert store.get_run(name).status == "interrupted"


def test_resume_scores_with_the_share_stored_on_the_run() -> None:
    """Issue 24: the resumed question is scored at the run's 0.7, as a fresh 0.7 run scores it.

    The resumed run also stays at passage level: its hits read back from the store keep their
    texts apart, and used to look text-less, so the run fell back to doc level (hit@1 1.0)."""
    store = Store.memory()
    _interrupted(store, "strict", 0.7)
    resumed = ragmeter.evaluate(GoldSet.from_records(GOLD), _search, k=2, store=store,
                                resume="strict")  # fmt: skip
    gold = GoldSet.from_records(GOLD)
    fresh = {share: ragmeter.evaluate(gold, _search, k=2, min_overlap=share)
             for share in (0.5, 0.7)}  # fmt: skip
    assert resumed.run.config["min_overlap"] == 0.7 and resumed.run.level == "passage"
    assert resumed.per_query["hit@1"]["second"] == fresh[0.7].per_query["hit@1"]["second"] == 0.0
    assert fresh[0.5].per_query["hit@1"]["second"] == 1.0


def test_resume_told_another_share_or_k_is_refused_in_python() -> None:
    """Issue 24: evaluate(resume=…) refuses a share, level or k other than the run's."""
    store = Store.memory()
    _interrupted(store, "strict", 0.7)
    gold = GoldSet.from_records(GOLD)
    with pytest.raises(ConfigError, match=r"--min-overlap 0\.7 .*--min-overlap 0\.5 was given"):
        ragmeter.evaluate(gold, _search, k=2, store=store, resume="strict", min_overlap=0.5)
    with pytest.raises(ConfigError, match=r"-k 2 .*-k 5 was given"):
        ragmeter.evaluate(gold, _search, k=5, store=store, resume="strict")
    with pytest.raises(ConfigError, match=r"--level passage .*--level doc was given"):
        ragmeter.evaluate(gold, _search, k=2, store=store, resume="strict", level="doc")
    report = ragmeter.evaluate(gold, _search, k=2, store=store, resume="strict", min_overlap=0.7)
    assert report.run.status == "complete"


def test_resume_asks_for_as_many_hits_as_the_run_did() -> None:
    """Issue 24: evaluate(resume=…) at the default k retrieves the run's k, not 10."""
    store = Store.memory()
    _interrupted(store, "strict", 0.7)
    asked: list[int] = []

    def counting(question: str, k: int) -> list[dict[str, Any]]:
        asked.append(k)
        return _search(question, k)

    ragmeter.evaluate(GoldSet.from_records(GOLD), counting, store=store, resume="strict")
    assert asked == [2]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(f"# A\n\n{QUOTE}.\n")
    (docs / "b.md").write_text("# B\n\nnothing of note here.\n")
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(GOLD, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_STORE", f"sqlite:///{tmp_path / 'runs.db'}")
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    first = _cli("eval", "--gold", "gold.yaml", "--corpus", "docs", "-k", "2", "--name", "r",
                 "--min-overlap", "0.7", "-m", "ndcg@2", "--chunker", "paragraph")  # fmt: skip
    assert first.exit_code == 0, first.output
    with Store.open(tmp_path / "runs.db") as store:
        run = store.get_run("r")
        store._write(
            lambda conn: conn.execute(
                delete(schema.results).where(
                    schema.results.c.run_id == run.id, schema.results.c.item_id == "second"
                )
            )
        )
        store.update_run(run.id, status="interrupted")
    return tmp_path


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize(
    ("told", "said"),
    [
        (["--min-overlap", "0.5"], "run 1 was made with --min-overlap 0.7 and --resume finishes "
         "it with that; --min-overlap 0.5 was given"),
        (["-k", "10"], "run 1 was made with -k 2 and --resume finishes it with that; -k 10 was"),
        (["--level", "doc"], "--level passage and --resume finishes it with that; --level doc"),
        (["-m", "rprec"], "; -m rprec was given"),
        (["--chunker", "fixed"], "--chunker/--chunk-size/--chunk-overlap paragraph (size 1000"),
        (["--chunk-size", "300"], "; --chunker/--chunk-size/--chunk-overlap markdown (size 300"),
    ],
    ids=["min-overlap", "k-at-its-default", "level", "metric", "chunker", "chunk-size"],
)  # fmt: skip
def test_cli_resume_told_another_setting_exits_2(project: Path, told: list[str], said: str) -> None:
    """Issue 24: each setting --resume would ignore, told another value, stops with both values."""
    result = _cli("eval", "--resume", "r", *told)
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.split())


def test_cli_resume_told_the_same_settings_finishes(project: Path) -> None:
    """Issue 24: repeating the run's own settings is no conflict; the share stays 0.7."""
    result = _cli("eval", "--resume", "r", "--min-overlap", "0.7", "-k", "2", "-m", "ndcg@2",
                  "--level", "passage", "--chunker", "paragraph", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["run"]["status"] == "complete"
    with Store.open(project / "runs.db") as store:
        run = store.get_run("r")
    assert run.config["min_overlap"] == 0.7 and run.level == "passage" and run.k == 2
