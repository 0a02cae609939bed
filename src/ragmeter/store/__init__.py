"""The run store: the only part of ragmeter that knows SQL.

>>> from ragmeter.store import Store
>>> with Store.memory() as store:
...     store.list_runs()
[]
"""

from __future__ import annotations

from ragmeter.store._querylog import QueryLogWrite
from ragmeter.store.store import DEFAULT_STORE_URL, GoldLike, Store

__all__ = ["DEFAULT_STORE_URL", "GoldLike", "QueryLogWrite", "Store"]
