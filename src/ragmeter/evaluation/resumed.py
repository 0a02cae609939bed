"""A resumed run finishes as it started: a setting told otherwise is refused, never ignored.

A resume scores the rest of a run with the run's record: its scoring settings (k, level,
the coverage rule's share, metrics, chunker) and its inputs (retriever spec, gold set,
corpus, BEIR split, how hits name documents, timeout, an HTTP retriever's request and body
limit). A value given on resume that differs
from the record used to be dropped without a word, or (in Python) to score the rest of the
run differently from its first part: a wrong number that looks right. Each is now a
:class:`~ragmeter.errors.ConfigError` (exit 2) naming both values (issue 24). The run's name
and note are kept too, so ``--name``/``--note`` given otherwise are refused the same way
(they used to be dropped without a word).

Values are compared as the run normalised them: paths resolved, a gold set or a corpus by
its content hash, a retriever spec with its secrets hidden (it is stored that way, and
only that way is ever printed).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter._redact import redact
from ragmeter.errors import ConfigError
from ragmeter.evaluation.setup import RetrieverSetup, min_overlap_of, one_spelling
from ragmeter.gold.goldset import GoldSet
from ragmeter.run import RunInfo

__all__ = [
    "RESUMED_INPUTS",
    "RESUMED_LABELS",
    "RESUMED_REQUEST",
    "RESUMED_SETTINGS",
    "check_resumed",
    "check_resumed_corpus",
    "check_resumed_gold",
    "check_resumed_headers",
    "checked_call",
    "corpus_hash",
    "refusal",
    "resumed_request",
]

#: The scoring settings a resumed run keeps from its record, as the CLI spells them.
RESUMED_SETTINGS = {
    "k": "-k",
    "level": "--level",
    "min_overlap": "--min-overlap",
    "metrics": "-m",
    "chunker": "--chunker/--chunk-size/--chunk-overlap",
}

#: The inputs a resumed run keeps from its record (``EvalJob`` field: CLI option).
RESUMED_INPUTS = {
    "retriever": "--retriever",
    "gold": "--gold",
    "corpus": "--corpus",
    "split": "--split",
    "doc_field": "--doc-field",
    "doc_roots": "--doc-root",
    "timeout": "--timeout",
    "max_response_bytes": "--max-response-bytes",
}

#: How an HTTP retriever is asked: stored with the run as its ``request`` (``HttpShape.config``).
RESUMED_REQUEST = {
    "http_method": ("--http-method", "method"),
    "http_body": ("--http-body", "body"),
    "hits_path": ("--hits-path", "hits_path"),
    "http_preset": ("--http-preset", "preset"),
}

#: What a resumed run keeps of how it was labelled (``EvalJob`` field: CLI option): a resume
#: finishes the run under its own name and note, so another one given would be ignored.
RESUMED_LABELS = {"name": "--name", "note": "--note"}

_NEW_RUN = "drop it, or start a new run with it (the same command without --resume)"


def refusal(run: RunInfo, flag: str, ours: Any, given: Any) -> ConfigError:
    """The one message of a resume told ``given`` where the run has ``ours`` (``None``:
    the run was made without ``flag``); both with their secrets hidden."""
    made = f"with {flag} {redact(str(ours))}" if ours is not None else f"without {flag}"
    told = f"{flag} {redact(str(given))}" if given is not None else f"no {flag}"
    return ConfigError(
        f"run {run.id} was made {made} and --resume finishes it with that; {told} was "
        f"given: {_NEW_RUN}"
    )


def check_resumed(run: RunInfo, told: Mapping[str, Any]) -> None:
    """Refuse a setting a resume was told that differs from the run's own (issue 24).

    ``told`` holds what the resume was given, keyed as :data:`RESUMED_SETTINGS`,
    :data:`RESUMED_INPUTS` and :data:`RESUMED_LABELS` (``metrics`` a list, ``chunker`` a
    dict, ``doc_roots`` a list); ``None`` is "not given". A value the run already has (or, for metrics, already
    computes) is fine; another is a ``ConfigError`` (exit 2) naming both values. The gold
    set and a corpus at another path are compared by content later, when they are read
    (:func:`check_resumed_gold`, :func:`check_resumed_corpus`).

    >>> run = RunInfo(3, "r", "", "h", "bm25", 10, "passage", "interrupted")
    >>> check_resumed(run, {"k": 10, "min_overlap": 0.5, "retriever": "bm25"})
    >>> check_resumed(run, {"min_overlap": 0.7})
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: run 3 was made with --min-overlap 0.5 and --resume finishes \
it with that; --min-overlap 0.7 was given: drop it, or start a new run with it (the same \
command without --resume)
    >>> check_resumed(run, {"name": "r", "note": ""})  # its own name and note
    >>> check_resumed(run, {"retriever": "http://u:pw@h/search"})
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: run 3 was made with --retriever bm25 and --resume finishes \
it with that; --retriever http://u:***@h/search was given: drop it, or start a new run with \
it (the same command without --resume)
    """
    for key, value in told.items():
        if value is None:
            continue
        if key in RESUMED_SETTINGS:
            conflict = _setting_conflict(run, key, value)
        elif key in RESUMED_INPUTS and key != "gold":
            conflict = _input_conflict(run, key, value)
        elif key in RESUMED_LABELS:
            stored = getattr(run, key)
            conflict = None if value == stored else (stored or None, value or '""')
        else:
            continue
        if conflict is not None:
            flag = {**RESUMED_SETTINGS, **RESUMED_INPUTS, **RESUMED_LABELS}[key]
            raise refusal(run, flag, *conflict)


def _setting_conflict(run: RunInfo, key: str, value: Any) -> tuple[Any, Any] | None:
    from ragmeter.metrics import parse_metrics
    from ragmeter.pipelines.chunkers import ChunkerConfig

    if key == "metrics":
        stored = {str(m) for m in parse_metrics(list(run.config.get("metrics") or ()))}
        extra = [str(m) for m in parse_metrics(list(value)) if str(m) not in stored]
        if not extra:
            return None
        return ", ".join(sorted(stored)) or "the default metrics", ", ".join(extra)
    if key == "chunker":
        kept = run.config.get("chunker")
        if kept is None:  # an adapter's run: no chunker shaped it
            return None
        ours, theirs = ChunkerConfig.from_dict(kept), ChunkerConfig.from_dict(value)
        return None if ours == theirs else (_chunker_text(ours), _chunker_text(theirs))
    stored_value = {"k": run.k, "level": run.level}.get(key, min_overlap_of(run.config))
    return None if value == stored_value else (stored_value, value)


def _input_conflict(run: RunInfo, key: str, value: Any) -> tuple[Any, Any] | None:
    config = run.config
    if key == "retriever":
        # Stored with its secrets hidden; a spec that hides to the stored one is the same.
        shown = redact(str(value))
        return None if shown == run.retriever else (run.retriever, shown)
    if key == "split":
        stored = config.get("split") or "test"
        return None if value == stored else (stored, value)
    if key == "doc_field":
        stored = config.get("doc_field")
        return None if value == stored else (stored, value)
    if key == "doc_roots":
        stored_roots = _as_list(config.get("doc_root"))
        given = _as_list(value)
        if not given or [_place(v) for v in given] == [_place(v) for v in stored_roots]:
            return None
        return (" ".join(stored_roots) or None), " ".join(given)
    if key == "timeout":
        stored_timeout = config.get("timeout")
        same = stored_timeout is not None and float(value) == float(stored_timeout)
        return None if same else (stored_timeout, value)
    if key == "max_response_bytes":
        retriever = config.get("retriever")
        limit = retriever.get(key) if isinstance(retriever, Mapping) else None
        return None if value == limit else (limit, value)
    if key == "corpus":
        stored_corpus = config.get("corpus")
        if not isinstance(stored_corpus, str):
            return None, value
        if _place(value) == _place(stored_corpus) or config.get("corpus_hash"):
            return None  # another path is compared by content when it is read
        return stored_corpus, value
    return None


def resumed_request(run: RunInfo, told: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--http-*`` options to ask the run's HTTP retriever with, from its stored
    ``request``; told otherwise (keys of :data:`RESUMED_REQUEST`), a ``ConfigError``.

    A run stores how its requests were shaped, a template's credential values hidden; a
    resume used to ask with the default shape instead (issue 24). A hidden value must be
    given again (the whole ``--http-body``), as a redacted retriever spec must.

    >>> run = RunInfo(3, "r", "", "h", "http://h/s", 10, "doc", "interrupted",
    ...               config={"retriever": {"request": {"method": "POST", "body": "{}",
    ...                                                 "hits_path": "data.hits"}}})
    >>> resumed_request(run, {})
    {'http_method': 'POST', 'http_body': '{}', 'hits_path': 'data.hits', 'http_preset': None}
    >>> resumed_request(run, {"hits_path": "hits"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: run 3 was made with --hits-path data.hits and --resume ...
    """
    from ragmeter._redact import MASK
    from ragmeter.retrievers.presets import HttpShape

    retriever = run.config.get("retriever")
    stored = retriever.get("request") if isinstance(retriever, Mapping) else None
    given = {key: told[key] for key in RESUMED_REQUEST if told.get(key) is not None}
    if not isinstance(stored, Mapping):  # the default request, or no HTTP retriever
        if given:
            key, value = next(iter(given.items()))
            raise refusal(run, RESUMED_REQUEST[key][0], None, _shown(key, value))
        return {}
    merged = {key: stored.get(field) for key, (_, field) in RESUMED_REQUEST.items()}
    for key, value in given.items():
        flag, field = RESUMED_REQUEST[key]
        if _shown(key, value) != stored.get(field):
            raise refusal(run, flag, stored.get(field), _shown(key, value))
        merged[key] = value
    if MASK in str(merged["http_body"]) and "http_body" not in given:
        raise ConfigError(
            f"run {run.id}'s --http-body {merged['http_body']} had a credential, which is never "
            "stored: pass the same --http-body again to resume it"
        )
    shape = HttpShape.of(method=merged["http_method"], body=merged["http_body"],
                         hits_path=merged["hits_path"], preset=merged["http_preset"])  # fmt: skip
    if shape.config() != dict(stored):
        raise ConfigError(f"run {run.id}'s stored request {dict(stored)} cannot be made again "
                          f"from what was given; {_NEW_RUN}")  # fmt: skip
    return merged


