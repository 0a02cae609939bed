"""The markdown reports of ``ragmeter diff --markdown`` and ``ragmeter gate --markdown``.

One module for both, so a pull request shows the same tables whichever command wrote them:
the metric deltas with their interval and p-value, flagged clusters, per-tag deltas and the
newly missed / newly found questions. Every cell from data goes through :func:`md_cell`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.compare._shapes import DiffShape, FlipShape, GateShape
from ragmeter.compare.comparison import TagDelta

__all__ = [
    "DEFAULT_MAX_FLIPS",
    "detectable_cell",
    "detectable_text",
    "diff_markdown",
    "flip_table",
    "gate_markdown",
    "md_cell",
    "metric_table",
    "statistics_note",
    "tag_table",
]

#: How many newly missed / newly found questions a markdown report lists.
DEFAULT_MAX_FLIPS = 10
#: Inconclusive verdicts a gate report lists (the drops beyond the limit come first).
_INCONCLUSIVE_LINES = 8


def md_cell(text: object) -> str:
    """Text safe inside a markdown table cell.

    >>> md_cell("a | b\\nc")
    'a \\\\| b c'
    """
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def _p(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _rank(rank: int | None) -> str:
    return "–" if rank is None else str(rank)


def detectable_cell(value: float | None) -> str:
    """A detectable effect in a table cell: ``0.12``, or ``none alone`` for a tag too small.

    >>> detectable_cell(0.1234), detectable_cell(None)
    ('0.12', 'none alone')
    """
    return "none alone" if value is None else f"{value:.2f}"


def detectable_text(detectable: float | None, n: int) -> str:
    """What ``n`` questions can detect, in words (issue 26).

    >>> detectable_text(0.123, 200)
    '200 questions detect changes >= 0.12 (80% power)'
    >>> detectable_text(None, 5)
    '5 questions cannot detect any change on their own'
    """
    if detectable is None:
        return f"{n} questions cannot detect any change on their own"
    return f"{n} questions detect changes >= {detectable:.2f} (80% power)"


def metric_table(diff: DiffShape) -> list[str]:
    """The markdown table of metric deltas (used by diff and gate reports)."""
    c = diff.comparison
    lines = [
        f"| metric | A | B | Δ | {c.confidence:.0%} CI | p | detectable |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for m in diff.metrics:
        exact = "" if m.exact else "*"
        lines.append(
            f"| {m.metric} | {m.mean_a:.3f} | {m.mean_b:.3f} | {m.delta:+.3f} | "
            f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}] | {_p(m.p_value)}{exact} | {detectable_cell(m.detectable)} |"
        )
    for r in diff.run_level:
        lines.append(
            f"| {r.metric} | {r.value_a:.1f} | {r.value_b:.1f} | {r.delta:+.1f} | – | – | – |"
        )
    return lines


def tag_table(rows: Sequence[TagDelta]) -> list[str]:
    lines = [
        "| tag | metric | n | A | B | Δ | 95% CI | p | p (Holm) | detectable |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for t in rows:
        lines.append(
            f"| {md_cell(t.tag)} | {t.metric} | {t.n} | {t.mean_a:.3f} | {t.mean_b:.3f} | "
            f"{t.delta:+.3f} | [{t.ci_low:+.3f}, {t.ci_high:+.3f}] | {_p(t.p_value)} | "
            f"{_p(t.p_holm)} | {detectable_cell(t.detectable)} |"
        )
    return lines


def flip_table(flips: Sequence[FlipShape], limit: int) -> list[str]:
    lines = ["| id | question | tags | first relevant A → B |", "|---|---|---|---|"]
    for f in flips[:limit]:
        ranks = f"{_rank(f.rank_a)} → {_rank(f.rank_b)}"
        if f.error_b:
            ranks += f" (error: {md_cell(f.error_b)[:60]})"
        lines.append(
            f"| {md_cell(f.id)} | {md_cell(f.question)} | {md_cell(', '.join(f.tags))} | {ranks} |"
        )
    if len(flips) > limit:
        lines.append(f"\n… and {len(flips) - limit} more (`ragmeter diff --json`)")
    return lines


def statistics_note(diff: DiffShape) -> str:
    c = diff.comparison
    return (
        f"{c.n} questions compared. CI: paired percentile bootstrap, seed {c.seed}. "
        "p: paired randomization test (exact when few questions differ, * = 10,000 random "
        f"sign flips with the +1 correction). {c.notes[0][0].upper()}{c.notes[0][1:]}. "
        "Detectable: the smallest true change these questions find with 80% power "
        f"at α = {c.alpha:g}."
    )


def _diff_lines(diff: DiffShape, max_flips: int, h: str) -> list[str]:
    out = [
        f"{h} ragmeter diff: {md_cell(diff.label('a'))} → {md_cell(diff.label('b'))}",
        "",
    ]
    for warning in diff.warnings:
        out.append(f"> ⚠️ {md_cell(warning)}")
    if diff.warnings:
        out.append("")
    out += metric_table(diff)
    out += ["", statistics_note(diff), ""]
    if diff.flagged:
        out += [
            f"{h}# ⚠️ Clusters that got worse while the total did not "
            f"(drop ≥ {diff.comparison.tag_drop_threshold:g}, Holm-adjusted p < "
            f"{diff.comparison.alpha:g})",
            "",
            *tag_table(diff.flagged),
            "",
        ]
    primary = [t for t in diff.tags if t.metric == diff.primary]
    if primary:
        out += [f"{h}# Per tag ({diff.primary})", "", *tag_table(primary), ""]
    for title, flips in (("Newly missed", diff.newly_missed), ("Newly found", diff.newly_found)):
        if flips:
            out += [
                f"{h}# {title} ({len(flips)}, {diff.flip_metric})",
                "",
                *flip_table(flips, max_flips),
                "",
            ]
    health = diff.health_lines("b")
    if health:
        out += [f"**Health of B** · {md_cell(health[0].removeprefix('health: '))}", ""]
        out += [f"- {md_cell(line.removeprefix('hint: '))}" for line in health[1:]]
    return out


def diff_markdown(
    diff: DiffShape, *, max_flips: int = DEFAULT_MAX_FLIPS, heading: str = "###"
) -> str:
    """A markdown report (GitHub flavoured) of a diff: metrics, flagged clusters, tags, flips."""
    return "\n".join(_diff_lines(diff, max_flips, heading)) + "\n"


def gate_markdown(
    diff: DiffShape,
    result: GateShape,
    *,
    max_flips: int = DEFAULT_MAX_FLIPS,
    explanation: Any = None,
) -> str:
    """A report to post on a pull request: verdict, reasons, metric table, flagged
    clusters and up to ``max_flips`` newly missed / newly found questions; with the
    candidate's ``explanation`` (``ragmeter explain``), the knob that recovers most misses."""
    verdict = {"fail": "❌ failed", "inconclusive": "❔ inconclusive", "pass": "✅ passed"}[
        result.verdict
    ]
    if result.verdict == "inconclusive":
        verdict += " (failing: --fail-inconclusive)" if not result.passed else " (passing)"
    out = [
        f"## ragmeter gate {verdict}",
        "",
        f"Baseline **{md_cell(diff.label('a'))}** → candidate **{md_cell(diff.label('b'))}**"
        + (f" — {md_cell(diff.b.note)}" if diff.b.note else ""),
        "",
    ]
    if result.reasons:
        out += [f"- ❌ {md_cell(reason)}" for reason in result.reasons]
        out.append("")
    if result.inconclusive:
        out += [f"- ❔ {md_cell(line)}" for line in result.inconclusive[:_INCONCLUSIVE_LINES]]
        if len(result.inconclusive) > _INCONCLUSIVE_LINES:
            more = len(result.inconclusive) - _INCONCLUSIVE_LINES
            out.append(f"- … and {more} more inconclusive (`ragmeter gate --json`)")
        out.append("")
    if result.notes:
        out += [f"- ℹ️ {md_cell(note)}" for note in result.notes]
        out.append("")
    rules = result.rules.describe()
    out += [f"Rules: {'; '.join(rules) if rules else 'none'}.", ""]
    if result.judged_lines():  # issue 17.2: judge rules are decided on corrected estimates
        out += [f"- ⚖️ {md_cell(line)}" for line in result.judged_lines()] + [""]
    for warning in diff.warnings:
        out.append(f"> ⚠️ {md_cell(warning)}")
    if diff.warnings:
        out.append("")
    out += metric_table(diff)
    out += ["", statistics_note(diff), ""]
    flagged = _unique([*result.failed_tags, *diff.flagged])
    out.append("### Flagged clusters")
    out.append("")
    out += [*tag_table(flagged), ""] if flagged else ["None.", ""]
    # Issue 26: every tag's interval and what it can detect, one click away, for the first
    # gated metric (the diff's primary one when no rule names a metric with tags).
    tagged = {t.metric for t in diff.tags}
    shown = next((m for m in result.rules.metrics if m in tagged), diff.primary)
    primary = [t for t in diff.tags if t.metric == shown]
    if primary:
        out += [
            f"<details><summary>Per tag ({shown}): intervals and detectable drops</summary>",
            "",
            *tag_table(primary),
            "",
            "</details>",
            "",
        ]
    for title, flips in (("Newly missed", diff.newly_missed), ("Newly found", diff.newly_found)):
        if flips:
            out += [
                f"<details><summary>{title}: {len(flips)} questions ({diff.flip_metric})</summary>",
                "",
                *flip_table(flips, max_flips),
                "",
                "</details>",
                "",
            ]
    health = diff.health_lines("b")
    if health:
        out += [f"**Health of the candidate** · {md_cell(health[0].removeprefix('health: '))}"]
        out += [f"- {md_cell(line.removeprefix('hint: '))}" for line in health[1:]]
        out.append("")
    if explanation is not None and explanation.knobs:
        out += [f"**Top knob** (ragmeter explain of the candidate) · {md_cell(explanation.knobs[0].line())}", ""]  # fmt: skip
    return "\n".join(out)


def _unique(rows: Sequence[TagDelta]) -> list[TagDelta]:
    seen: dict[tuple[str, str], TagDelta] = {}
    for row in rows:
        seen.setdefault((row.tag, row.metric), row)
    return list(seen.values())
