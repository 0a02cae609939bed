"""Where a judge's settings come from: flags, then the environment, then ``ragmeter.toml``.

Only the CLI calls :func:`resolve_judge_config` (passing ``os.environ``); the
library takes every setting as an argument. Nothing picks a model for you: with
no model or no base URL configured this raises :class:`~ragmeter.errors.ConfigError`
saying how to set one.

``ragmeter.toml``::

    [judge]
    base_url = "http://127.0.0.1:8011/v1"
    model = "judge"
    timeout = 60
    concurrency = 4
    max_tokens = 512
    max_response_bytes = 33554432     # largest reply read, decompressed (default 32 MiB)
    api_key_env = "MY_JUDGE_KEY"      # the *name* of a variable; keys never live in files

    [judge.prices]                    # dollars per million tokens
    "gpt-4o-mini" = { prompt = 0.15, completion = 0.60 }
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter._http import DEFAULT_MAX_RESPONSE_BYTES
from ragmeter._redact import remember_secret, remember_url_secrets
from ragmeter.errors import ConfigError, located
from ragmeter.executors.base import Executor
from ragmeter.judge.client import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    JudgeCache,
    JudgeClient,
    Price,
)

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "JudgeConfig",
    "JudgeSettings",
    "resolve_generator_client",
    "resolve_judge_config",
]

ENV_BASE_URL = "RAGMETER_JUDGE_BASE_URL"
ENV_MODEL = "RAGMETER_JUDGE_MODEL"
ENV_API_KEY = "RAGMETER_JUDGE_API_KEY"
ENV_API_KEY_FALLBACK = "OPENAI_API_KEY"
_KEYS = {
    "base_url",
    "model",
    "timeout",
    "concurrency",
    "max_tokens",
    "max_retries",
    "max_response_bytes",
    "api_key_env",
}


@dataclass(frozen=True)
class JudgeConfig:
    """A resolved judge configuration. ``api_key`` never appears in ``repr`` or ``describe``."""

    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    concurrency: int = DEFAULT_CONCURRENCY
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_retries: int = DEFAULT_MAX_RETRIES
    prices: Mapping[str, Price] = field(default_factory=dict)
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    def client(
        self,
        *,
        cache: JudgeCache | None = None,
        transport: Any = None,
        executor: str | Executor = "local",
        ray_address: str | None = None,
        temperature: float = DEFAULT_TEMPERATURE,
        seed: int | None = None,
        repeats: int = 1,
    ) -> JudgeClient:
        """Build the client this configuration describes (``executor``: see ``JudgeClient``;
        ``temperature``, ``seed`` and ``repeats`` are per command, issue 17.4)."""
        return JudgeClient(
            model=self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            timeout=self.timeout,
            concurrency=self.concurrency,
            max_tokens=self.max_tokens,
            max_retries=self.max_retries,
            max_response_bytes=self.max_response_bytes,
            cache=cache,
            prices=self.prices,
            transport=transport,
            executor=executor,
            ray_address=ray_address,
            temperature=temperature,
            seed=seed,
            repeats=repeats,
        )


@dataclass(frozen=True)
class JudgeSettings:
    """The ``[judge]`` table of ``ragmeter.toml``, checked for unknown keys.

    :func:`ragmeter.config.load_config` reads the file (the one loader) and builds
    this; :func:`resolve_judge_config` combines it with flags and the environment.

    >>> JudgeSettings.from_table({"model": "judge"}, Path("ragmeter.toml")).get("model")
    'judge'
    """

    table: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @classmethod
    def from_table(cls, table: Any, path: Path) -> JudgeSettings:
        """Check a parsed ``[judge]`` table; a problem is a ``ConfigError`` naming the file."""
        if not isinstance(table, Mapping):
            raise ConfigError(located("config", path, "[judge]", "expected a table"))
        if "api_key" in table:
            message = 'keys never live in files: set api_key_env = "VARIABLE_NAME"'
            raise ConfigError(located("config", path, "[judge]", message))
        unknown = sorted(set(table) - _KEYS - {"prices"})
        if unknown:
            known = ", ".join(sorted(_KEYS | {"prices"}))
            message = f"unknown key {unknown[0]!r} (known: {known})"
            raise ConfigError(located("config", path, "[judge]", message))
        return cls(table=dict(table), path=path)

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` in the table, or ``default``."""
        return self.table.get(key, default)


def _prices(path: object, raw: Any) -> dict[str, Price]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(located("config", path, "[judge.prices]", "expected a table"))
    out: dict[str, Price] = {}
    for model, entry in raw.items():
        try:
            price = Price(float(entry["prompt"]), float(entry["completion"]))
            if not all(math.isfinite(p) and p >= 0 for p in (price.prompt, price.completion)):
                raise ValueError(price)
            out[str(model)] = price
        except (KeyError, TypeError, ValueError):
            message = f"{model}: expected {{ prompt = <$/1M>, completion = <$/1M> }}"
            raise ConfigError(located("config", path, "[judge.prices]", message)) from None
    return out


