"""Every error ragmeter raises on purpose.

One tree, so a caller can catch ``RagmeterError`` and the CLI can turn each
branch into an exit code (see ``exit_code``). Every exception class of ours
lives here (a test checks it), whichever module raises it::

    RagmeterError                   exit 2 unless noted
     ├── InputError                 bad input from the user: files, flags, names
     │    ├── GoldSetError          a gold set file that does not parse or validate
     │    ├── RunFileError          a TREC/JSONL run or qrels file that does not parse
     │    ├── CorpusError           a corpus folder/file that cannot be read
     │    ├── ConfigError           a pipeline file, ragmeter.toml or flag that is wrong
     │    ├── MetricNameError       a metric name that does not parse
     │    ├── ReviewError           a review decision that cannot be applied
     │    ├── GoldEditError         a gold edit that does not fit its run, or conflicts
     │    ├── ClaimLabelError       a claim labels file that does not fit its run's claims
     │    ├── RelevanceLabelError   a relevance labels file that does not fit its run's judged chunks
     │    ├── NotComparableError    two runs at different levels or on different gold sets
     │    ├── LabelStoreMissing     the store has no label API (HTTP 501 on the dashboard)
     │    ├── NotJSON               a POST body that is not application/json (HTTP 415)
     │    └── OutputError           a file the user named cannot be written
     ├── RetrieverError             one question's retrieval failed (recorded as an error row)
     ├── GenerationError            one question's generation failed (recorded on the question)
     ├── SchemaError                a model's reply does not fit the schema (also a ValueError)
     ├── JudgeCallError             exit 3: a model call failed after its retries
     ├── StoreError                 the run store cannot be opened or written
     │    ├── RunNotFoundError      no run matches the id/name given
     │    └── StoreBusyError        exit 3: another connection kept the store from finishing
     └── EvaluationError            exit 3: nothing could be evaluated
          └── RunInterruptedError   a run stopped before its end (marked interrupted, resumable)

Messages say what went wrong, where, and what to do, e.g.
``gold set faq.jsonl line 12: missing "question"``.
"""

from __future__ import annotations

__all__ = [
    "ClaimLabelError",
    "ConfigError",
    "CorpusError",
    "EvaluationError",
    "GenerationError",
    "GoldEditError",
    "GoldSetError",
    "InputError",
    "JudgeCallError",
    "LabelStoreMissing",
    "MetricNameError",
    "NotComparableError",
    "NotJSON",
    "OutputError",
    "RagmeterError",
    "RelevanceLabelError",
    "RetrieverError",
    "ReviewError",
    "RunFileError",
    "RunInterruptedError",
    "RunNotFoundError",
    "SchemaError",
    "StoreBusyError",
    "StoreError",
]


class RagmeterError(Exception):
    """Base class of every error ragmeter raises on purpose."""

    exit_code: int = 2


class InputError(RagmeterError):
    """Bad input from the user: a file, a flag, a name."""


class GoldSetError(InputError):
    """A gold set file that does not parse or validate."""


class RunFileError(InputError):
    """A run or qrels file that does not parse."""


class CorpusError(InputError):
    """A corpus that cannot be read."""


class ConfigError(InputError):
    """A configuration value (pipeline file, ragmeter.toml, flag) that is wrong."""


class MetricNameError(InputError, ValueError):
    """A metric name that does not parse."""


class ReviewError(InputError):
    """A review decision that cannot be applied (unknown item, bad decision, nothing to merge)."""


class GoldEditError(InputError):
    """A gold edit that does not fit its run or gold set, or conflicts with another edit."""


class ClaimLabelError(InputError):
    """A claim labels file that does not parse, or does not fit the run's judged claims."""


class RelevanceLabelError(InputError):
    """A relevance labels file that does not parse, or does not fit the run's judged chunks."""


class NotComparableError(InputError):
    """Two runs whose numbers may not be subtracted: different levels or gold sets.

    ``reasons`` holds the same lines the dashboard shows in place of a delta.
    """

    def __init__(self, message: str, reasons: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.reasons = list(reasons)

    def __reduce__(self) -> tuple[type[NotComparableError], tuple[str, list[str]]]:
        return (type(self), (str(self), self.reasons))  # reasons survive a process pool


class LabelStoreMissing(InputError):
    """The store in use has no label API (an older ragmeter)."""

    http_status = 501


class NotJSON(InputError):
    """A POST body that is not ``application/json`` (HTTP 415)."""

    http_status = status = 415


class OutputError(InputError):
    """A file the user named cannot be written (a folder, no permission, a full disk)."""


class RetrieverError(RagmeterError):
    """One question's retrieval failed; evaluation records it and goes on."""


class GenerationError(RagmeterError):
    """One question's generation failed (recorded on the question)."""


class SchemaError(RagmeterError, ValueError):
    """A model's reply that does not fit the schema; the message says where."""


class JudgeCallError(RagmeterError):
    """A text completion that failed after its retries."""

    exit_code = 3


class StoreError(RagmeterError):
    """The run store cannot be opened, migrated or written."""


class RunNotFoundError(StoreError):
    """No run matches the id or name given."""


class StoreBusyError(StoreError):
    """Another connection kept the store from finishing (``store redact`` could not empty
    the write-ahead log while a reader held it): nothing is wrong with the input."""

    exit_code = 3


class EvaluationError(RagmeterError):
    """Nothing could be evaluated (every question failed)."""

    exit_code = 3


class RunInterruptedError(EvaluationError):
    """A run stopped before its end: the store failed, or the retriever raised ``SystemExit``.

    The run is marked ``interrupted`` and ``ragmeter eval --resume RUN`` finishes it.
    """


def located(kind: str, path: object, where: str | int | None, message: str) -> str:
    """Format a message that names the file and the line or item.

    >>> located("gold set", "faq.jsonl", 12, 'missing "question"')
    'gold set faq.jsonl line 12: missing "question"'
    >>> located("gold set", "faq.yaml", "item refund", "grade 5 is outside 0-3")
    'gold set faq.yaml item refund: grade 5 is outside 0-3'
    """
    if where is None:
        return f"{kind} {path}: {message}"
    if isinstance(where, int):
        return f"{kind} {path} line {where}: {message}"
    return f"{kind} {path} {where}: {message}"
