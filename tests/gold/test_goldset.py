"""Issue 2: the gold set model, its files and the error messages for bad ones."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from _scaling import LINEAR_GROWTH, growth
from ragmeter.documents import Document
from ragmeter.errors import GoldSetError
from ragmeter.gold.files import load_gold
from ragmeter.gold.goldset import GoldItem, GoldSet, Relevance

DESIGN_EXAMPLE = """\
- id: refund-window
  question: How long do I have to request a refund?
  relevant:
    - doc: policies/refunds.md          # any chunk of this document counts
      grade: 3
    - doc: faq.md
      quote: "within 30 days of delivery"
      grade: 2
    - chunk: faq.md#4
  answer_contains: ["30 days"]
  tags: [policies, colloquial]
  source: log
- id: shipping
  question: Do you ship abroad?
  relevant: [{doc: shipping.md}]
"""


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_design_example_loads(tmp_path: Path) -> None:
    """Issue 2: the YAML example of DESIGN.md loads with every field in place."""
    gold = load_gold(write(tmp_path, "faq.yaml", DESIGN_EXAMPLE))
    assert len(gold) == 2 and gold.name == "faq"
    item = gold["refund-window"]
    assert item.relevant == (
        Relevance(doc="policies/refunds.md", grade=3),
        Relevance(doc="faq.md", quote="within 30 days of delivery", grade=2),
        Relevance(chunk="faq.md#4", grade=1),
    )
    assert item.relevant[2].doc_id == "faq.md"
    assert item.answer_contains == ("30 days",)
    assert item.tags == ("policies", "colloquial")
    assert item.source == "log"
    assert [i.id for i in gold] == ["refund-window", "shipping"]
    assert "shipping" in gold and "nope" not in gold
    assert gold.qrels() == {
        "refund-window": {"policies/refunds.md": 3, "faq.md": 2},
        "shipping": {"shipping.md": 1},
    }
    assert not gold.only_docs


def test_aliases_are_accepted_and_written_canonically(tmp_path: Path) -> None:
    """Issue 2: relevantDocs / relevant_chunks / relevance / answerContains / query / _id aliases."""
    records = [
        {"_id": "a", "query": "Q1?", "relevantDocs": ["d1", {"doc": "d2", "grade": 2}]},
        {
            "query_id": "b",
            "question": "Q2?",
            "relevant_chunks": ["x.md#3"],
            "answerContains": "yes",
        },
        {"id": "c", "question": "Q3?", "relevance": [{"doc": "d3", "grade": 0}]},
        {"id": 7, "question": "Q4?", "relevant_docs": [31715818]},
    ]
    gold = GoldSet.from_records(records)
    assert gold["a"].relevant == (Relevance(doc="d1"), Relevance(doc="d2", grade=2))
    assert gold["b"].relevant == (Relevance(chunk="x.md#3"),)
    assert gold["b"].answer_contains == ("yes",)
    assert gold["c"].relevant[0].grade == 0
    # YAML reads numeric ids as ints; they are ids and become strings.
    assert gold["7"].relevant[0].doc == "31715818"
    path = tmp_path / "out.jsonl"
    gold.save(path)
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert first == {
        "id": "a",
        "question": "Q1?",
        "relevant": [{"doc": "d1", "grade": 1}, {"doc": "d2", "grade": 2}],
    }


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".jsonl"], ids=["yaml", "yml", "jsonl"])
def test_save_load_round_trip_keeps_hash(tmp_path: Path, suffix: str) -> None:
    """Issue 2: save then load gives equal items and the same hash in every format."""
    gold = load_gold(write(tmp_path, "g.yaml", DESIGN_EXAMPLE))
    target = tmp_path / f"copy{suffix}"
    gold.save(target)
    again = load_gold(target)
    assert again == gold
    assert again.hash == gold.hash
    assert again.to_records() == gold.to_records()


def test_items_and_sets_are_hashable() -> None:
    """Issue 2: items (even with metadata) and gold sets can be dict keys."""
    gold = GoldSet.from_records([{"id": "a", "question": "A?", "metadata": {"k": [1]}}])
    same = GoldSet.from_records([{"id": "a", "question": "A?", "metadata": {"k": [1]}}])
    assert {gold: 1}[same] == 1
    assert hash(gold["a"]) == hash(same["a"])


def test_hash_depends_on_content_and_order() -> None:
    """Issue 2: the hash changes when an item or the order changes."""
    a = {"id": "a", "question": "A?"}
    b = {"id": "b", "question": "B?"}
    base = GoldSet.from_records([a, b]).hash
    assert base == GoldSet.from_records([dict(a), dict(b)]).hash
    assert base != GoldSet.from_records([b, a]).hash
    assert base != GoldSet.from_records([a, b | {"tags": ["x"]}]).hash
    assert len(base) == 64


def test_json_file_with_items_key(tmp_path: Path) -> None:
    """Issue 2: a .json file may be a list or {"items": [...]}."""
    items = [{"id": "a", "question": "A?"}]
    listed = load_gold(write(tmp_path, "a.json", json.dumps(items)))
    wrapped = load_gold(write(tmp_path, "b.json", json.dumps({"name": "mine", "items": items})))
    assert listed.hash == wrapped.hash and wrapped.name == "mine"


def test_jsonl_tolerates_crlf_bom_and_blank_lines(tmp_path: Path) -> None:
    """Issue 2: Windows line ends, a UTF-8 BOM and blank lines are fine."""
    text = '\ufeff{"id": "a", "question": "A?"}\r\n\r\n{"id": "b", "question": "B\u2028?"}\r\n'
    gold = load_gold(write(tmp_path, "g.jsonl", text.encode("utf-8")))
    assert [i.id for i in gold] == ["a", "b"] and gold["b"].question == "B\u2028?"


def test_only_docs_and_qrels_take_max_grade() -> None:
    """Issue 2: doc-level qrels keep the highest grade per doc; items without judgments are omitted."""
    gold = GoldSet.from_records(
        [
            {"id": "q", "question": "?", "relevant": [{"doc": "a", "grade": 1}, "b"]},
            {"id": "r", "question": "?", "relevant": [{"doc": "a", "grade": 2}, {"doc": "a"}]},
            {"id": "s", "question": "?"},
        ]
    )
    assert gold.only_docs
    assert gold.qrels() == {"q": {"a": 1, "b": 1}, "r": {"a": 2}}


# --- bad input: one message naming file, line (or item) and field -------------------

BAD = [
    (
        "grade-too-high.yaml",
        "- id: a\n  question: q\n- id: b\n  question: q\n  relevant:\n    - doc: x\n      grade: 5\n",
        "gold set {p} line 3: item b relevant[0].grade: grade 5 is outside 0-3",
    ),
    (
        "grade-float.yaml",
        "- id: a\n  question: q\n  relevant: [{doc: x, grade: 1.5}]\n",
        "gold set {p} line 1: item a relevant[0].grade: grade must be an integer 0-3, got 1.5",
    ),
    (
        "grade-string.jsonl",
        '{"id": "a", "question": "q", "relevant": [{"doc": "x", "grade": "2"}]}\n',
        "gold set {p} line 1: item a relevant[0].grade: grade must be an integer 0-3, got '2'",
    ),
    (
        "grade-bool.jsonl",
        '\n{"id": "a", "question": "q", "relevant": [{"doc": "x", "grade": true}]}\n',
        "gold set {p} line 2: item a relevant[0].grade: grade must be an integer 0-3, got True",
    ),
    (
        "unknown-field.yaml",
        "- id: a\n  question: q\n  relevnt: [x]\n",
        'gold set {p} line 1: item a unknown field "relevnt" (allowed: id, question, relevant, '
        "answer_contains, reference_answer, tags, source, status, parent, metadata)",
    ),
    (
        "unknown-relevance-field.yaml",
        "- id: a\n  question: q\n  relevant: [{doc: x, grde: 2}]\n",
        'gold set {p} line 1: item a relevant[0]: unknown field "grde" '
        "(allowed: doc, quote, chunk, grade)",
    ),
    (
        "duplicate.yaml",
        "- id: a\n  question: q\n- id: b\n  question: q\n- id: a\n  question: r\n",
        'gold set {p}: duplicate item id "a" (lines 1 and 5)',
    ),
    (
        "duplicate.jsonl",
        '{"id": "a", "question": "q"}\n{"_id": "a", "query": "r"}\n',
        'gold set {p}: duplicate item id "a" (lines 1 and 2)',
    ),
    (
        "empty-question.yaml",
        "- id: a\n  question: '   '\n",
        "gold set {p} line 1: item a question: must not be empty",
    ),
    (
        "missing-question.jsonl",
        '{"id": "a"}\n',
        'gold set {p} line 1: item a missing "question"',
    ),
    (
        "no-anchor.yaml",
        "- id: a\n  question: q\n  relevant: [{grade: 2}]\n",
        'gold set {p} line 1: item a relevant[0]: needs "doc" or "chunk"',
    ),
    (
        "quote-without-doc.yaml",
        "- id: a\n  question: q\n  relevant: [{chunk: x#1, quote: hi}]\n",
        'gold set {p} line 1: item a relevant[0]: "quote" needs "doc" '
        "(the quote is searched in that document)",
    ),
    (
        "bad-source.json",
        '[{"id": "a", "question": "q", "source": "web"}]',
        "gold set {p} item a: source: 'web' is not a source; "
        "use one of log, docs, adversarial, synthetic",
    ),
    (
        "bad-yaml.yaml",
        "- id: a\n  question: [q\n",
        "gold set {p} line 3: invalid YAML at column 1: did not find expected ',' or ']'",
    ),
    (
        "bad-json.jsonl",
        '{"id": "a", "question": "q"}\n{"id": "b", "question": \n',
        "gold set {p} line 2: invalid JSON at column 24: Expecting value",
    ),
    (
        "latin1.yaml",
        b"- id: a\n  question: caf\xe9\n",
        "gold set {p} line 2: not UTF-8 text (byte 0xe9 at column 16); save it as UTF-8",
    ),
    ("empty.yaml", "", "gold set {p}: file is empty"),
    ("blank.jsonl", "\n  \n", "gold set {p}: file is empty"),
    ("comments-only.yaml", "# nothing yet\n", "gold set {p}: file is empty"),
    ("empty-list.yaml", "[]\n", "gold set {p}: has no items"),
    (
        "scalar.yaml",
        "hello\n",
        'gold set {p}: expected a list of items or a mapping with "items", got str',
    ),
    ("not-a-mapping.jsonl", "[1, 2]\n", "gold set {p} line 1: expected a mapping, got list"),
    (
        "gold.csv",
        "id,question\n",
        "gold set {p}: unknown format; use .yaml, .yml, .json, .jsonl or a BEIR folder",
    ),
]


@pytest.mark.parametrize(("name", "content", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_files_give_one_clear_message(
    tmp_path: Path, name: str, content: str | bytes, expected: str
) -> None:
    """Issue 2: a malformed gold set names the file, line or item and field."""
    path = write(tmp_path, name, content)
    with pytest.raises(GoldSetError) as caught:
        load_gold(path)
    assert str(caught.value) == expected.format(p=path)


def test_missing_file(tmp_path: Path) -> None:
    """Issue 2: a missing file is a GoldSetError, not an OSError."""
    with pytest.raises(GoldSetError, match="file not found"):
        load_gold(tmp_path / "nope.yaml")


def test_metadata_keys_must_be_strings() -> None:
    """Issue 2: a YAML 1.1 boolean key (on/off) is reported with its field."""
    with pytest.raises(GoldSetError) as caught:
        GoldSet.from_records([{"id": "a", "question": "q", "metadata": {True: 1}}])
    assert str(caught.value) == (
        "gold set records item a: metadata[1] (key): must be a string, got bool"
    )


def test_metadata_must_be_json(tmp_path: Path) -> None:
    """Issue 2: dates in YAML stay strings; binary metadata is refused (it cannot be JSONL)."""
    gold = load_gold(
        write(tmp_path, "d.yaml", "- id: a\n  question: q\n  metadata: {created: 2024-01-01}\n")
    )
    assert gold["a"].metadata == {"created": "2024-01-01"}
    with pytest.raises(GoldSetError, match=r"line 1: item a metadata: must hold only JSON values"):
        load_gold(
            write(tmp_path, "b.yaml", "- id: a\n  question: q\n  metadata: {x: !!binary aGk=}\n")
        )


def test_too_many_problems_are_counted() -> None:
    """Issue 2: pydantic's list of errors becomes one sentence plus a count."""
    with pytest.raises(GoldSetError) as caught:
        GoldSet.from_records([{"id": "a", "question": "", "tags": [1], "bogus": 1}])
    assert str(caught.value) == (
        "gold set records item a: question: must not be empty (and 2 more problems)"
    )
    assert "pydantic" not in str(caught.value)


