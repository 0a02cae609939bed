"""What every labels export shares: the random draw, and a file that is never overwritten.

People label the questions a ``judge *-labels export`` writes, and the corrected estimates
assume those are a uniform random sample of the judged questions (issue 17.2). The draw is
here once, so claims and relevance exports draw the same way; so is the rule that an
existing file (it may hold an afternoon of labels not imported yet) is kept unless asked.

>>> draw_sample(["a", "b", "c", "d"], None, seed=0)
['a', 'b', 'c', 'd']
>>> len(draw_sample(["a", "b", "c", "d"], 2, seed=0))
2
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from ragmeter.errors import InputError, located
from ragmeter.formats.output import output_error

__all__ = ["draw_sample", "refuse_existing", "write_labels_file"]

T = TypeVar("T")


def draw_sample(pool: Sequence[T], sample: int | None, *, seed: int) -> list[T]:
    """All of ``pool``, or ``sample`` of it drawn uniformly at random with
    ``random.Random(seed)``; either way in ``pool``'s order (the run's, not the draw's).

    >>> draw_sample(["a", "b", "c"], 5, seed=1)  # more than there are: all of them
    ['a', 'b', 'c']
    """
    if sample is None or sample >= len(pool):
        return list(pool)
    drawn = set(random.Random(seed).sample(range(len(pool)), sample))
    return [item for index, item in enumerate(pool) if index in drawn]


def refuse_existing(
    path: Path, *, overwrite: bool, kind: str, holds: str, error: type[InputError]
) -> None:
    """Raise ``error`` when ``path`` exists and ``overwrite`` is not set."""
    if path.exists() and not overwrite:
        message = (
            f"already exists (it may hold {holds} not imported yet): choose another --out, "
            "or pass --force to replace it"
        )
        raise error(located(kind, path, None, message))


def write_labels_file(path: Path, text: str, *, kind: str, error: type[InputError]) -> None:
    """Write an export, turning an OS failure into ``error`` naming the file."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise error(str(output_error(path, exc, kind=kind))) from None
