"""Export a stored run the way other tools read it: TREC, JSONL, CSV, parquet, RAGAS, DeepEval.

One row per question, built from the same :class:`~ragmeter.evaluation.report.RunReport` that
``ragmeter show`` prints, so an export never disagrees with the report:

- ``jsonl``: every field — per-question metric values, the ranking (rank, chunk id, document,
  score, gold grade, the text stored with the run), the answer, the dumb check, the judge
  verdict, the blame and any error;
- ``csv`` / ``parquet``: the same row flattened to columns (lists joined by ``" | "`` in CSV;
  parquet keeps them as lists; ``pyarrow`` is needed for parquet);
- ``trec``: a TREC run file of the documents in rank order (a document retrieved twice counts
  at its first chunk, as the ``doc`` level scores it), with ``write_qrels``-style gold qrels
  beside it on request, so ``ragmeter metrics`` re-scores the run;
- ``ragas``: rows of ``user_input``, ``retrieved_contexts``, ``response``, ``reference``,
  ``reference_contexts`` and ``reference_context_ids`` (RAGAS ``EvaluationDataset.from_list``
  reads them), plus ``id``, ``tags`` and ``ragmeter_relevant`` (every judgment: doc, quote,
  grade), which RAGAS ignores and ``gold import --from ragas`` reads back;
- ``deepeval``: test cases of ``input``, ``actual_output``, ``expected_output``,
  ``retrieval_context``, ``context``, with the id, tags, documents and judgments in
  ``additional_metadata`` (``gold import --from deepeval`` reads them back).

>>> EXPORT_FORMATS
('jsonl', 'csv', 'parquet', 'trec', 'ragas', 'deepeval')
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.errors import ConfigError, InputError
from ragmeter.evaluation.rows import BASE_COLUMNS, export_rows, finite, flat_row, metric_columns
from ragmeter.formats.output import write_output, writing
from ragmeter.formats.spreadsheet import csv_text

if TYPE_CHECKING:
    from ragmeter.evaluation.report import RunReport
    from ragmeter.gold.goldset import GoldSet
    from ragmeter.store import Store

__all__ = ["EXPORT_FORMATS", "ExportResult", "export_rows", "export_run", "export_stored_run"]

EXPORT_FORMATS = ("jsonl", "csv", "parquet", "trec", "ragas", "deepeval")
#: How list cells are joined in CSV (ids never contain it in practice; it is documented).
CSV_JOIN = " | "


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: the format, the file(s), how many rows, and anything to say."""

    format: str
    path: str | None
    rows: int
    qrels_path: str | None = None
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary for ``--json``."""
        return {
            "format": self.format,
            "path": self.path,
            "rows": self.rows,
            "qrels_path": self.qrels_path,
            "warnings": list(self.warnings),
        }


def _csv_cell(value: Any) -> Any:
    if isinstance(value, list):
        return CSV_JOIN.join("" if v is None else str(v) for v in value)
    if value is None:
        return ""
    return value


def _csv(rows: Sequence[Mapping[str, Any]]) -> str:
    columns = metric_columns(rows)
    header = (*BASE_COLUMNS, *columns)
    flat = (flat_row(row, columns) for row in rows)
    return csv_text(header, ({c: _csv_cell(f[c]) for c in header} for f in flat))


def _parquet(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(
            "parquet export needs pyarrow: pip install 'ragmeter[export]' (or pyarrow)"
        ) from None
    columns = metric_columns(rows)
    flat = [flat_row(row, columns) for row in rows]
    table = pa.Table.from_pylist(flat)
    pq.write_table(table, str(path))


def _contexts(report: RunReport, item_id: str, ranking: Sequence[Mapping[str, Any]]) -> list[str]:
    """The generation context when the run kept one, else the retrieved texts."""
    result = report.results.get(item_id)
    context = (result.extra.get("context") if result is not None else None) or []
    texts = [str(c.get("text") or "") for c in context if isinstance(c, Mapping)]
    if any(texts):
        return texts
    return [str(h["text"]) for h in ranking if h["text"]]


def _reference_contexts(gold: GoldSet | None, item_id: str) -> list[str]:
    if gold is None or item_id not in gold:
        return []
    return [rel.quote for rel in gold[item_id].relevant if rel.quote]


def _reference_context_ids(gold: GoldSet | None, item_id: str) -> list[str]:
    """The document of each reference context, aligned with them (corpus-relative ids)."""
    if gold is None or item_id not in gold:
        return []
    return [rel.doc_id for rel in gold[item_id].relevant if rel.quote]


def _judgments(gold: GoldSet | None, item_id: str) -> list[dict[str, Any]]:
    """The item's judgments as ``gold import`` reads them back: doc (or chunk), quote, grade."""
    if gold is None or item_id not in gold:
        return []
    out: list[dict[str, Any]] = []
    for rel in gold[item_id].relevant:
        entry: dict[str, Any] = {"doc": rel.doc} if rel.doc is not None else {"chunk": rel.chunk}
        if rel.quote:
            entry["quote"] = rel.quote
        entry["grade"] = rel.grade
        out.append(entry)
    return out