# --- quotes, chunks and grades ------------------------------------------------------


DOCS = {
    "faq.md": Document(id="faq.md", text="Refunds:\nWithin  30 Days\nof delivery, ask us."),
    "other.md": Document(id="other.md", text="Nothing here."),
}


def test_quote_spans_exact_then_case_and_space_insensitive() -> None:
    """Issue 2: quotes are found exactly, then ignoring case and whitespace runs."""
    gold = GoldSet.from_records(
        [
            {
                "id": "q",
                "question": "?",
                "relevant": [
                    {"doc": "faq.md", "quote": "Within  30 Days"},
                    {"doc": "faq.md", "quote": "within 30 days of DELIVERY"},
                    {"doc": "other.md"},
                    {"doc": "absent.md", "quote": "whatever"},
                ],
            }
        ]
    )
    spans = gold.quote_spans(DOCS)
    text = DOCS["faq.md"].text
    assert spans == {("q", 0): (9, 24), ("q", 1): (9, 36)}
    assert text[9:24] == "Within  30 Days"
    assert text[9:36] == "Within  30 Days\nof delivery"
    assert gold.missing_docs(DOCS.keys()) == {"absent.md": ["q"]}


def test_quote_not_found_names_item_and_field(tmp_path: Path) -> None:
    """Issue 2: a quote missing from its document is an error naming file, line, item and field."""
    path = write(
        tmp_path,
        "g.yaml",
        "- id: a\n  question: q\n- id: refund-window\n  question: q\n"
        "  relevant:\n    - doc: faq.md\n    - {doc: faq.md, quote: within 60 days}\n",
    )
    with pytest.raises(GoldSetError) as caught:
        load_gold(path).quote_spans(DOCS)
    assert str(caught.value) == (
        f'gold set {path} line 3: item refund-window relevant[1].quote: "within 60 days" '
        "not found in faq.md"
    )
    built = GoldSet.from_records(load_gold(path).to_records(), name="mem")
    with pytest.raises(GoldSetError, match=r"^gold set mem item refund-window: relevant\[1\]"):
        built.quote_spans(DOCS)