def _shown(key: str, value: Any) -> Any:
    from ragmeter._redact import redact_template

    return redact_template(str(value)) if key == "http_body" else value


def check_resumed_headers(run: RunInfo, headers: Sequence[str]) -> None:
    """A run made with ``--header`` is resumed with the same header names (their values are
    never stored, so they must be given again; a resume used to drop them, issue 24)."""
    stored = sorted(str(name) for name in run.config.get("header_names") or ())
    given = sorted(header.partition(":")[0].strip() for header in headers)
    if {n.lower() for n in stored} <= {n.lower() for n in given}:
        return
    raise ConfigError(
        f"run {run.id} was made with --header {', '.join(stored)} (header values are never "
        f"stored){'; ' + ', '.join(given) + ' was given' if given else ''}: pass the same "
        "--header again to resume it"
    )


def check_resumed_gold(run: RunInfo, gold: GoldSet, documents: Any) -> None:
    """Refuse a gold set given on resume whose content is not the run's (issue 24).

    The rest of a run is scored against the gold set stored with it; a gold set given again
    (``--gold``, or ``evaluate``'s first argument) must hold the same questions and
    judgments, compared by content hash after the spellings were unified as the run
    unified them (``one_spelling`` with the corpus ``documents``). A changed file is refused:
    its answers would never reach the remaining questions.
    """
    unified = one_spelling(gold, documents)[0]
    if run.gold_hash in (gold.hash, unified.hash):
        return
    stored = run.config.get("gold")
    ours = f"{stored} " if stored else ""
    where = f"{gold.path} " if gold.path is not None else ""
    raise refusal(
        run, "--gold", f"{ours}{_hashed(run.gold_hash)}", f"{where}{_hashed(unified.hash)}"
    )