def _reference_answer(gold: GoldSet | None, item_id: str) -> str | None:
    if gold is None or item_id not in gold:
        return None
    value = getattr(gold[item_id], "reference_answer", None)
    return str(value) if value else None


def _ragas(
    report: RunReport, rows: Sequence[Mapping[str, Any]], gold: GoldSet | None
) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        entry: dict[str, Any] = {
            "id": row["id"],
            "user_input": row["question"],
            "retrieved_contexts": _contexts(report, row["id"], row["ranking"]),
            "response": row["answer"],
            "reference": _reference_answer(gold, row["id"]),
            "reference_contexts": _reference_contexts(gold, row["id"]),
            "reference_context_ids": _reference_context_ids(gold, row["id"]),
            "tags": list(row["tags"] or []),
            "ragmeter_relevant": _judgments(gold, row["id"]),
        }
        out.append(
            {k: v for k, v in entry.items() if k == "retrieved_contexts" or v not in (None, [])}
        )
    return out


def _deepeval(
    report: RunReport, rows: Sequence[Mapping[str, Any]], gold: GoldSet | None
) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        entry: dict[str, Any] = {
            "input": row["question"],
            "actual_output": row["answer"],
            "expected_output": _reference_answer(gold, row["id"]),
            "retrieval_context": _contexts(report, row["id"], row["ranking"]),
            "context": _reference_contexts(gold, row["id"]),
            "additional_metadata": {
                "id": row["id"],
                "tags": row["tags"],
                "reference_context_ids": _reference_context_ids(gold, row["id"]),
                "relevant": _judgments(gold, row["id"]),
            },
        }
        out.append(
            {k: v for k, v in entry.items() if k == "retrieval_context" or v not in (None, [])}
        )
    return out


def _trec_lines(report: RunReport, tag: str) -> tuple[list[str], list[str]]:
    """Document ranking per question; scores made strictly decreasing when they are not."""
    lines: list[str] = []
    warnings: list[str] = []
    rescored = 0
    for row in report.rows:
        if row.error is not None:
            continue
        result = report.results.get(row.id)
        hits = list(result.hits) if result is not None else []
        docs: list[tuple[str, float | None]] = []
        seen: set[str] = set()
        for hit in hits:
            if hit.doc in seen:
                continue
            seen.add(hit.doc)
            docs.append((hit.doc, finite(hit.score)))
        scores = [s for _, s in docs]
        decreasing = (
            all(s is not None for s in scores)
            and all(
                a > b  # type: ignore[operator]
                for a, b in zip(scores, scores[1:], strict=False)
            )
        )
        if not decreasing and docs:
            rescored += 1
        for rank, (doc, score) in enumerate(docs, start=1):
            value = score if decreasing and score is not None else float(len(docs) - rank + 1)
            lines.append(f"{row.id} Q0 {doc} {rank} {value!r} {tag}\n")
    if rescored:
        warnings.append(
            f"{rescored} question(s) had missing, tied or unordered scores; their TREC scores are "
            "rank-based (n, n-1, …) so trec_eval keeps the retriever's order"
        )
    if report.run.level != "doc":
        warnings.append(
            f"the run was scored at {report.run.level} level; a TREC run file ranks documents, so "
            "`ragmeter metrics` on it gives document-level values"
        )
    return lines, warnings