def test_chunk_grade_highest_matching_entry() -> None:
    """Issue 2 / 24.3: doc / quote coverage / exact chunk, highest grade wins, 0 otherwise."""
    from ragmeter.documents import Hit
    from ragmeter.evaluation.passages import Evidence, chunk_grade

    item = GoldItem(
        id="q",
        question="?",
        relevant=(
            Relevance(doc="faq.md", quote="within 30 Days of delivery", grade=3),
            Relevance(doc="faq.md", grade=1),
            Relevance(chunk="other.md#2", grade=2),
            Relevance(doc="zero.md", grade=0),
        ),
    )
    text = "Orders ship fast. Refunds: within 30 days of delivery, keep the receipt."
    docs = {"faq.md": Document(id="faq.md", text=text)}
    quote_at = text.index("within")
    ev = Evidence(docs)

    def grade(ident: str, doc: str, start: int | None, end: int | None) -> int:
        return chunk_grade(item, Hit(ident, doc, start=start, end=end), ev)

    assert grade("faq.md#0", "faq.md", 0, quote_at) == 1  # ends where the quote starts
    assert grade("faq.md#1", "faq.md", quote_at - 9, quote_at + 27) == 3  # holds it all
    # The quote folds to 22 characters ("within30daysofdelivery"); the chunk is longer, so
    # it needs max(half of 22, 16) = 16 of them: "within30daysofdeliv" is 19, "within30days" 12.
    assert grade("faq.md#2", "faq.md", 0, quote_at + len("within 30 days of deliv")) == 3
    assert grade("faq.md#3", "faq.md", 0, quote_at + len("within 30 days")) == 1
    assert grade("faq.md", "faq.md", None, None) == 1  # no text, no span: the quote is unjudged
    assert grade("other.md#2", "other.md", 0, 5) == 2
    assert grade("other.md#3", "other.md", 0, 5) == 0
    assert grade("zero.md#0", "zero.md", 0, 5) == 0


