"""Which library versions shaped a run: recorded in its config, compared by ``diff``.

A run's numbers depend on more than its gold set and retriever: PyStemmer 2.2 and
3.1 stem differently, so the same BM25 pipeline scores differently. Each run keeps
``config["versions"]``: ragmeter and numpy always, plus every library of
:data:`SHAPING_LIBRARIES` that was imported to build or call the retriever, plus
the distribution the retriever object itself comes from (a LangChain retriever
records ``langchain-core``).

>>> versions = run_versions()
>>> sorted(versions)[:2] == ["numpy", "ragmeter"] or "numpy" in versions
True
>>> version_differences({"bm25s": "0.2.1", "numpy": "2.1.0"}, {"bm25s": "0.2.3", "numpy": "2.1.0"})
['bm25s 0.2.1 vs 0.2.3']
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "ALWAYS",
    "GIT_TIMEOUT_S",
    "SHAPING_LIBRARIES",
    "git_commit",
    "run_versions",
    "version_differences",
    "versions_line",
]

#: Seconds ``git`` may take to say which commit a run was made at.
GIT_TIMEOUT_S = 2.0
#: Recorded for every run.
ALWAYS = ("ragmeter", "numpy")

#: distribution -> the module whose presence in ``sys.modules`` means it took part.
SHAPING_LIBRARIES: Mapping[str, str] = {
    "bm25s": "bm25s",
    "PyStemmer": "Stemmer",
    "sentence-transformers": "sentence_transformers",
    "torch": "torch",
    "transformers": "transformers",
    "usearch": "usearch",
    "onnxruntime": "onnxruntime",
    "tokenizers": "tokenizers",
    "rank-bm25": "rank_bm25",
    "langchain-core": "langchain_core",
    "langchain-community": "langchain_community",
    "llama-index-core": "llama_index.core",
    "haystack-ai": "haystack",
}
# The built-in pipelines' own lists (their cache keys) must stay covered: a test checks
# BM25_LIBRARIES, DENSE_LIBRARIES and ONNX_LIBRARIES are keys of SHAPING_LIBRARIES.


def _framework(retriever: Any) -> list[str]:
    """The distribution(s) that provide the retriever object's class, if any."""
    if retriever is None or isinstance(retriever, str):
        return []
    module = getattr(type(retriever), "__module__", "") or ""
    root = module.split(".", 1)[0]
    if not root or root in ("builtins", "ragmeter", "__main__"):
        return []
    import importlib.metadata  # only when a run is made: show prints versions (29.1)

    return list(importlib.metadata.packages_distributions().get(root, []))


def run_versions(retriever: Any = None) -> dict[str, str]:
    """The versions of the installed libraries that shaped a run (see the module doc)."""
    from ragmeter.pipelines._cache import library_versions

    names = list(ALWAYS)
    names += [dist for dist, module in SHAPING_LIBRARIES.items() if module in sys.modules]
    names += _framework(retriever)
    found = library_versions(*dict.fromkeys(names))
    return {name: version for name, version in found.items() if version is not None}


def version_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """``"name A vs B"`` for each library both runs recorded at different versions.

    A library only one run recorded is not a difference: the other run did not use it.
    """
    return [f"{name} {a[name]} vs {b[name]}" for name in a if name in b and a[name] != b[name]]


def versions_line(config: Mapping[str, Any]) -> str | None:
    """The one line ``show`` and ``diff`` print, or ``None`` for a run that recorded none.

    >>> versions_line({"versions": {"ragmeter": "0.1.0", "bm25s": "0.2.5"}})
    'versions: ragmeter 0.1.0, bm25s 0.2.5'
    """
    versions = config.get("versions")
    if not isinstance(versions, Mapping) or not versions:
        return None
    return "versions: " + ", ".join(f"{name} {version}" for name, version in versions.items())


def git_commit(directory: Path | None = None) -> str | None:
    """The git commit of ``directory`` (default: the working directory), if it is a repo.

    A ``+dirty`` suffix marks uncommitted changes, so a run is never attributed to a
    commit it does not match.
    """
    cwd = directory or Path.cwd()

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S
        )
        done.check_returncode()
        return done.stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        status = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if status else head or None