def check_resumed_corpus(run: RunInfo, path: str, content_hash: str, *, following: bool) -> None:
    """Refuse a corpus whose content is not the run's (issue 19.5; another path: issue 24).

    A corpus changed since the run started, or another folder given on resume, would score
    the rest of the run on other documents than its first part.
    """
    expected = run.config.get("corpus_hash")
    if not expected or content_hash == expected:
        return
    stored = run.config.get("corpus")
    how = " (following links)" if following else ""
    if isinstance(stored, str) and _place(stored) != _place(path):
        raise refusal(run, "--corpus", f"{stored} (content hash {str(expected)[:12]})",
                      f"{path}{how} (content hash {content_hash[:12]})")  # fmt: skip
    raise ConfigError(
        f"run {run.id}'s corpus {path}{how} changed since the run started (content "
        f"hash {str(expected)[:12]}, now {content_hash[:12]}): resuming would score "
        "the rest of the run on other documents; start a new run"
    )


def checked_call(
    setup: RetrieverSetup, store: Any, resume: int | str | None, timeout: float | None
) -> RetrieverSetup:
    """``evaluate()``'s own arguments: on resume, checked against the run; on a new run,
    ``setup`` with what a later resume compares (the timeout, the corpus's content hash).

    Checked: a retriever given by spec (a retriever object is the caller's and is used as
    given), ``timeout`` and the corpus (``corpus=`` or ``RetrieverSetup(documents=...)``),
    by content hash: a run made with a corpus is not finished without it, nor with another.
    """
    documents = setup.documents
    content_hash = corpus_hash(documents) if documents is not None else None
    if resume is None or store is None:
        kept = {"timeout": timeout, **setup.config}
        if content_hash is not None:
            kept.setdefault("corpus_hash", content_hash)
        return dataclasses.replace(setup, config=kept)
    run = store.get_run(resume)
    retriever = setup.retriever
    spec = (
        setup.spec if setup.spec is not None else retriever if isinstance(retriever, str) else None
    )
    told: dict[str, Any] = {"retriever": spec}
    if "timeout" in run.config:  # runs made before it was kept: nothing to compare
        told["timeout"] = timeout
    check_resumed(run, told)
    expected = run.config.get("corpus_hash") or None
    if content_hash != expected:
        raise refusal(run, "corpus=", _hashed(expected), _hashed(content_hash))
    return setup


def corpus_hash(documents: Mapping[str, Any]) -> str | None:
    """The content hash of a corpus given as ``{doc id: Document}``, as ``Corpus`` hashes it
    (``None`` for a mapping of anything else: there is nothing to compare it by)."""
    from ragmeter.corpus import Corpus
    from ragmeter.documents import Document

    if not all(isinstance(doc, Document) for doc in documents.values()):
        return None
    return Corpus.from_documents(documents.values()).content_hash


def _hashed(content_hash: str | None) -> str | None:
    return f"(content hash {content_hash[:12]})" if content_hash else None


def _place(value: str) -> str:
    """A path as the run resolves it; a URL-like root stays as written."""
    return value if "://" in value else str(Path(value).resolve())


def _as_list(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str | os.PathLike):
        return [os.fspath(value)]
    return [str(v) for v in value] if isinstance(value, Sequence) else [str(value)]


def _chunker_text(config: Any) -> str:
    return f"{config.kind} (size {config.size}, overlap {config.overlap})"
