"""langchain-community, imported without its one "being sunset" notice (issue 24).

LangChain's ``BM25Retriever`` and ``FAISS`` store exist only in langchain-community:
langchain-classic re-exports them from it (importing it, with the same warning), and
langchain-core and langchain-text-splitters have neither. langchain-community warns once, at
import, that it is being sunset (a ``DeprecationWarning``, an error under the suite's
``filterwarnings = error``). Only that warning, matched by its text, is ignored, and only
around the import: any other warning it raised would still fail the test.
"""

from __future__ import annotations

import warnings
from types import ModuleType

import pytest

SUNSET = r"`langchain-community` is being sunset"
"""The start of the one warning ignored."""

#: The same filter for a script run in a subprocess (the user's app file in CLI tests).
SUNSET_FILTER = (
    "import warnings\n"
    f"warnings.filterwarnings('ignore', message={SUNSET!r}, category=DeprecationWarning)\n"
)


def community(module: str) -> ModuleType:
    """``module`` of langchain-community (the test is skipped when it is not installed)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=SUNSET, category=DeprecationWarning)
        return pytest.importorskip(module, reason="pip install langchain-community")
