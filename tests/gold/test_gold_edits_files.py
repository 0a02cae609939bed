"""Issue 27 (findings 10, 11): `gold apply-edits` on a real gold file, through the CLI.

- ``--in-place`` keeps the file's comments, layout and permissions: only the changed
  judgments are written;
- two edits whose quotes differ only in case or line breaks name one passage, so two
  grades for it are a conflict.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragmeter.cli import main
from ragmeter.gold.edits import GoldEdit, apply_edits
from ragmeter.gold.files import load_gold
from ragmeter.store import Store

GOLD = """\
# Support questions, reviewed by the docs team.
# Grades: 3 = the answer, 1 = related.

- id: refunds  # the most asked question
  question: How long do I have to ask for a refund?
  relevant:
    # the policy page says it outright
    - doc: policy.md
      grade: 3  # checked 2026-11
    - faq.md  # a short mention
  tags: [billing]  # billing cluster

# Shipping is handled by a partner.
- id: shipping
  question: Do you ship abroad?
  relevant: [{doc: shipping.md}, {doc: partners.md}]  # flow style stays flow style

- id: cache
  question: How do I clear the cache?
  relevant:
  - doc: cache.md  # indentless list
    quote: "uv cache clean"
    grade: 2
  - doc: old-cache.md  # outdated page
# trailing comment, end of file
"""


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _comments(text: str) -> list[str]:
    return [line[line.index("#") :] for line in text.splitlines() if "#" in line]


def _store(path: Path, edits: list[GoldEdit]) -> Path:
    with Store.open(path) as store:
        for edit in edits:
            store.add_gold_edit(edit)
    return path


def test_finding_10_apply_edits_in_place_keeps_comments_and_mode(tmp_path: Path) -> None:
    """Issue 27.10: `apply-edits --in-place` dumped the gold set again (18 comments -> 0)
    through mkstemp (mode 0644 -> 0600). Now the file is the same text but for the changed
    judgments, every comment not on a removed judgment is kept, and so is the mode."""
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD, encoding="utf-8")
    os.chmod(gold, 0o644)
    edits = [
        GoldEdit.new(run_id=1, item_id="refunds", action="relevant", doc="terms.md", grade=1),
        GoldEdit.new(run_id=1, item_id="shipping", action="wrong", doc="partners.md"),
        GoldEdit.new(
            run_id=1,
            item_id="cache",
            action="relevant",
            doc="cache.md",
            quote="UV cache\nclean",
            grade=3,
        ),  # fmt: skip
    ]
    db = _store(tmp_path / "runs.db", edits)
    expected = apply_edits(load_gold(gold), edits).gold
    code, out, err = cli("gold", "apply-edits", str(gold), "--store", str(db), "--in-place")
    assert code == 0, err
    assert "rewritten whole" not in out + err
    text = gold.read_text(encoding="utf-8")
    assert text == GOLD.replace(
        "    - faq.md  # a short mention\n",
        "    - faq.md  # a short mention\n    - doc: terms.md\n      grade: 1\n",
    ).replace(
        "[{doc: shipping.md}, {doc: partners.md}]",
        "[{doc: shipping.md, grade: 1}, {doc: partners.md, grade: 0}]",
    ).replace(
        '  - doc: cache.md  # indentless list\n    quote: "uv cache clean"\n    grade: 2\n'
        "  - doc: old-cache.md  # outdated page\n",
        "  - doc: cache.md\n    quote: uv cache clean\n    grade: 3\n"
        "  - doc: old-cache.md  # outdated page\n",
    )
    assert len(_comments(text)) == len(_comments(GOLD)) - 1  # the changed judgment's own
    assert stat.S_IMODE(gold.stat().st_mode) == 0o644
    assert [i.model_dump() for i in load_gold(gold)] == [i.model_dump() for i in expected]
    assert cli("gold", "check", str(gold))[0] == 0
    assert not list(tmp_path.glob(".gold.yaml.*"))

    # JSONL has no comments, but keeps its mode too.
    jsonl = tmp_path / "gold.jsonl"
    load_gold(gold).save(jsonl)
    os.chmod(jsonl, 0o640)
    more = [GoldEdit.new(run_id=2, item_id="refunds", action="relevant", doc="new.md", grade=2)]
    db2 = _store(tmp_path / "runs2.db", more)
    assert cli("gold", "apply-edits", str(jsonl), "--store", str(db2), "--in-place")[0] == 0
    assert stat.S_IMODE(jsonl.stat().st_mode) == 0o640
    assert "new.md" in [r.doc for r in load_gold(jsonl)["refunds"].relevant]


@pytest.mark.parametrize(
    "other",
    [
        "WITHIN 30 DAYS of delivery",
        "within 30\ndays of delivery",
        "  within  30 days of\tdelivery ",
    ],
    ids=["case", "newline", "spacing"],
)
def test_finding_11_folded_equal_quotes_with_two_grades_conflict(
    tmp_path: Path, other: str
) -> None:
    """Issue 27.11: grades 2 and 3 on the same passage, quoted once as selected and once
    with other case or line breaks, were both written with exit 0 (the quote finder matches
    both to one passage). Now they conflict: exit 2, both named, nothing written; the same
    grade twice is one judgment."""
    gold = tmp_path / "gold.yaml"
    gold.write_text(GOLD, encoding="utf-8")
    first = GoldEdit.new(run_id=1, item_id="refunds", action="relevant", doc="policy.md",
                         quote="within 30 days of delivery", grade=2)  # fmt: skip
    second = GoldEdit.new(run_id=1, item_id="refunds", action="relevant", doc="policy.md",
                          quote=other, grade=3)  # fmt: skip
    db = _store(tmp_path / "runs.db", [first, second])
    code, _, err = cli("gold", "apply-edits", str(gold), "--store", str(db), "--in-place")
    assert code == 2
    assert "1 conflicting gold edit(s): #1 refunds: policy.md relevant, grade 2" in err
    assert "#2 refunds: policy.md relevant, grade 3" in err
    assert gold.read_text(encoding="utf-8") == GOLD
    same = GoldEdit.new(run_id=3, item_id="refunds", action="relevant", doc="policy.md",
                        quote=other, grade=2)  # fmt: skip
    result = apply_edits(load_gold(gold), [first, same])
    quoted = [r for r in result.gold["refunds"].relevant if r.quote]
    assert len(quoted) == 1 and quoted[0].grade == 2
    assert result.unchanged == (same,)


def test_finding_10_an_item_it_cannot_splice_is_rewritten_whole_and_said(tmp_path: Path) -> None:
    """Issue 27.10: an edited item naming its judgments under an alias key cannot be spliced;
    the file is then rewritten whole (still atomically, with its mode) and a warning says the
    comments were not kept, rather than losing them silently."""
    gold = tmp_path / "gold.yaml"
    gold.write_text("# comment\n- id: q1\n  question: Why?\n  relevantDocs: [a.md]\n")
    os.chmod(gold, 0o664)
    db = _store(tmp_path / "runs.db", [GoldEdit.new(run_id=1, item_id="q1", action="relevant",
                                                      doc="b.md", grade=2)])  # fmt: skip
    code, out, err = cli("gold", "apply-edits", str(gold), "--store", str(db), "--in-place")
    assert code == 0, err
    assert f"{gold} was rewritten whole, without its comments" in out + err
    assert [r.doc for r in load_gold(gold)["q1"].relevant] == ["a.md", "b.md"]
    assert stat.S_IMODE(gold.stat().st_mode) == 0o664
