"""``EvalJob``: one evaluation, said once — from the command line, ``ragmeter.toml`` or a run.

Everything ``ragmeter eval`` is told (gold set, retriever spec, corpus, level, k, metrics,
executor, store…) in one immutable, serialisable value. The shells build it at their
boundary (``from_cli``, ``from_toml``; ``from_run`` rebuilds the job a stored run was made
by, to resume it) and ``ragmeter.evaluation.jobs.run_job`` runs it. A new option is one
field here (and, for the CLI, one option in ``cli/_options.py``).

>>> job = EvalJob(gold="gold.yaml", corpus="docs/", k=5)
>>> EvalJob.from_dict(job.to_dict()) == job
True
>>> job.to_dict()["executor"]
'local'
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from ragmeter._redact import is_redacted, redact
from ragmeter.corpus import Corpus, load_corpus
from ragmeter.errors import ConfigError, located
from ragmeter.evaluation.evaluate import DEFAULT_K
from ragmeter.evaluation.passages import check_min_overlap
from ragmeter.evaluation.resumed import (
    RESUMED_INPUTS,
    RESUMED_LABELS,
    RESUMED_REQUEST,
    RESUMED_SETTINGS,
    check_resumed,
    resumed_request,
)
from ragmeter.evaluation.scoring import Level
from ragmeter.executors.base import Executor, LocalExecutor
from ragmeter.executors.local import DEFAULT_CONCURRENCY
from ragmeter.executors.ray import executor_for
from ragmeter.formats.text import read_toml
from ragmeter.pipelines.chunkers import ChunkerConfig
from ragmeter.run import RunInfo

__all__ = ["EVAL_TABLE", "RESUME_OPTIONS", "EvalJob", "RetrieverOptions", "chunker_config"]

EVAL_TABLE = "eval"  # the [eval] table of ragmeter.toml

#: ``ragmeter eval``'s options a resume compares with the run (click's parameter name: the
#: job field it sets); the CLI passes those given as ``told`` (issue 24).
RESUME_OPTIONS = {
    **{
        name: name
        for name in (*RESUMED_SETTINGS, *RESUMED_INPUTS, *RESUMED_REQUEST, *RESUMED_LABELS)
    },
    "chunk_size": "chunker",
    "chunk_overlap": "chunker",
    "gold_path": "gold",
}


def chunker_config(kind: str, size: int | None, overlap: int | None) -> ChunkerConfig:
    """``--chunker``/``--chunk-size``/``--chunk-overlap`` as a config (unset: the default)."""
    return ChunkerConfig.from_dict({"kind": kind, "size": size or None, "overlap": overlap})


@dataclass(frozen=True)
class RetrieverOptions:
    """How an outside retriever is asked and how its hits name documents.

    ``headers`` are ``"Name: value"`` strings as given (``env:NAME`` values are read from
    the environment when the job runs); :meth:`to_dict` keeps only the ``env:`` ones, so a
    serialised job never holds a credential.
    """

    doc_field: str | None = None
    doc_roots: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    http_method: str | None = None
    http_body: str | None = None
    hits_path: str | None = None
    http_preset: str | None = None
    max_response_bytes: int | None = None

    def adapter_options(self, env: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The options the adapter is built with (``build_retriever(options=...)``)."""
        from ragmeter.retrievers.http import parse_headers
        from ragmeter.retrievers.presets import resolve_header_values

        http = {
            "http_method": self.http_method,
            "http_body": self.http_body,
            "hits_path": self.hits_path,
            "http_preset": self.http_preset,
        }
        options: dict[str, Any] = {key: value for key, value in http.items() if value}
        if self.doc_field:
            options["doc_field"] = self.doc_field
        if self.doc_roots:
            options["doc_root"] = list(self.doc_roots)
        if self.headers:
            environ = os.environ if env is None else env
            options["headers"] = resolve_header_values(parse_headers(self.headers), environ)
        return options

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["doc_roots"] = list(self.doc_roots)
        data["headers"] = [h for h in self.headers if h.partition(":")[2].strip()[:4] == "env:"]
        return data


