"""The read side: a stored run and everything people read about it, as one view (issue 25.1).

:func:`read_run` returns a :class:`RunView`; ``show``, the dashboard's run page and API,
the static report, ``export`` and a notebook render it. It sits above ``compare`` (a view
with a baseline holds the diff) and below the shells.
"""

from ragmeter.read.view import RunView, read_run

__all__ = ["RunView", "read_run"]
