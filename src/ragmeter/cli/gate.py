"""``ragmeter gate``: a diff turned into an exit code for CI."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ragmeter.cli._common import console, json_option, open_store, print_json, store_option
from ragmeter.cli._safe import safe
from ragmeter.cli.diff import _p
from ragmeter.compare.gate import GateRules

if TYPE_CHECKING:
    from ragmeter.compare.diff import RunDiff
    from ragmeter.compare.gate import GateResult

#: Lines of reasons the gate prints before "… and N more": one screen.
GATE_SCREEN_REASONS = 20
#: Flipped questions listed per direction in the terminal.
TERMINAL_FLIPS = 15
#: Inconclusive verdicts printed before "… and N more" (the drops beyond the limit first).
INCONCLUSIVE_LINES = 8


def _print_gate(diff: RunDiff, result: GateResult) -> None:
    from ragmeter.compare.markdown import detectable_text

    out = console()
    head = {
        "fail": "[red bold]gate FAILED[/]",
        "inconclusive": "[yellow bold]gate inconclusive[/]",
        "pass": "[green bold]gate passed[/]",
    }[result.verdict]
    if result.verdict == "inconclusive":
        head += " (failing: --fail-inconclusive)" if not result.passed else " (passing)"
    out.print(
        f"{head}: candidate {safe(diff.label('b'))} vs baseline {safe(diff.label('a'))} "
        f"({diff.n} questions)"
    )
    for reason in result.reasons[:GATE_SCREEN_REASONS]:
        out.print(f"  [red]✗[/] {safe(reason)}", soft_wrap=True)
    if len(result.reasons) > GATE_SCREEN_REASONS:
        out.print(f"  … and {len(result.reasons) - GATE_SCREEN_REASONS} more (--json)")
    for line in result.inconclusive[:INCONCLUSIVE_LINES]:
        out.print(f"  [yellow]?[/] {safe(line)}", soft_wrap=True)
    if len(result.inconclusive) > INCONCLUSIVE_LINES:
        out.print(
            f"  … and {len(result.inconclusive) - INCONCLUSIVE_LINES} more inconclusive (--json)"
        )
    for note in result.notes[:5]:
        out.print(f"  [yellow]·[/] {safe(note)}")
    for warning in diff.warnings:
        out.print(f"  [yellow]warning:[/] {safe(warning)}")
    rules = result.rules.describe()
    out.print(f"rules: {safe('; '.join(rules)) if rules else 'none'}", soft_wrap=True)
    gated = result.rules.metrics or [m.metric for m in diff.metrics][:4]
    for m in diff.metrics:
        if m.metric in gated:
            out.print(
                f"  {m.metric}: {m.mean_a:.3f} -> {m.mean_b:.3f} ({m.delta:+.3f}, "
                f"CI [{m.ci_low:+.3f}, {m.ci_high:+.3f}], p {_p(m.p_value, m.exact)}); "
                f"{detectable_text(m.detectable, m.n)}",
                soft_wrap=True,
            )
    for line in result.judged_lines():  # issue 17.2: what judge rules were decided on
        out.print(f"  {line}", markup=False)


@click.command("gate")
@click.option("--baseline", required=True, metavar="RUN", help="The run to compare against.")
@click.option("--candidate", required=True, metavar="RUN", help="The run under test.")
@click.option(
    "--max-drop", multiple=True, metavar="METRIC=X", help="Allowed drop of a metric (repeatable)."
)
@click.option(
    "--tag-max-drop",
    type=click.FloatRange(min=0),
    default=0.1,
    show_default=True,
    help="Allowed drop of any tag on a gated metric.",
)
@click.option("--no-tag-check", is_flag=True, help="Do not check tags at all.")
@click.option("--min", "minimum", multiple=True, metavar="METRIC=X", help="Floor (repeatable).")
@click.option(
    "--fail-inconclusive",
    is_flag=True,
    help="Fail (exit 1) when the gold set cannot tell whether a drop is real.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Fail on any drop beyond the allowed one, real or noise (raw thresholds).",
)
@click.option(
    "--require-significance",
    is_flag=True,
    help="With --strict: fail on a drop only when p < 0.05 (Holm per tag).",
)
@click.option(
    "--require-calibrated",
    is_flag=True,
    help="Fail when a judge metric's judge has no calibration or a weak kappa.",
)
@click.option(
    "--min-kappa",
    type=click.FloatRange(min=-1, max=1),
    default=GateRules.min_kappa,
    show_default=True,
    help="Lowest kappa lower bound --require-calibrated accepts.",
)
@click.option(
    "--markdown",
    "markdown_file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write a pull-request report to this file.",
)
@click.option(
    "--max-flips",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Flipped questions listed per direction in the markdown report.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the statistics.")
@store_option
@json_option
def gate(
    baseline: str,
    candidate: str,
    max_drop: tuple[str, ...],
    tag_max_drop: float,
    no_tag_check: bool,
    minimum: tuple[str, ...],
    fail_inconclusive: bool,
    strict: bool,
    require_significance: bool,
    require_calibrated: bool,
    min_kappa: float,
    markdown_file: Path | None,
    max_flips: int,
    seed: int,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Pass (exit 0) or fail (exit 1) a candidate run against a baseline, for CI.

    Each gated metric and tag is failed (a drop beyond the allowed one that the paired
    test says is real), passed (the interval rules such a drop out) or inconclusive (the
    gold set is too small to tell; shown with the smallest drop it could detect).
    Inconclusive passes unless --fail-inconclusive. Runs at different levels or on
    different gold sets are refused (exit 2).
    Example: ragmeter gate --baseline main --candidate latest --max-drop hit@5=0.02
    """
    from ragmeter.compare.gate import check_gate, gate_markdown
    from ragmeter.config import load_config
    from ragmeter.read.diff import read_diff

    rules = GateRules.parse(
        max_drop, minimum, tag_max_drop=None if no_tag_check else tag_max_drop,
        require_significance=require_significance,
        require_calibrated=require_calibrated, min_kappa=min_kappa,
        fail_inconclusive=fail_inconclusive, strict=strict,
    )  # fmt: skip
    thresholds = load_config().health
    with open_store(store_url) as store:
        view = read_diff(
            store, baseline, candidate, tag_drop_threshold=tag_max_drop, seed=seed,
            thresholds=thresholds,
        )  # fmt: skip
    result_diff = view.require()  # runs at another level or on another gold set: exit 2
    judged, explained = view.judged, view.explanation  # issue 28: the top knob
    result = check_gate(result_diff, rules, judged=judged)
    if markdown_file is not None:
        from ragmeter.formats.output import write_output

        report = gate_markdown(result_diff, result, max_flips=max_flips, explanation=explained)
        write_output(markdown_file, report, kind="--markdown")
    if as_json:
        print_json({"gate": result.to_dict(), "diff": result_diff.to_dict()})
    else:
        _print_gate(result_diff, result)
    click.get_current_context().exit(result.exit_code)