def test_from_qrels_and_back() -> None:
    """Issue 2: TREC/BEIR judgments import; negative grades mean not relevant (0)."""
    gold = GoldSet.from_qrels({"1": {"d1": 2, "d2": -1}}, {"1": "What?", "2": "Unjudged?"})
    assert len(gold) == 1
    assert gold.qrels() == {"1": {"d1": 2, "d2": 0}}
    with pytest.raises(GoldSetError, match=r"query 9: has judgments but no question text"):
        GoldSet.from_qrels({"9": {"d": 1}}, {})
    with pytest.raises(GoldSetError, match=r"grade 4 is outside 0-3"):
        GoldSet.from_qrels({"1": {"d": 4}}, {"1": "?"})


def test_trec_qrels_export_import(tmp_path: Path) -> None:
    """Issue 2: GoldSet.qrels() written with formats.trec reads back the same judgments."""
    trec = pytest.importorskip("ragmeter.formats.trec", reason="formats/trec.py not written yet")
    gold = GoldSet.from_records(
        [{"id": "q1", "question": "?", "relevant": [{"doc": "a", "grade": 3}, "b"]}]
    )
    path = tmp_path / "gold.qrels"
    trec.write_qrels(gold.qrels(), path)
    again = GoldSet.from_qrels(trec.read_qrels(path), {"q1": "?"})
    assert again.qrels() == gold.qrels()


