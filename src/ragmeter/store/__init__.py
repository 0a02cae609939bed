"""The run store: the only part of ragmeter that knows SQL.

>>> from ragmeter.store import Store
>>> with Store.memory() as store:
...     store.list_runs()
[]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragmeter.store.store import DEFAULT_STORE_URL, GoldLike, Store

if TYPE_CHECKING:
    from ragmeter.store._querylog import QueryLogWrite

__all__ = ["DEFAULT_STORE_URL", "GoldLike", "QueryLogWrite", "Store"]


def __getattr__(name: str) -> Any:
    # The query log's module (and its redaction of rows, ``_scrub``) loads on first use:
    # an eval never writes the query log (issue 29.2).
    if name == "QueryLogWrite":
        from ragmeter.store._querylog import QueryLogWrite

        return QueryLogWrite
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