@dataclass(frozen=True)
class EvalJob:
    """One evaluation: what to run, over what, scored how, run where, stored where.

    ``gold`` is a path (YAML, JSONL or a BEIR folder); ``store`` a store URL (``None``: the
    caller's store); ``executor`` an :class:`~ragmeter.executors.base.Executor` object;
    ``resume`` a run to finish (see :meth:`from_run`). ``generator`` is a spec
    (``module:function``, ``http(s)://…``, ``llm``).
    """

    gold: str | None = None
    retriever: str = "bm25"
    corpus: str | None = None
    follow_symlinks: bool = False
    k: int = DEFAULT_K
    level: Level | None = None
    min_overlap: float | None = None
    metrics: tuple[str, ...] = ()
    split: str = "test"
    name: str | None = None
    note: str = ""
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float | None = None
    chunker: ChunkerConfig | None = None
    options: RetrieverOptions = field(default_factory=RetrieverOptions)
    generator: str | None = None
    generator_model: str | None = None
    generator_base_url: str | None = None
    executor: Executor = field(default_factory=LocalExecutor)
    store: str | None = None
    resume: int | str | None = None

    def __post_init__(self) -> None:
        for name in ("gold", "corpus"):  # a Path given from Python is kept as its string
            value = getattr(self, name)
            if isinstance(value, os.PathLike):
                object.__setattr__(self, name, os.fspath(value))
        if self.k < 1:
            raise ConfigError(f"k must be at least 1, got {self.k}")
        if self.min_overlap is not None:
            check_min_overlap(self.min_overlap)
        if self.level is not None and self.level not in get_args(Level):
            raise ConfigError(f"unknown level {self.level!r}: choose doc, passage or chunk")

    # --- building --------------------------------------------------------------------

    @classmethod
    def from_cli(cls, params: Mapping[str, Any]) -> EvalJob:
        """The job of ``ragmeter eval``'s parsed options (click's parameter names).

        ``--executor``/``--ray-address`` become an executor object here. A resumed run
        keeps its own chunker, k, level, share and metrics (:meth:`of_run` refuses others).
        """
        resume = params.get("resume")
        options = params.get("retriever_options") or RetrieverOptions()
        if params.get("max_response_bytes") is not None:
            options = dataclasses.replace(options, max_response_bytes=params["max_response_bytes"])
        chunker = None
        if "chunker" in params:
            chunker = chunker_config(
                params["chunker"], params.get("chunk_size"), params.get("chunk_overlap")
            )
        return cls(
            gold=params.get("gold_path"),
            retriever=params.get("retriever") or "bm25",
            corpus=params.get("corpus"),
            follow_symlinks=bool(params.get("follow_symlinks")),
            k=params.get("k", DEFAULT_K),
            level=params.get("level"),
            min_overlap=params.get("min_overlap"),
            metrics=tuple(params.get("metrics") or ()),
            split=params.get("split", "test"),
            name=params.get("name"),
            note=params.get("note") or "",
            concurrency=params.get("concurrency", DEFAULT_CONCURRENCY),
            timeout=params.get("timeout"),
            chunker=chunker,
            options=options,
            generator=params.get("generator"),
            generator_model=params.get("generator_model"),
            generator_base_url=params.get("generator_base_url"),
            executor=executor_for(
                params.get("executor") or "local", ray_address=params.get("ray_address")
            ),
            store=params.get("store_url"),
            resume=resume,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "job") -> EvalJob:
        """The job of :meth:`to_dict`'s plain data (also the ``[eval]`` table's keys)."""
        known = {f.name for f in dataclasses.fields(cls)} - {"options"} | {"ray_address"}
        known |= {f.name for f in dataclasses.fields(RetrieverOptions)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"{source}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})"
            )
        values = dict(data)
        adapter = {f.name: values.pop(f.name) for f in dataclasses.fields(RetrieverOptions)
                   if f.name in values}  # fmt: skip
        for key in ("doc_roots", "headers"):
            if key in adapter:
                adapter[key] = tuple(_strings(adapter[key], f"{source}: {key}"))
        values["options"] = RetrieverOptions(**adapter)
        if "metrics" in values:
            values["metrics"] = tuple(_strings(values["metrics"], f"{source}: metrics"))
        chunker = values.get("chunker")
        if chunker is not None:
            if not isinstance(chunker, Mapping):
                raise ConfigError(f"{source}: chunker: expected a table of kind, size, overlap")
            values["chunker"] = ChunkerConfig.from_dict(chunker)
        executor = values.pop("executor", "local")
        if not isinstance(executor, str):
            raise ConfigError(f"{source}: executor: expected local or ray")
        values["executor"] = executor_for(executor, ray_address=values.pop("ray_address", None))
        _check_types(values, source)
        try:
            return cls(**values)
        except TypeError as error:  # a wrong type deep inside a field
            raise ConfigError(f"{source}: {error}") from None

    @classmethod
    def from_toml(cls, path: str | Path) -> EvalJob:
        """The ``[eval]`` table of a ``ragmeter.toml`` (keys as :meth:`to_dict`'s).

        Read with the one TOML reader ``ragmeter.config.load_config`` uses; a missing
        file or table, an unknown key or a wrong type is a ``ConfigError`` naming the file.
        """
        target = Path(path)
        data = read_toml(target, "config", ConfigError)
        if data is None:
            raise ConfigError(located("config", target, None, "no such file"))
        if EVAL_TABLE not in data:
            raise ConfigError(located("config", target, None, f"no [{EVAL_TABLE}] table"))
        return cls.from_table(data[EVAL_TABLE], target)

    @classmethod
    def from_table(cls, table: Any, path: Path) -> EvalJob:
        """Check a parsed ``[eval]`` table (``load_config`` and :meth:`from_toml`)."""
        if not isinstance(table, Mapping):
            raise ConfigError(located("config", path, f"[{EVAL_TABLE}]", "expected a table"))
        return cls.from_dict(table, source=f"config {path} [{EVAL_TABLE}]")

    @classmethod
    def from_run(
        cls,
        store: Any,
        ref: int | str,
        *,
        given: EvalJob | None = None,
        told: Collection[str] | None = None,
    ) -> EvalJob:
        """The job that made a stored run, set to resume it.

        From the run's config: gold, retriever spec, corpus (and ``follow_symlinks``),
        chunker, timeout, k, level, metrics, ``doc_field``/``doc_root``, the HTTP body
        limit and request shape, and a generator given by spec. From ``given`` (what the
        resume was told): concurrency, executor, a generator, headers, the retriever spec
        when the stored one had its secrets hidden (it must redact to the stored one), a
        corpus path holding the stored content, and ``follow_symlinks``,
        which may not ask to follow links a run never followed (issue 19.5).

        ``told`` names the fields of ``given`` the user set (the CLI's options given on the
        command line; ``None``: those that differ from the defaults). A scoring setting
        told with another value than the run's (k, level, ``min_overlap``, metrics,
        chunker) is refused (``check_resumed``, issue 24), never silently ignored; so is an
        input told otherwise (retriever spec, corpus, split, ``doc_field``/``doc_root``,
        timeout, the HTTP body limit and request shape; the gold set is compared by content
        in ``run_job``), and so is a name or note other than the run's. Headers are never
        stored: they come from ``given``.
        """
        return cls.of_run(store.get_run(ref), given=given, told=told)

    @classmethod
    def of_run(
        cls, run: RunInfo, *, given: EvalJob | None = None, told: Collection[str] | None = None
    ) -> EvalJob:
        """:meth:`from_run` of a run already read from its store."""
        config = dict(run.config)
        asked = given if given is not None else cls()
        said = _told_settings(given, told) if given is not None else {}
        check_resumed(run, said)
        stored_corpus = config.get("corpus") if isinstance(config.get("corpus"), str) else None
        retriever = config.get("retriever") or {}
        options = RetrieverOptions(
            doc_field=config.get("doc_field"),
            doc_roots=tuple(_as_list(config.get("doc_root"))),
            # Header values are never stored: they come from what the resume was given.
            headers=asked.options.headers,
            max_response_bytes=retriever.get("max_response_bytes")
            if isinstance(retriever, Mapping)
            else None,
            **resumed_request(run, said),
        )
        return cls(
            gold=config.get("gold"),
            retriever=_stored_retriever(run, asked.retriever if given is not None else None),
            # Another path to the same content is checked when the corpus is read (issue 24).
            corpus=said.get("corpus") or stored_corpus,
            follow_symlinks=_stored_follow(run, asked.follow_symlinks),
            k=run.k,
            level=run.level,
            min_overlap=config.get("min_overlap"),
            metrics=tuple(config.get("metrics") or ()),
            split=config.get("split") or "test",
            name=run.name,
            note=run.note or "",
            concurrency=asked.concurrency,
            timeout=config.get("timeout"),
            chunker=ChunkerConfig.from_dict(config.get("chunker") or {}),
            options=options,
            generator=asked.generator or _stored_generator(run),
            generator_model=asked.generator_model,
            generator_base_url=asked.generator_base_url,
            executor=asked.executor,
            store=asked.store,
            resume=run.id,
        )

    # --- using -----------------------------------------------------------------------

    def load_corpus(self) -> Corpus | None:
        """The corpus, read following links out of its folder when ``follow_symlinks``."""
        if self.corpus is None:
            return None
        return load_corpus(self.corpus, follow_symlinks=self.follow_symlinks)

    def corpus_source(self) -> str | Corpus | None:
        """What ``build_retriever`` gets: the path, or the corpus read following links."""
        return self.load_corpus() if self.follow_symlinks else self.corpus

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON and TOML): no objects, no credentials (a password in the store
        URL or the retriever spec is hidden as in a stored run)."""
        data: dict[str, Any] = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("options", "executor", "chunker")
        }
        data["metrics"] = list(self.metrics)
        data["chunker"] = self.chunker.to_dict() if self.chunker is not None else None
        data.update(self.options.to_dict())
        data["executor"] = self.executor.name
        data["ray_address"] = getattr(self.executor, "address", None)
        return redact({key: value for key, value in data.items() if value is not None})

    def build_generator(self, env: Mapping[str, str] | None = None) -> Any:
        """The generator object of ``generator`` (``llm``: a client configured apart from
        the judge, from ``env``), or ``None`` when the job answers nothing."""
        if self.generator is None:
            return None
        from ragmeter.evaluation.generation import resolve_generator

        llm = None
        if self.generator in ("llm", "openai"):
            from ragmeter.judge.config import resolve_generator_client

            llm = resolve_generator_client(
                env=os.environ if env is None else env,
                model=self.generator_model,
                base_url=self.generator_base_url,
            )
        return resolve_generator(self.generator, llm_client=llm)


def _told_settings(given: EvalJob, told: Collection[str] | None) -> dict[str, Any]:
    """The settings and inputs ``given`` was told: those named in ``told``, else those that
    differ from a default job's."""
    default = EvalJob()
    adapter = {f.name for f in dataclasses.fields(RetrieverOptions)}

    def value(job: EvalJob, name: str) -> Any:
        found = getattr(job.options if name in adapter else job, name)
        return list(found) if name in ("doc_roots", "headers") else found

    names = [
        name
        for name in (*RESUMED_SETTINGS, *RESUMED_INPUTS, *RESUMED_REQUEST, *RESUMED_LABELS)
        if (name in told if told is not None else value(given, name) != value(default, name))
    ]
    values = {name: value(given, name) for name in names}
    if values.get("chunker") is not None:
        values["chunker"] = values["chunker"].to_dict()
    return values


