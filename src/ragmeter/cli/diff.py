"""``ragmeter diff``: two stored runs compared, with honest statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click
from rich.table import Table

from ragmeter.cli._common import console, json_option, open_store, print_json, store_option
from ragmeter.cli._safe import safe
from ragmeter.compare.markdown import detectable_cell
from ragmeter.evaluation.versions import versions_line

if TYPE_CHECKING:
    from ragmeter.compare.comparison import TagDelta
    from ragmeter.compare.diff import Flip, RunDiff

#: Lines of reasons the gate prints before "… and N more": one screen.
GATE_SCREEN_REASONS = 20
#: Flipped questions listed per direction in the terminal.
TERMINAL_FLIPS = 15


def _p(value: float, exact: bool = True) -> str:
    text = "<0.001" if value < 0.001 else f"{value:.3f}"
    return text if exact else text + "*"


def _tag_rows(title: str, rows: Sequence[TagDelta]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("tag", "metric", "n", "A", "B", "Δ", "95% CI", "p", "p (Holm)", "detectable"):
        table.add_column(col, justify="left" if col in ("tag", "metric") else "right")
    for t in rows:
        delta = f"[red]{t.delta:+.3f}[/]" if t.flagged else f"{t.delta:+.3f}"
        table.add_row(
            safe(t.tag), t.metric, str(t.n), f"{t.mean_a:.3f}", f"{t.mean_b:.3f}", delta,
            f"[{t.ci_low:+.3f}, {t.ci_high:+.3f}]", _p(t.p_value), _p(t.p_holm),
            detectable_cell(t.detectable),
        )  # fmt: skip
    return table


def _flip_rows(title: str, flips: Sequence[Flip]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("id", "question", "tags", "first relevant A → B"):
        table.add_column(col)
    for f in flips[:TERMINAL_FLIPS]:
        ranks = f"{f.rank_a or '–'} → {f.rank_b or '–'}"
        if f.error_b:
            ranks += f" (error: {f.error_b[:40]})"
        table.add_row(safe(f.id), safe(f.question), safe(", ".join(f.tags)), safe(ranks))
    return table


def _print_blame(diff: RunDiff, kinds: Sequence[str]) -> None:
    """Blame per tag in A and B: did failures move between retrieval and generation?"""
    if not diff.blame_by_tag:
        return
    a, b = diff.blame_by_tag.get("a", {}), diff.blame_by_tag.get("b", {})
    kinds = [kind for kind in kinds if kind != "ok"]  # the failures; finer once claims judged
    table = Table(title="blame by tag (A → B)", title_justify="left")
    for col in ("tag", *kinds):
        table.add_column(col, justify="left" if col == "tag" else "right")
    for tag in sorted(set(a) | set(b)):
        cells = [f"{a.get(tag, {}).get(kind, 0)} → {b.get(tag, {}).get(kind, 0)}" for kind in kinds]
        table.add_row(safe(tag), *cells)
    console().print(table)


def _print_diff(diff: RunDiff) -> None:
    from ragmeter.compare.markdown import statistics_note

    out = console()
    out.print(
        f"[bold]diff[/]: A = {safe(diff.label('a'))} → B = {safe(diff.label('b'))} "
        f"({diff.n} questions)"
    )
    for warning in diff.warnings:
        out.print(f"[yellow]warning:[/] {safe(warning)}")
    for side, run in (("A", diff.a), ("B", diff.b)):
        versions = versions_line(run.config)
        if versions:
            out.print(f"{side} {safe(versions)}")
    c = diff.comparison
    table = Table()
    for col in ("metric", "A", "B", "Δ", f"{c.confidence:.0%} CI", "p", "detectable"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    from ragmeter.metrics import lower_is_better

    for m in diff.metrics:
        up, down = ("red", "green") if lower_is_better(m.metric) else ("green", "red")
        style = up if m.ci_low > 0 else (down if m.ci_high < 0 else "")
        delta = f"[{style}]{m.delta:+.3f}[/]" if style else f"{m.delta:+.3f}"
        table.add_row(
            m.metric, f"{m.mean_a:.3f}", f"{m.mean_b:.3f}", delta,
            f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}]", _p(m.p_value, m.exact), detectable_cell(m.detectable),
        )  # fmt: skip
    for r in diff.run_level:
        table.add_row(
            r.metric, f"{r.value_a:.1f}", f"{r.value_b:.1f}", f"{r.delta:+.1f}", "–", "–", "–"
        )
    out.print(table)
    out.print(safe(statistics_note(diff)))
    if diff.flagged:
        threshold = c.tag_drop_threshold
        out.print(
            f"\n[red bold]flagged[/]: {len(diff.flagged)} tag/metric pairs got worse by "
            f">= {threshold:g} (Holm-adjusted p < {c.alpha:g}) while the metric as a whole "
            "did not"
        )
        out.print(_tag_rows("flagged clusters", diff.flagged))
    primary = [t for t in diff.tags if t.metric == diff.primary]
    if primary:
        out.print(_tag_rows(f"per tag ({diff.primary})", primary))
    for title, flips in (("newly missed", diff.newly_missed), ("newly found", diff.newly_found)):
        more = f", first {TERMINAL_FLIPS}" if len(flips) > TERMINAL_FLIPS else ""
        out.print(f"\n[bold]{title}[/]: {len(flips)} questions ({diff.flip_metric}{more})")
        if flips:
            out.print(_flip_rows(title, flips))
    for which in ("a", "b"):
        for line in diff.health_lines(which):
            out.print(f"{which.upper()} {safe(line)}")


@click.command("diff")
@click.argument("run_a", metavar="A")
@click.argument("run_b", metavar="B")
@click.option("-m", "--metric", "metrics", multiple=True, help="Compare only these (repeatable).")
@click.option(
    "--tag-drop",
    type=click.FloatRange(min=0),
    default=0.1,
    show_default=True,
    help="Flag a tag that drops this much while the total does not.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the statistics.")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print a markdown report.")
@store_option
@json_option
def diff(
    run_a: str,
    run_b: str,
    metrics: tuple[str, ...],
    tag_drop: float,
    seed: int,
    as_markdown: bool,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Compare run B with run A: metric deltas with a 95% bootstrap CI and a paired
    randomization test, per-tag deltas (Holm-corrected), and flipped questions.

    A and B are run ids, names or `latest`. Runs at different levels or on different gold
    sets are refused (exit 2), as on the dashboard. Example: ragmeter diff baseline latest
    """
    from ragmeter.config import load_config
    from ragmeter.read.diff import read_diff

    thresholds = load_config().health
    with open_store(store_url) as store:
        view = read_diff(
            store, run_a, run_b, metrics=metrics or None, tag_drop_threshold=tag_drop,
            seed=seed, thresholds=thresholds,
        )  # fmt: skip
    result = view.require()  # runs at another level or on another gold set: exit 2
    data = view.to_dict()
    if as_json:
        print_json(data)
    elif as_markdown:
        click.echo(result.to_markdown(), nl=False)
    else:
        _print_diff(result)
        _print_blame(result, data["blame_kinds"])
        for line in view.judged_lines():
            console().print(line, markup=False)
