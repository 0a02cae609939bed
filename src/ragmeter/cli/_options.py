"""The retriever and corpus options ``eval``, ``retrieve`` and ``sweep`` share, written once.

A new option of the job is one option here (and one field of ``EvalJob``). The adapter
options arrive in the command as one ``RetrieverOptions`` value (``retriever_options``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from ragmeter.cli._common import follow_symlinks_option
from ragmeter.executors.collector import loading

__all__ = [
    "CHUNKERS",
    "chunker_options",
    "corpus_options",
    "min_overlap_option",
    "retriever_option",
    "retriever_options",
]

CHUNKERS = ("markdown", "paragraph", "fixed", "sentence", "none")
_ADAPTER_KEYS = (
    "doc_field",
    "doc_roots",
    "headers",
    "http_method",
    "http_body",
    "hits_path",
    "http_preset",
)
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def retriever_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--retriever``: the spec, ``bm25`` unless told."""
    return click.option(
        "--retriever",
        default="bm25",
        show_default=True,
        help="bm25 | dense | hybrid | pipeline.yaml | module:function | http(s)://… | run:FILE",
    )(func)


def corpus_options(help: str, *, required: bool = False) -> Decorator:  # noqa: A002 - click's word
    """``--corpus`` (its help says what the command does with it) and ``--follow-symlinks``."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func = follow_symlinks_option(func)
        return click.option("--corpus", required=required, type=click.Path(), help=help)(func)

    return decorate


def chunker_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--chunker``, ``--chunk-size``, ``--chunk-overlap``: how built-in retrievers cut."""
    func = click.option(
        "--chunk-overlap", type=int, default=None, help="Overlap between chunks, in characters."
    )(func)
    func = click.option(
        "--chunk-size", type=int, default=None, help="Target chunk size, in characters."
    )(func)
    return click.option(
        "--chunker",
        type=click.Choice(CHUNKERS),
        default="markdown",
        show_default=True,
        help="How built-in retrievers split documents; 'none' keeps them whole.",
    )(func)


def min_overlap_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--min-overlap``: the coverage rule's share, for every command that scores passages."""
    return click.option(
        "--min-overlap",
        type=click.FloatRange(0, 1, min_open=True),
        default=None,
        help="Share of the shorter of chunk and quote they must overlap for the chunk to cover "
        "the quote [default: 0.5].",
    )(func)


def retriever_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """How an outside retriever is asked and how its hits name documents, handed to the
    command as one ``retriever_options: RetrieverOptions``."""
    from ragmeter.retrievers.presets import PRESETS

    @functools.wraps(func)
    def bundled(*args: Any, **kwargs: Any) -> Any:
        with loading():
            from ragmeter.evaluation.job import RetrieverOptions

        adapter = {key: kwargs.pop(key) for key in _ADAPTER_KEYS}
        kwargs["retriever_options"] = RetrieverOptions(**adapter)
        return func(*args, **kwargs)

    options: list[Decorator] = [
        click.option(
            "--doc-field",
            default=None,
            metavar="PATH",
            help="Where a hit's document id lives, e.g. metadata.source or meta.file_path "
            "[default: the framework's usual field].",
        ),
        click.option(
            "--doc-root",
            "doc_roots",
            multiple=True,
            type=click.Path(),
            help="Folder the retriever's ids are relative to, dropped from absolute paths and "
            "from relative ids starting with it, e.g. docs (repeatable; --corpus counts as one).",
        ),
        click.option(
            "--header",
            "headers",
            multiple=True,
            metavar="'NAME: VALUE'",
            help="HTTP header (repeatable); VALUE env:NAME reads it from the environment. "
            "Never stored or logged.",
        ),
        click.option(
            "--http-method",
            type=click.Choice(["GET", "POST"]),
            default=None,
            help="[default: POST]",
        ),
        click.option(
            "--http-body",
            default=None,
            metavar="TEMPLATE",
            help='Request template with {question} and {k}, e.g. \'{"query": "{question}", '
            '"top_k": {k}}\' (for GET: q={question}&size={k}).',
        ),
        click.option(
            "--hits-path",
            default=None,
            metavar="PATH",
            help="Where the hits are in the JSON answer.",
        ),
        click.option(
            "--http-preset",
            type=click.Choice(sorted(PRESETS)),
            default=None,
            help="Request and answer shape of a known search service (with an http(s) retriever).",
        ),
    ]
    wrapped: Callable[..., Any] = bundled
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped
