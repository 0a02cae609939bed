"""The run store's tables, in one place.

Plain SQLAlchemy Core table definitions with portable types, so the same schema
works on SQLite and PostgreSQL. JSON values (gold content, run config, rankings,
extras) are kept as ``Text`` holding JSON rather than a ``JSON`` column: both
databases store it the same way and the store decodes it itself. Identifiers
are ``String()`` without a length (unbounded ``VARCHAR``) so that PostgreSQL
accepts whatever SQLite would.

Migrations (``migrations.py``) create these tables. A migration that *changes*
a table must spell the change out (``ALTER TABLE ...``) and the earlier migration
that created the table must then keep a frozen copy of the old definition, so an
old database and a new one end up identical.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "claim_labels",
    "explanations",
    "gold_edits",
    "gold_sets",
    "metadata",
    "metric_columns",
    "migrations_table",
    "query_feedback",
    "query_log",
    "question_metrics_v2",
    "results",
    "run_metrics",
    "runs",
]

metadata = MetaData()

# Big on PostgreSQL (results can number in the hundreds of millions across runs);
# INTEGER on SQLite, where only "INTEGER PRIMARY KEY" is the rowid alias.
_BigId = BigInteger().with_variant(Integer(), "sqlite")

migrations_table = Table(
    "_migrations",
    metadata,
    Column("number", Integer, primary_key=True, autoincrement=False),
    Column("name", String(), nullable=False),
    Column("applied", String(40), nullable=False),  # ISO 8601, UTC
)

gold_sets = Table(
    "gold_sets",
    metadata,
    Column("hash", String(), primary_key=True),
    Column("name", String(), nullable=False),
    Column("created", String(40), nullable=False),
    Column("n_items", Integer, nullable=False),
    Column("content", Text, nullable=False),  # JSON list of item records
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(), nullable=False),
    Column("note", Text, nullable=False, default=""),
    Column("created", String(40), nullable=False),
    Column("git_commit", String(), nullable=True),
    Column("gold_hash", String(), ForeignKey("gold_sets.hash"), nullable=False),
    Column("retriever", Text, nullable=False),
    Column("config", Text, nullable=False, default="{}"),  # JSON object
    Column("k", Integer, nullable=False),
    Column("level", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("n_questions", Integer, nullable=False, default=0),
    Column("n_errors", Integer, nullable=False, default=0),
    Index("ix_runs_name", "name"),
    # Run ids are what users type: never hand a deleted run's id to a new run.
    sqlite_autoincrement=True,
)

results = Table(
    "results",
    metadata,
    # Insertion order: a re-added item gets a new, larger id.
    Column("id", _BigId, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("item_id", String(), nullable=False),
    # JSON list of {"id", "doc", "score", "start", "end"}; chunk text is not kept.
    Column("ranking", Text, nullable=False),
    Column("latency_ms", Float, nullable=True),
    Column("error", Text, nullable=True),
    Column("answer", Text, nullable=True),
    Column("extra", Text, nullable=True),  # JSON object, NULL when empty
    # JSON: what the run's report needs of this question without decoding its ranking
    # (first relevant rank, top-k label counts; issue 29.1); NULL in older stores.
    Column("summary", Text, nullable=True),
    UniqueConstraint("run_id", "item_id", name="uq_results_run_item"),
)

run_metrics = Table(
    "run_metrics",
    metadata,
    Column(
        "run_id",
        Integer,
        ForeignKey("runs.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("metric", String(), primary_key=True),  # canonical metric string
    Column("value", Float, nullable=True),  # NULL = undefined (e.g. no latencies)
    sqlite_with_rowid=False,
)

#: A run's per-question values of one metric: one row per (run, metric), issue 29.2. The
#: item ids are a JSON list in code point order (``sorted()``'s); the values, aligned with
#: them, are IEEE 754 float64 in little-endian byte order, NaN where undefined. Metrics of
#: one run may cover different questions (e.g. answer metrics only the answered ones); a
#: metric with the same ids as another metric of its run names it in ``same_ids_as`` and
#: has no ``item_ids`` of its own. Written and read by ``_metric_columns``.
metric_columns = Table(
    "metric_columns",
    metadata,
    Column(
        "run_id",
        Integer,
        ForeignKey("runs.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("metric", String(), primary_key=True),  # canonical metric string
    Column("item_ids", Text, nullable=True),  # JSON list of item ids, sorted
    Column("same_ids_as", String(), nullable=True),  # else: that metric's item_ids
    Column("values_f64le", LargeBinary, nullable=False),  # 8 bytes per item id
)

# -- the production query log (flywheel) ------------------------------------------

query_log = Table(
    "query_log",
    metadata,
    # Chosen by the logger (uuid4 hex) so log() can return it before the row is written.
    Column("id", String(), primary_key=True),
    Column("created", String(40), nullable=False),  # ISO 8601 UTC with milliseconds
    Column("query", Text, nullable=False),
    # JSON list of {"id", "doc", "score"?, "text"?}: what the service retrieved.
    Column("hits", Text, nullable=False),
    Column("latency_ms", Float, nullable=True),
    Column("user", String(), nullable=True),
    Column("meta", Text, nullable=True),  # JSON object, NULL when empty
    Index("ix_query_log_created", "created"),
)

query_feedback = Table(
    "query_feedback",
    metadata,
    Column("id", _BigId, primary_key=True, autoincrement=True),
    # No foreign key: feedback sent over HTTP may name a query logged by another process
    # whose batch has not been written yet.
    Column("query_id", String(), nullable=False),
    Column("created", String(40), nullable=False),
    Column("thumbs_up", Integer, nullable=False),  # 1 up, 0 down
    Column("comment", Text, nullable=True),
    Index("ix_query_feedback_query", "query_id"),
)

# -- gold edits: people's corrections of the gold set, made from a run (issue 15.3) --------

gold_edits = Table(
    "gold_edits",
    metadata,
    Column("id", _BigId, primary_key=True, autoincrement=True),
    Column("created", String(40), nullable=False),  # ISO 8601 UTC
    Column("user", String(), nullable=False),
    # No foreign key: an edit is a change to the gold file and outlives the run it came from.
    Column("run_id", Integer, nullable=False),
    Column("gold_hash", String(), nullable=True),  # the gold set the run was scored with
    Column("item_id", String(), nullable=False),
    Column("action", String(16), nullable=False),  # relevant | wrong
    Column("doc", String(), nullable=False),
    Column("chunk", String(), nullable=True),
    Column("grade", Integer, nullable=True),
    Column("quote", Text, nullable=True),
    Index("ix_gold_edits_run", "run_id"),
)

# -- people's claim labels: the decisions behind a run's claim metrics (issue 17.2) -------

claim_labels = Table(
    "claim_labels",
    metadata,
    Column(
        "run_id",
        Integer,
        ForeignKey("runs.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("item_id", String(), primary_key=True),
    # JSON object: the claims labelled and every decision (ragmeter.judging.claim_labels).
    Column("labels", Text, nullable=False),
    Column("who", String(), nullable=False),
    Column("created", String(40), nullable=False),  # ISO 8601 UTC
)

# -- explanations: why each miss of a run was missed, with evidence (issue 28) --------------

explanations = Table(
    "explanations",
    metadata,
    Column(
        "run_id",
        Integer,
        ForeignKey("runs.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("created", String(40), nullable=False),  # ISO 8601 UTC
    # JSON object: ragmeter.evaluation.explain.Explanation.to_dict(); a new explain replaces it.
    Column("content", Text, nullable=False),
)


# -- frozen definitions: tables an earlier migration created and a later one replaced -------

_frozen = MetaData()

#: ``question_metrics`` as migration 2 created it (one row per run, metric and question;
#: NULL = undefined). Migration 9 moves its rows into :data:`metric_columns` and drops it.
question_metrics_v2 = Table(
    "question_metrics",
    _frozen,
    Column(
        "run_id",
        Integer,
        ForeignKey(runs.c.id, ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("metric", String(), primary_key=True),
    Column("item_id", String(), primary_key=True),
    Column("value", Float, nullable=True),
    # The primary key is the only index this table needs; without a rowid
    # SQLite stores each row once instead of row + index.
    sqlite_with_rowid=False,
)
