"""Validation of the pipeline-file sections other than ``chunker`` and ``retriever``.

Each ``parse_*`` takes the raw section (or None) and returns it with defaults filled in;
an unknown key or a bad value is a ConfigError that names the section and what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter._redact import remember_secret, remember_url_secrets
from ragmeter.errors import ConfigError
from ragmeter.judge.chat import DEFAULT_LLM_TIMEOUT, LLMSettings

__all__ = [
    "FUSION_DEFAULTS",
    "check_keys",
    "llm_settings",
    "parse_dense",
    "parse_fusion",
    "parse_rerank",
    "parse_rewrite",
]

DENSE_KEYS = ("model", "ann_threshold")
FUSION_KEYS = ("method", "k", "depth", "weights", "normalization")
RERANK_KEYS = ("top_n", "cross_encoder", "llm")
REWRITE_KEYS = ("method", "fb_docs", "fb_terms", "original_weight", "llm")
LLM_KEYS = ("base_url", "model", "api_key_env", "timeout")

#: The environment variable an LLM section reads its key from when it names none.
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"

FUSION_DEFAULTS: Mapping[str, Any] = {
    "method": "rrf",
    "k": 60,
    "depth": 100,
    "weights": {"bm25": 0.5, "dense": 0.5},
    "normalization": "minmax",
}


def check_keys(data: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    """Raise a ConfigError naming the unknown keys of ``data`` and the allowed ones.

    >>> check_keys({"a": 1}, ["a", "b"], "pipeline")
    >>> check_keys({"c": 1}, ["a", "b"], "pipeline: fusion")
    Traceback (most recent call last):
    ...
    ragmeter.errors.ConfigError: pipeline: fusion: unknown key 'c'; allowed: a, b
    """
    unknown = [k for k in data if k not in allowed]
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise ConfigError(
            f"{where}: unknown key{plural} {', '.join(repr(str(k)) for k in unknown)}; "
            f"allowed: {', '.join(allowed)}"
        )


def _section(raw: Any, name: str, source: str, allowed: Sequence[str]) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: {name} must be a mapping with keys {', '.join(allowed)}")
    check_keys(raw, allowed, f"{source}: {name}")
    return dict(raw)


def _int(value: Any, where: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"{where} must be an integer >= {least}, got {value!r}")
    return value


def parse_dense(raw: Any, source: str) -> dict[str, Any]:
    """The ``dense`` section: ``model`` (packaged name or local folder), ``ann_threshold``.

    >>> parse_dense(None, "pipeline")["model"]
    'all-MiniLM-L6-v2'
    """
    from ragmeter.pipelines.dense import DEFAULT_ANN_THRESHOLD, DEFAULT_MODEL

    data = _section(raw, "dense", source, DENSE_KEYS)
    model = data.get("model", DEFAULT_MODEL)
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{source}: dense.model must be a model name or folder")
    threshold = _int(
        data.get("ann_threshold", DEFAULT_ANN_THRESHOLD), f"{source}: dense.ann_threshold", 1
    )
    return {"model": model, "ann_threshold": threshold}


def parse_fusion(raw: Any, source: str) -> dict[str, Any]:
    """The ``fusion`` section of a hybrid pipeline.

    >>> parse_fusion({"method": "weighted", "weights": {"dense": 0.7}}, "p")["weights"]
    {'bm25': 0.5, 'dense': 0.7}
    """
    data = _section(raw, "fusion", source, FUSION_KEYS)
    out = {**FUSION_DEFAULTS, **data}
    if out["method"] not in ("rrf", "weighted"):
        raise ConfigError(f"{source}: fusion.method must be rrf or weighted, got {out['method']!r}")
    out["k"] = _int(out["k"], f"{source}: fusion.k", 0)
    out["depth"] = _int(out["depth"], f"{source}: fusion.depth", 1)
    weights = out["weights"]
    if not isinstance(weights, Mapping):
        raise ConfigError(f"{source}: fusion.weights must be a mapping {{bm25: W, dense: W}}")
    check_keys(weights, ("bm25", "dense"), f"{source}: fusion.weights")
    merged = {**FUSION_DEFAULTS["weights"], **weights}
    for name, w in merged.items():
        if isinstance(w, bool) or not isinstance(w, int | float) or w < 0:
            raise ConfigError(f"{source}: fusion.weights.{name} must be a number >= 0, got {w!r}")
    out["weights"] = {k: float(v) for k, v in merged.items()}
    if out["normalization"] not in ("minmax", "zscore"):
        raise ConfigError(
            f"{source}: fusion.normalization must be minmax or zscore, got {out['normalization']!r}"
        )
    return out


def _llm(raw: Any, where: str, env: Mapping[str, str]) -> dict[str, Any]:
    data = _section(raw, "llm", where, LLM_KEYS)
    for key in ("base_url", "model"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ConfigError(
                f"{where}: llm.{key} is required (there is no default model or server)"
            )
    key_env = data.get("api_key_env", DEFAULT_API_KEY_ENV)
    timeout = data.get("timeout", DEFAULT_LLM_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(f"{where}: llm.timeout must be a number of seconds > 0")
    api_key = env.get(str(key_env))
    if api_key:
        remember_secret(api_key)  # masked by value in every message (issue 27.5)
    remember_url_secrets(str(data["base_url"]))
    return {
        "base_url": data["base_url"],
        "model": data["model"],
        "api_key_env": key_env,
        "timeout": float(timeout),
        # Local servers take any key; the key itself never reaches a stored config.
        "api_key": api_key or "not-needed",
    }


def llm_settings(section: Mapping[str, Any]) -> LLMSettings:
    """Client settings from a parsed ``llm`` section."""
    return LLMSettings(
        base_url=section["base_url"],
        model=section["model"],
        api_key=section["api_key"],
        timeout=section["timeout"],
    )


def parse_rerank(raw: Any, source: str, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The ``rerank`` section: ``top_n`` plus ``cross_encoder: FOLDER`` or ``llm: {...}``."""
    from ragmeter.pipelines.rerank import DEFAULT_TOP_N

    if raw is None or raw is False:
        return None
    data = _section(raw, "rerank", source, RERANK_KEYS)
    top_n = _int(data.get("top_n", DEFAULT_TOP_N), f"{source}: rerank.top_n", 1)
    if data.get("cross_encoder"):
        if data.get("llm") is not None:
            raise ConfigError(f"{source}: rerank: give cross_encoder or llm, not both")
        return {"top_n": top_n, "cross_encoder": str(data["cross_encoder"]), "llm": None}
    if data.get("llm") is None:
        raise ConfigError(
            f"{source}: rerank needs cross_encoder: FOLDER (a local cross-encoder model; no "
            "package ships one) or llm: {base_url, model, api_key_env}"
        )
    return {
        "top_n": top_n,
        "cross_encoder": None,
        "llm": _llm(data["llm"], f"{source}: rerank", env),
    }