def _qrels_lines(gold: GoldSet) -> list[str]:
    lines: list[str] = []
    for item in gold:
        grades: dict[str, int] = {}
        for rel in item.relevant:
            grades[rel.doc_id] = max(grades.get(rel.doc_id, 0), rel.grade)
        lines.extend(f"{item.id} 0 {doc} {grade}\n" for doc, grade in grades.items())
    return lines


def _write(path: Path | None, text: str) -> None:
    if path is None:
        raise InputError("--out is required for this format")
    write_output(path, text, kind="export")


def _jsonl(records: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records)


def export_run(
    report: RunReport,
    fmt: str,
    out: str | Path | None,
    *,
    gold: GoldSet | None = None,
    qrels_out: str | Path | None = None,
) -> tuple[ExportResult, str | None]:
    """Write ``report`` as ``fmt`` to ``out``; with ``out=None`` the text is returned instead.

    ``gold`` supplies reference answers and passages for ``ragas``/``deepeval`` and the qrels
    for ``qrels_out`` (TREC). Returns the result and, when ``out`` is None, the text.

    >>> export_run(report, "csv", "run.csv")  # doctest: +SKIP
    (ExportResult(format='csv', path='run.csv', rows=53, ...), None)
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown export format {fmt!r} (known: {', '.join(EXPORT_FORMATS)})")
    path = Path(out) if out is not None else None
    rows = export_rows(report)
    warnings: list[str] = []
    text: str | None
    qrels_path: str | None = None
    if fmt == "parquet":
        if path is None:
            raise InputError("parquet is binary: give --out FILE")
        writing(path, lambda target: _parquet(rows, target), kind="export")
        text = None
    elif fmt == "csv":
        text = _csv(rows)
    elif fmt == "jsonl":
        text = _jsonl(rows)
    elif fmt == "ragas":
        text = _jsonl(_ragas(report, rows, gold))
    elif fmt == "deepeval":
        text = json.dumps(_deepeval(report, rows, gold), ensure_ascii=False, indent=2) + "\n"
    else:
        lines, warnings = _trec_lines(report, _trec_tag(report))
        text = "".join(lines)
        if qrels_out is not None:
            if gold is None:
                raise InputError("--qrels-out needs the run's gold set")
            _write(Path(qrels_out), "".join(_qrels_lines(gold)))
            qrels_path = str(qrels_out)
    if text is not None and path is not None:
        _write(path, text)
        text = None
    if fmt != "trec":  # a TREC run file carries no chunk text: nothing of it was cut
        warnings.extend(_text_warnings(rows))
    result = ExportResult(
        format=fmt,
        path=str(path) if path is not None else None,
        rows=len(rows),
        qrels_path=qrels_path,
        warnings=tuple(warnings),
    )
    return result, text


def _text_warnings(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Say when chunk texts are cut or missing, so nobody takes them for the whole chunk."""
    from ragmeter.evaluation.hit_text import HIT_TEXT_MAX_CHARS

    cut = sum(bool(hit.get("text_cut")) for row in rows for hit in row["ranking"])
    if not cut:
        return []
    return [
        f"{cut} chunk text(s) were stored cut at {HIT_TEXT_MAX_CHARS} characters "
        '(they end with "… (cut)")'
    ]


def _trec_tag(report: RunReport) -> str:
    tag = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in report.run.name)
    return tag or f"run{report.run.id}"


def export_stored_run(
    store: Store,
    run_ref: int | str,
    fmt: str,
    out: str | Path | None = None,
    *,
    qrels_out: str | Path | None = None,
) -> tuple[ExportResult, str | None]:
    """Read run ``run_ref`` (an id, a name or ``"latest"``) from ``store`` and export it.

    The gold set stored with the run supplies reference answers, quoted passages and qrels.

    >>> from ragmeter.store import Store
    >>> with Store.open(".ragmeter/ragmeter.db") as store:  # doctest: +SKIP
    ...     export_stored_run(store, "latest", "jsonl", "run.jsonl")
    """
    from ragmeter.evaluation.report import build_report
    from ragmeter.gold.goldset import GoldSet

    run = store.get_run(run_ref)
    gold = GoldSet.from_records(store.load_gold_records(run.gold_hash), name=run.name)
    report = build_report(store, run.id, gold=gold)
    return export_run(report, fmt, out, gold=gold, qrels_out=qrels_out)
