"""``ragmeter show``: one run's metrics, misses by tag, failed answers and health line."""

from __future__ import annotations

import click

from ragmeter.cli import _render
from ragmeter.cli._common import json_option, open_store, print_json, store_option
from ragmeter.executors.collector import loading


@click.command("show")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="List every question, not only the misses (with --json: every question, unpaged).",
)
@click.option(
    "--page",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --json: which page of questions to print.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="With --json: questions per page [default: 1000; a bigger run is printed a page "
    "at a time].",
)
@store_option
@json_option
def show(
    run_ref: str,
    show_all: bool,
    page: int,
    limit: int | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Show a run: metrics, per-question rows and the misses by tag and document.

    RUN is a run id, a name, or 'latest'. --json prints the run's JSON with its questions
    a page at a time (--page, --limit; the totals in "questions_page"); every question
    of a run up to --limit questions, all of them with --all.
    """
    with loading():  # the collector does not walk the modules as they load (issue 29.3)
        from ragmeter.config import load_health
        from ragmeter.read import read_run
        from ragmeter.read.pages import QUESTIONS_PER_PAGE, page_json
        from ragmeter.read.view import no_cyclic_gc

    if not as_json and (page != 1 or limit is not None):
        raise click.UsageError("--page and --limit page the questions of --json")
    # The view is dropped before the collector is back on: it never walks its objects (29.1).
    with no_cyclic_gc(), open_store(store_url, read_only=True) as store:
        # Decodes only the rankings it prints: the misses, or a page of questions (29.1);
        # a row is built when printed, its hits read from the open store.
        view = read_run(store, run_ref, thresholds=load_health(), rankings="shown")
        if view.judged_failure is not None:  # people's labels no longer fit (issue 17.2)
            raise view.judged_failure
        if not as_json:
            _render.print_view(view, show_all=show_all)
            del view
            return
        data = page_json(
            store,
            view,
            page=page,
            limit=None if show_all else limit or QUESTIONS_PER_PAGE,
            texts=True,
        )
        del view
    print_json(data)
    where = data["questions_page"]
    if where["shown"] < where["total"]:  # never a silent cut: say what is left and how
        click.echo(f"show --json: {_page_note(where)}; --all for every question", err=True)


def _page_note(where: dict[str, int]) -> str:
    """Which questions a page of ``show --json`` holds and how to get the next.

    >>> _page_note({"page": 1, "limit": 2, "pages": 3, "total": 5, "offset": 0, "shown": 2})
    'questions 1–2 of 5 (page 1 of 3); --page 2 for the next'
    >>> _page_note({"page": 4, "limit": 2, "pages": 3, "total": 5, "offset": 6, "shown": 0})
    'page 4 is past the last (3 pages of 2 of 5 questions)'
    """
    if not where["shown"]:
        return (
            f"page {where['page']} is past the last ({where['pages']} pages of "
            f"{where['limit']:,} of {where['total']:,} questions)"
        )
    first, last = where["offset"] + 1, where["offset"] + where["shown"]
    note = f"questions {first:,}–{last:,} of {where['total']:,} (page {where['page']} of {where['pages']})"
    return note + (
        f"; --page {where['page'] + 1} for the next" if where["page"] < where["pages"] else ""
    )
