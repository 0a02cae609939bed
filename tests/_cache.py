"""A cache folder that outlives the test session (issue 29.5).

Only for the product's own content-keyed caches (BM25 indexes, embeddings): their keys hash
the corpus content, the chunker, the model and the library versions, so a change rebuilds
the entry and an unchanged corpus is not embedded again by every session.
"""

from __future__ import annotations

import os
from pathlib import Path


def persistent_cache(name: str) -> Path:
    """``$XDG_CACHE_HOME/ragmeter-tests/NAME`` (default ``~/.cache``), created if missing."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "ragmeter-tests" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
