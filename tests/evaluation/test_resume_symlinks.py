"""``eval --resume`` reads the corpus as the run read it (issue 19.5 leftover).

A run over a corpus folder that links outside itself (real symlinks) was started with
``--follow-symlinks``; its resume must follow them too, and a resume that contradicts
the run (following links it did not follow, or a corpus whose content changed) is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from sqlalchemy import delete

from ragmeter.cli import main
from ragmeter.store import Store, schema

GOLD = [
    {"id": "inside", "question": "where is the inside text?", "relevant": [{"doc": "in.md"}]},
    {"id": "outside", "question": "where is the secret outside?", "relevant": [{"doc": "leak.md"}]},
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "outside.md").write_text("# Outside\nsecret outside text\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "in.md").write_text("# Inside\ninside text\n")
    (docs / "leak.md").symlink_to(Path("..") / "outside.md")
    (tmp_path / "gold.yaml").write_text(yaml.safe_dump(GOLD, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_STORE", f"sqlite:///{tmp_path / 'runs.db'}")
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _interrupt(project: Path, name: str, item: str) -> None:
    """Make the stored run look killed before ``item`` was answered."""
    with Store.open(project / "runs.db") as store:
        run = store.get_run(name)
        store._write(
            lambda conn: conn.execute(
                delete(schema.results).where(
                    schema.results.c.run_id == run.id, schema.results.c.item_id == item
                )
            )
        )
        store.update_run(run.id, status="interrupted")


def _eval(name: str, *extra: str) -> Result:
    return _cli("eval", "--gold", "gold.yaml", "--corpus", "docs", "--retriever", "bm25",
                "-k", "2", "--name", name, *extra)  # fmt: skip


def test_resume_follows_symlinks_as_the_run_did(project: Path) -> None:
    """Issue 19.5: a run started with --follow-symlinks resumes following them (was exit 2)."""
    first = _eval("linked", "--follow-symlinks", "--json")
    assert first.exit_code == 0, first.output
    with Store.open(project / "runs.db") as store:
        assert store.get_run("linked").config["follow_symlinks"] is True
    _interrupt(project, "linked", "outside")

    resumed = _cli("eval", "--resume", "linked", "--json")
    assert resumed.exit_code == 0, resumed.output
    data = json.loads(resumed.output)
    assert data["run"]["status"] == "complete" and data["n_questions"] == 2
    assert data["metrics"]["hit@1"] == 1.0  # leak.md was indexed again, and found


def test_resume_that_contradicts_the_run_is_refused(project: Path) -> None:
    """Issue 19.5: following links the run never followed would index files it never saw."""
    (project / "docs" / "leak.md").unlink()
    (project / "docs" / "other.md").write_text("# Other\nsecret outside text\n")
    first = _eval("plain")
    assert first.exit_code == 0, first.output
    _interrupt(project, "plain", "outside")
    refused = _cli("eval", "--resume", "plain", "--follow-symlinks")
    assert refused.exit_code == 2, refused.output
    assert (
        refused.output.startswith("Error: run 1 read its corpus ")
        and "without --follow-symlinks: resuming with it would index files" in refused.output
    )


def test_resume_over_a_changed_corpus_is_refused(project: Path) -> None:
    """Issue 19.5: a linked file edited since the run started is not silently mixed in."""
    assert _eval("linked", "--follow-symlinks").exit_code == 0
    _interrupt(project, "linked", "outside")
    (project / "outside.md").write_text("# Outside\nnow something else entirely\n")
    refused = _cli("eval", "--resume", "linked")
    assert refused.exit_code == 2, refused.output
    assert "(following links) changed since the run started" in refused.output