def _records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"q{i}",
            "question": f"Question number {i}?",
            "relevant": [{"doc": f"d{i}.md", "grade": 2}, {"doc": "x.md", "quote": "some text"}],
            "answer_contains": ["x"],
            "tags": ["t"],
            "source": "log",
        }
        for i in range(n)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".jsonl", ".yaml"])
def test_loading_thousands_of_items_scales_linearly(tmp_path: Path, suffix: str) -> None:
    """Issue 2: 5,000 items load from YAML and JSONL intact, and the work grows linearly
    with the items (counted calls, not seconds: the time is benchmarks/hot_paths.py's)."""
    gold = GoldSet.from_records(_records(5000))
    path = tmp_path / f"big{suffix}"
    gold.save(path)
    assert load_gold(path).hash == gold.hash

    def loading(n: int) -> Callable[[], object]:
        sized = tmp_path / f"n{n}{suffix}"
        GoldSet.from_records(_records(n)).save(sized)
        return lambda: load_gold(sized)

    assert growth(loading, 100) < LINEAR_GROWTH


@pytest.mark.parametrize(
    "key", ["reference_answer", "reference", "expected_output", "ground_truth"]
)
def test_reference_answer_and_its_aliases(key: str) -> None:
    """Issue 17.1: RAGAS `reference`/`ground_truth` and DeepEval `expected_output` are accepted."""
    gold = GoldSet.from_records([{"id": "q", "question": "?", key: "Within 30 days."}])
    assert gold["q"].reference_answer == "Within 30 days."
    assert gold.to_records() == [
        {"id": "q", "question": "?", "reference_answer": "Within 30 days."}
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"reference_answer": "  "}, "item q: reference_answer: must not be empty"),
        ({"reference": 30}, "item q: reference_answer: must be a string, got int"),
        ({"reference": "a", "ground_truth": "b"}, '"ground_truth" repeats "reference_answer"'),
        ({"expected_output": "a\x1bb"}, "reference_answer: holds a control character (U+001B)"),
    ],
    ids=["blank", "not-a-string", "two-aliases", "control-character"],
)
def test_reference_answer_is_validated(extra: dict[str, object], message: str) -> None:
    """Issue 17.1: a reference answer is a non-empty string, given once."""
    with pytest.raises(GoldSetError) as caught:
        GoldSet.from_records([{"id": "q", "question": "?"} | extra])
    assert message in str(caught.value)


@pytest.mark.parametrize("suffix", [".yaml", ".jsonl", ".json"])
def test_reference_answer_survives_save_and_load(tmp_path: Path, suffix: str) -> None:
    """Issue 17.1: YAML, JSONL and JSON carry the reference answer; the hash does not drift."""
    gold = GoldSet.from_records(
        [
            {"id": "a", "question": "A?", "reference_answer": "Line one.\nLine two: «ok»."},
            {"id": "b", "question": "B?"},
        ]
    )
    path = tmp_path / f"g{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(gold.to_records()), encoding="utf-8")
    else:
        gold.save(path)
    loaded = load_gold(path)
    assert loaded["a"].reference_answer == "Line one.\nLine two: «ok»."
    assert loaded["b"].reference_answer is None
    assert loaded.hash == gold.hash


def test_items_without_reference_answers_keep_their_hash() -> None:
    """Issue 17.1: adding the field leaves existing gold set hashes (and stored runs) alone."""
    gold = GoldSet.from_records([{"id": "q", "question": "?", "relevant": ["a.md"]}])
    records = [{"id": "q", "question": "?", "relevant": [{"doc": "a.md", "grade": 1}]}]
    text = json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert gold.hash == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_beir_cannot_carry_reference_answers(tmp_path: Path) -> None:
    """Issue 17.1: BEIR has no place for them; writing BEIR drops them, as documented."""
    from ragmeter.formats.beir import write_beir

    gold = GoldSet.from_records(
        [{"id": "q", "question": "?", "relevant": ["d"], "reference_answer": "R."}]
    )
    write_beir(gold, tmp_path)
    assert load_gold(tmp_path)["q"].reference_answer is None