def resolve_judge_config(
    *,
    env: Mapping[str, str],
    settings: JudgeSettings | None = None,
    model: str | None = None,
    base_url: str | None = None,
    timeout: float | None = None,
    concurrency: int | None = None,
    max_tokens: int | None = None,
    max_response_bytes: int | None = None,
) -> JudgeConfig:
    """Flags win over the environment, which wins over ``ragmeter.toml``'s ``[judge]``.

    ``max_response_bytes`` (flag, or the ``[judge]`` key) must be a whole number >= 1: the
    largest reply read, after decompression; larger ones fail their question.

    ``settings`` is ``load_config().judge`` (the CLI passes it); None means no file.

    >>> resolve_judge_config(env={"RAGMETER_JUDGE_MODEL": "judge",
    ...                           "RAGMETER_JUDGE_BASE_URL": "http://127.0.0.1:8011/v1"}).model
    'judge'
    """
    section = settings or JudgeSettings()
    path: object = section.path or "ragmeter.toml"
    chosen_model = model or env.get(ENV_MODEL) or section.get("model")
    chosen_url = base_url or env.get(ENV_BASE_URL) or section.get("base_url")
    if not chosen_model:
        raise ConfigError(
            "no judge model configured (none is ever chosen for you): pass --model, "
            f"set {ENV_MODEL}, or add model = ... under [judge] in ragmeter.toml"
        )
    if not chosen_url:
        raise ConfigError(
            "no judge base URL configured: pass --base-url, "
            f"set {ENV_BASE_URL}, or add base_url = ... under [judge] in ragmeter.toml"
        )
    key_env = section.get("api_key_env")
    api_key = (
        (env.get(str(key_env)) if key_env else None)
        or env.get(ENV_API_KEY)
        or env.get(ENV_API_KEY_FALLBACK)
    )
    _remember(api_key, chosen_url)

    def number(name: str, flag: float | None, default: float) -> float:
        value = flag if flag is not None else section.get(name, default)
        # TOML has nan and inf; neither is a timeout or a concurrency (issue 19.10).
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value <= 0
        ):
            message = f"{name} must be a positive number, got {value!r}"
            raise ConfigError(located("config", path, "[judge]", message))
        return float(value)

    retries = section.get("max_retries", DEFAULT_MAX_RETRIES)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        message = f"max_retries must be a whole number >= 0, got {retries!r}"
        raise ConfigError(located("config", path, "[judge]", message))
    limit = (
        max_response_bytes
        if max_response_bytes is not None
        else section.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)
    )
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        if max_response_bytes is not None:  # a flag, or a library caller's argument
            raise ConfigError(f"--max-response-bytes must be a whole number >= 1, got {limit!r}")
        message = f"max_response_bytes must be a whole number of bytes >= 1, got {limit!r}"
        raise ConfigError(located("config", path, "[judge]", message))

    return JudgeConfig(
        model=str(chosen_model),
        base_url=str(chosen_url),
        api_key=api_key or None,
        timeout=number("timeout", timeout, DEFAULT_TIMEOUT),
        concurrency=int(number("concurrency", concurrency, DEFAULT_CONCURRENCY)),
        max_tokens=int(number("max_tokens", max_tokens, DEFAULT_MAX_TOKENS)),
        max_retries=retries,
        prices=_prices(path, section.get("prices")),
        max_response_bytes=limit,
    )


GEN_ENV_MODEL = "RAGMETER_GENERATOR_MODEL"
GEN_ENV_BASE_URL = "RAGMETER_GENERATOR_BASE_URL"
GEN_ENV_API_KEY = "RAGMETER_GENERATOR_API_KEY"


def _remember(api_key: str | None, base_url: str) -> None:
    """A key from the environment and a URL's password are masked by value from now on,
    in every message and stored text (issue 27.5): a server may echo them in an error."""
    if api_key:
        remember_secret(api_key)
    remember_url_secrets(base_url)


def resolve_generator_client(
    *,
    env: Mapping[str, str],
    model: str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> JudgeClient:
    """The client of ``--generator llm``: configured apart from the judge, never defaulted.

    >>> resolve_generator_client(env={}, model="small", base_url="http://127.0.0.1:8011/v1")
    JudgeClient(model='small', base_url='http://127.0.0.1:8011/v1')
    """
    chosen_model = model or env.get(GEN_ENV_MODEL)
    chosen_url = base_url or env.get(GEN_ENV_BASE_URL)
    if not chosen_model or not chosen_url:
        raise ConfigError(
            "--generator llm needs a model and a base URL: pass --generator-model and "
            f"--generator-base-url, or set {GEN_ENV_MODEL} and {GEN_ENV_BASE_URL}"
        )
    api_key = env.get(GEN_ENV_API_KEY) or env.get(ENV_API_KEY_FALLBACK)
    _remember(api_key, chosen_url)
    return JudgeClient(
        model=chosen_model,
        base_url=chosen_url,
        api_key=api_key or None,
        timeout=timeout,
        max_tokens=max_tokens,
    )