_TYPES: dict[str, tuple[type, ...]] = {
    "gold": (str,),
    "retriever": (str,),
    "corpus": (str,),
    "follow_symlinks": (bool,),
    "k": (int,),
    "level": (str,),
    "split": (str,),
    "name": (str,),
    "note": (str,),
    "concurrency": (int,),
    "timeout": (int, float),
    "min_overlap": (int, float),
    "generator": (str,),
    "generator_model": (str,),
    "generator_base_url": (str,),
    "store": (str,),
    "resume": (int, str),
}


def _check_types(values: Mapping[str, Any], source: str) -> None:
    for key, types in _TYPES.items():
        value = values.get(key)
        if value is None:
            continue
        wrong_bool = isinstance(value, bool) and bool not in types
        if wrong_bool or not isinstance(value, types):
            expected = " or ".join(t.__name__ for t in types)
            raise ConfigError(f"{source}: {key}: expected {expected}, got {value!r}")


def _strings(value: Any, where: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ConfigError(f"{where}: expected a list of strings")
    if not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings")
    return list(value)


def _as_list(value: Any) -> list[str]:
    if not value:
        return []
    return [str(value)] if isinstance(value, str | Path) else [str(v) for v in value]


def _stored_generator(run: RunInfo) -> str | None:
    spec = run.config.get("generator")
    if isinstance(spec, str) and is_redacted(spec):
        raise ConfigError(
            f"run {run.id}'s generator URL had a password, which is never stored: "
            "pass --generator again to resume it"
        )
    if isinstance(spec, str) and (":" in spec or spec.startswith("http")) and spec != "llm":
        return spec
    return None


def _stored_retriever(run: RunInfo, given: str | None) -> str:
    """The spec to resume with: the stored one, or ``given`` when secrets were hidden."""
    if not is_redacted(run.retriever):
        return run.retriever
    if given is not None and redact(given) == run.retriever:
        return given
    raise ConfigError(
        f"run {run.id}'s retriever spec {run.retriever!r} had secrets, which are never stored: "
        "pass the same --retriever again to resume it"
    )


def _stored_follow(run: RunInfo, asked: bool) -> bool:
    """Follow links as the run did; asking to follow them on a run that did not is refused."""
    stored = run.config.get("follow_symlinks")  # absent for runs stored before it was kept
    if asked and stored is False and isinstance(run.config.get("corpus"), str):
        raise ConfigError(
            f"run {run.id} read its corpus {run.config.get('corpus')} without "
            "--follow-symlinks: resuming with it would index files its first part never saw; "
            "drop --follow-symlinks"
        )
    return bool(stored) if stored is not None else asked
