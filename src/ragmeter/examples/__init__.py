"""The bundled example: uv's documentation, a gold set for it and a judge calibration set.

`ragmeter demo` evaluates against these files; they also make a ready-made playground:

>>> from ragmeter.examples import example_corpus_dir, example_gold_path
>>> example_corpus_dir().name, example_gold_path().name
('docs', 'gold.yaml')

The files ship as package data inside the installed package, so the paths below point into
site-packages (or into ``src/`` for an editable install). They are read-only: copy them before
editing.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "example_calibration_path",
    "example_corpus_dir",
    "example_dir",
    "example_gold_path",
]

# Package data lives next to this module; setuptools installs it as plain files (the package is
# not zip-safe data), so a filesystem path is always available and cheaper than
# importlib.resources.as_file() for a whole folder.
_HERE = Path(__file__).resolve().parent


def example_dir() -> Path:
    """The folder holding the bundled example (corpus, gold set, calibration set).

    >>> (example_dir() / "gold.yaml").is_file()
    True
    """
    return _HERE


def example_corpus_dir() -> Path:
    """The example knowledge base: uv's documentation as Markdown, doc id = path in this folder.

    Its parent folder holds ``SOURCE.md`` (provenance), ``SHA256SUMS`` and the licence files
    ``LICENSE-MIT`` and ``LICENSE-APACHE``; they describe the corpus and are kept out of it.

    >>> (example_corpus_dir() / "getting-started" / "installation.md").is_file()
    True
    """
    return _HERE / "uv_docs" / "docs"


def example_gold_path() -> Path:
    """The hand-written gold set for the example corpus (YAML, one item per question).

    >>> example_gold_path().name
    'gold.yaml'
    """
    return _HERE / "gold.yaml"


def example_calibration_path() -> Path:
    """Hand-labelled answers over the example corpus for calibrating a faithfulness judge.

    >>> example_calibration_path().name
    'calibration.yaml'
    """
    return _HERE / "calibration.yaml"