def parse_rewrite(raw: Any, source: str, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The ``rewrite`` section: ``method: rm3`` (offline) or ``method: llm`` with ``llm``."""
    if raw is None or raw is False:
        return None
    data = _section(raw, "rewrite", source, REWRITE_KEYS)
    method = data.get("method", "rm3")
    if method == "rm3":
        if data.get("llm") is not None:
            raise ConfigError(f"{source}: rewrite: llm settings need method: llm")
        weight = data.get("original_weight", 0.5)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
            raise ConfigError(f"{source}: rewrite.original_weight must be between 0 and 1")
        return {
            "method": "rm3",
            "fb_docs": _int(data.get("fb_docs", 10), f"{source}: rewrite.fb_docs", 1),
            "fb_terms": _int(data.get("fb_terms", 10), f"{source}: rewrite.fb_terms", 1),
            "original_weight": float(weight),
        }
    if method == "llm":
        extra = [k for k in ("fb_docs", "fb_terms", "original_weight") if k in data]
        if extra:
            raise ConfigError(f"{source}: rewrite: {', '.join(extra)} apply to method rm3 only")
        return {"method": "llm", "llm": _llm(data.get("llm"), f"{source}: rewrite", env)}
    raise ConfigError(f"{source}: rewrite.method must be rm3 or llm, got {method!r}")
