"""Turn a ``--retriever`` spec (or a Python object) into a :class:`Retriever`.

Forms, tried in this order:

- ``http://…`` / ``https://…`` → :class:`HttpRetriever`
- ``run:PATH`` → :class:`RunFileRetriever`
- ``bm25``, ``dense``, ``hybrid`` or ``PATH.yaml`` → a built-in pipeline from ``builtins``
- ``module:function`` or ``path/to/file.py:function`` → :class:`CallableRetriever`
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ragmeter._http import DEFAULT_MAX_RESPONSE_BYTES
from ragmeter.errors import ConfigError
from ragmeter.retrievers.base import DEFAULT_TIMEOUT, Retriever
from ragmeter.retrievers.callable import CallableRetriever, ObjectRetriever
from ragmeter.retrievers.frameworks import framework_retriever
from ragmeter.retrievers.http import HttpRetriever
from ragmeter.retrievers.ids import DocIdentity
from ragmeter.retrievers.presets import HttpShape
from ragmeter.retrievers.runfile import RunFileRetriever

__all__ = ["BUILTIN_NAMES", "PIPELINE_KEY", "as_retriever", "doc_identity", "resolve_retriever"]

#: Spec names that build a reference pipeline over ``--corpus``.
BUILTIN_NAMES = ("bm25", "dense", "hybrid")
#: Key in ``builtins`` of the factory that builds a pipeline from a YAML file.
PIPELINE_KEY = "pipeline"

_FORMS = (
    "bm25, dense, hybrid, path/to/pipeline.yaml, module:function, "
    "path/to/file.py:function, http(s)://host/path or run:path/to/run.trec"
)

BuiltinFactory = Callable[..., Any]


def resolve_retriever(
    spec: str,
    *,
    corpus: Any = None,
    chunker: Any = None,
    cache_dir: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    headers: Mapping[str, str] | None = None,
    builtins: Mapping[str, BuiltinFactory] | None = None,
    max_response_bytes: int | None = None,
    doc_field: str | None = None,
    doc_root: str | Path | Sequence[str | Path] | None = None,
    http_method: str | None = None,
    http_body: str | None = None,
    hits_path: str | None = None,
    http_preset: str | None = None,
) -> Retriever:
    """Build the retriever a ``--retriever`` spec names.

    ``builtins`` maps ``bm25``/``dense``/``hybrid`` (and :data:`PIPELINE_KEY`
    for ``*.yaml`` specs, which also receive ``path=``) to factories called as
    ``factory(corpus=..., chunker=..., cache_dir=...)``; what they return only
    needs a ``retrieve(question, k)`` method. ``headers`` go to HTTP retrievers
    and are never stored. ``doc_field`` (``metadata.source``…) says where an adapter's
    hits keep their document id and ``doc_root`` (one folder or several) which folders
    absolute paths are relative to (see :class:`~ragmeter.retrievers.ids.DocIdentity`).
    ``http_method``, ``http_body``, ``hits_path`` and ``http_preset`` shape the requests
    of an HTTP retriever (see :class:`~ragmeter.retrievers.presets.HttpShape`).
    Bad specs raise :class:`~ragmeter.errors.ConfigError`.

    >>> r = resolve_retriever("http://127.0.0.1:8000/search", timeout=5)
    >>> type(r).__name__, r.spec
    ('HttpRetriever', 'http://127.0.0.1:8000/search')
    >>> resolve_retriever("bm25", builtins={"bm25": lambda **options: None})
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: retriever bm25 needs a corpus: pass --corpus
    """
    spec = spec.strip()
    if not spec:
        raise ConfigError(f"empty retriever spec; use one of: {_FORMS}")
    lowered = spec.lower()
    identity = doc_identity(doc_field, doc_root)
    http = {"method": http_method, "body": http_body, "hits_path": hits_path}
    if lowered.startswith(("http://", "https://")):
        shape = HttpShape.of(**http, preset=http_preset)
        return HttpRetriever(
            spec,
            timeout=timeout,
            headers=headers,
            identity=identity,
            shape=shape,
            max_response_bytes=max_response_bytes or DEFAULT_MAX_RESPONSE_BYTES,
        )
    if http_preset or any(http.values()):
        raise ConfigError(
            "--http-method, --http-body, --hits-path and --http-preset need an http(s):// retriever"
        )
    if lowered.startswith("run:"):
        path = spec[len("run:") :]
        if not path:
            raise ConfigError("run: needs a path, e.g. run:runs/bm25.trec")
        return RunFileRetriever(path, spec=spec, identity=identity)
    if spec in BUILTIN_NAMES or lowered.endswith((".yaml", ".yml")):
        return _builtin(spec, corpus, chunker, cache_dir, timeout, builtins)
    if ":" in spec:
        return _callable(spec, timeout, identity)
    raise ConfigError(f"unknown retriever {spec!r}; use one of: {_FORMS}")


def as_retriever(obj: object, *, spec: str | None = None, **options: Any) -> Retriever:
    """Accept what ``evaluate(retriever=...)`` may be given and return a :class:`Retriever`.

    A spec string goes through :func:`resolve_retriever` (``options`` are its
    keywords); an object that already is a retriever is returned as is; a
    LangChain, LlamaIndex or Haystack object (see ``frameworks``), an object with
    ``retrieve(question, k)`` or a plain function is wrapped.

    >>> r = as_retriever(lambda question, k: ["a.md"])
    >>> type(r).__name__, r.is_async
    ('CallableRetriever', False)
    """
    if isinstance(obj, str):
        return resolve_retriever(obj, **options)
    if isinstance(obj, Retriever):
        return obj
    timeout = options.get("timeout")
    identity = doc_identity(options.get("doc_field"), options.get("doc_root"))
    framework = framework_retriever(obj, spec=spec, identity=identity, timeout=timeout)
    if framework is not None:
        return framework  # type: ignore[no-any-return]
    if callable(getattr(obj, "retrieve", None)):
        return ObjectRetriever(obj, spec=spec, timeout=timeout, identity=identity)
    if callable(obj):
        _check_signature(obj, spec or str(getattr(obj, "__qualname__", repr(obj))))
        return CallableRetriever(obj, spec=spec, timeout=timeout, identity=identity)
    raise ConfigError(
        f"cannot use {type(obj).__name__} as a retriever: pass a function (question, k) -> hits, "
        f"an object with retrieve(question, k), or a spec string ({_FORMS})"
    )


def _builtin(
    spec: str,
    corpus: Any,
    chunker: Any,
    cache_dir: str | Path | None,
    timeout: float,
    builtins: Mapping[str, BuiltinFactory] | None,
) -> Retriever:
    is_file = spec not in BUILTIN_NAMES
    key = PIPELINE_KEY if is_file else spec
    factory = (builtins or {}).get(key)
    if factory is None:
        available = sorted(name for name in (builtins or {}) if name != PIPELINE_KEY)
        what = "pipeline files are" if is_file else f"the {spec} retriever is"
        hint = f"available built-ins: {', '.join(available)}" if available else "none installed"
        raise ConfigError(f"{what} not available here ({hint}); use one of: {_FORMS}")
    if is_file and not Path(spec).is_file():
        raise ConfigError(f"pipeline file {spec} not found")
    if corpus is None:
        raise ConfigError(f"retriever {spec} needs a corpus: pass --corpus")
    options: dict[str, Any] = {"corpus": corpus, "chunker": chunker, "cache_dir": cache_dir}
    if is_file:
        options["path"] = Path(spec)
    built = factory(**options)
    if isinstance(built, Retriever):
        return built
    return ObjectRetriever(built, spec=spec, timeout=timeout)


def doc_identity(
    doc_field: str | None, doc_root: str | Path | Sequence[str | Path] | None
) -> DocIdentity:
    """The :class:`DocIdentity` of ``--doc-field`` and ``--doc-root``: each folder made
    absolute, and a relative one also kept as given (a prefix of relative ids).

    >>> doc_identity("metadata.source", "/srv/docs")
    DocIdentity(field='metadata.source', roots=('/srv/docs',))
    >>> doc_identity(None, "./docs/").roots[1:]
    ('docs',)
    """
    if doc_root is None:
        roots: list[str | Path] = []
    elif isinstance(doc_root, str | Path):
        roots = [doc_root]
    else:
        roots = list(doc_root)
    resolved: list[str] = []
    for root in roots:
        if not str(root):
            continue
        resolved.append(str(Path(root).expanduser().resolve()))
        if not Path(root).expanduser().is_absolute():
            # Also a prefix of relative ids: DirectoryLoader("docs") names docs/guide/a.md.
            given = Path(root).as_posix().removeprefix("./").rstrip("/")
            if given and given != ".":
                resolved.append(given)
    if doc_field is not None and not doc_field.strip(". "):
        raise ConfigError("--doc-field must name a field, e.g. metadata.source")
    return DocIdentity(field=doc_field or None, roots=tuple(dict.fromkeys(resolved)))


def _callable(spec: str, timeout: float, identity: DocIdentity) -> Retriever:
    module_part, _, attr_path = spec.rpartition(":")
    if not module_part or not attr_path:
        raise ConfigError(
            f"retriever {spec!r} must look like module:function; use one of: {_FORMS}"
        )
    module = _import(module_part)
    target: Any = module
    walked = module_part
    for name in attr_path.split("."):
        if not hasattr(target, name):
            raise ConfigError(f"{walked} has no attribute {name!r}")
        target = getattr(target, name)
        walked = f"{walked}.{name}"
    label = f"{module_part}.{attr_path}"
    framework = framework_retriever(target, spec=spec, identity=identity, timeout=timeout)
    if framework is not None:
        return framework  # type: ignore[no-any-return]
    if not inspect.isclass(target) and callable(getattr(target, "retrieve", None)):
        return ObjectRetriever(target, spec=spec, timeout=timeout, identity=identity)
    if not callable(target):
        raise ConfigError(
            f"{label} is not callable and has none of retrieve, invoke, search, "
            "get_relevant_documents (nor is it a LangChain, LlamaIndex or Haystack retriever)"
        )
    _check_signature(target, label)
    retriever = CallableRetriever(target, spec=spec, timeout=timeout, identity=identity)
    retriever.config = {
        "type": "callable",
        "module": module_part,
        "function": attr_path,
        "async": retriever.is_async,
    }
    return retriever


def _import(module_part: str) -> ModuleType:
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        return _import_file(Path(module_part))
    # Like uvicorn: modules next to where the user runs ragmeter are importable.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_part)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_part == missing or module_part.startswith(missing + "."):
            raise ConfigError(
                f"module {module_part!r} not found (looked in {cwd} and on sys.path)"
            ) from None
        raise ConfigError(f"importing {module_part} failed: {exc}") from exc
    except Exception as exc:
        raise ConfigError(f"importing {module_part} failed: {type(exc).__name__}: {exc}") from exc


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise ConfigError(f"file {path} not found")
    resolved = path.resolve()
    # A stable, unique name per file: two "retriever.py" in different folders must not clash.
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    name = f"_ragmeter_user_{resolved.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    # Registered before running so dataclasses and pickling inside it work.
    sys.modules[name] = module
    # Its own folder goes on sys.path so it can import its neighbours.
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _check_signature(fn: Any, label: str) -> None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # builtins and C functions: we find out on the first call
    try:
        signature.bind("question", 10)
    except TypeError:
        raise ConfigError(
            f"{label} must accept (question, k); its signature is {signature}"
        ) from None
