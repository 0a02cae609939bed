"""How runs, misses and retrievals look in a terminal (rich)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ragmeter.cli._common import console, fmt, metric_header, runs_table
from ragmeter.cli._safe import safe

if TYPE_CHECKING:
    from rich.table import Table

PLAIN_PROGRESS_EVERY_S = 5.0
RUNS_COLUMNS = ("hit@1", "hit@5", "recall@10", "mrr", "ndcg@10", "map", "latency_p95_ms")
SHOW_MISSES = 25
MISS_WORDS = 8


def _terminal_bar(title: str, *, errors: bool) -> Any:
    """A transient rich bar on stderr; rich.progress is imported only for a terminal (issue 29.3)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn(title), BarColumn(), MofNCompleteColumn()]
    if errors:
        columns.append(TextColumn("{task.fields[errors]} errors"))
    return Progress(*columns, TimeRemainingColumn(), console=console(stderr=True), transient=True)


@contextmanager
def progress_bar(*, disabled: bool = False) -> Iterator[Callable[[int, int, Any], None] | None]:
    """A progress callback: a rich bar with ETA on a terminal, plain lines in CI."""
    if disabled:
        yield None
        return
    if sys.stderr.isatty():
        bar = _terminal_bar("[bold]evaluating", errors=True)
        task = bar.add_task("eval", total=None, errors=0)
        errors = 0

        def update(done: int, total: int, result: Any) -> None:
            nonlocal errors
            errors += result.error is not None
            bar.update(task, completed=done, total=total, errors=errors)

        with bar:
            yield update
        return
    last = 0.0

    def plain(done: int, total: int, result: Any) -> None:
        nonlocal last
        now = time.monotonic()
        if done == total or now - last >= PLAIN_PROGRESS_EVERY_S:
            last = now
            print(f"evaluated {done}/{total} questions", file=sys.stderr, flush=True)

    yield plain


@contextmanager
def stage_progress(*, disabled: bool = False) -> Iterator[Callable[[int, int, Any], None] | None]:
    """A progress callback ``(done, total, stage)``: a rich bar per stage, plain lines in CI."""
    if disabled:
        yield None
        return
    if sys.stderr.isatty():
        bar = _terminal_bar("[bold]{task.description}", errors=False)
        tasks: dict[str, Any] = {}

        def update(done: int, total: int, stage: Any) -> None:
            name = str(stage)
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done, total=total)

        with bar:
            yield update
        return
    last: dict[str, float] = {}

    def plain(done: int, total: int, stage: Any) -> None:
        now = time.monotonic()
        if done == total or now - last.get(str(stage), 0.0) >= PLAIN_PROGRESS_EVERY_S:
            last[str(stage)] = now
            print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)

    yield plain


def _table(**options: Any) -> Table:
    """A rich table; rich is imported by the first one, so ``--json`` needs none (issue 29.2)."""
    from rich.table import Table

    return Table(**options)


def _columns(runs: Sequence[Any], wanted: Sequence[str]) -> list[str]:
    if wanted:
        from ragmeter.metrics import parse_metric

        return [str(parse_metric(m)) for m in wanted]
    present = {name for run in runs for name in run.metrics}
    return [name for name in RUNS_COLUMNS if name in present]


def print_runs(runs: Sequence[Any], wanted: Sequence[str] = ()) -> None:
    out = console()
    if not runs:
        out.print("No runs yet. Start with: ragmeter eval --gold GOLD --corpus DOCS")
        return
    out.print(runs_table(runs, _columns(runs, wanted)))
    warned = [str(run.id) for run in runs if run.warnings]
    if warned:
        out.print(
            f"⚠ run{'s' if len(warned) > 1 else ''} {', '.join(warned)} stored warnings: "
            f"ragmeter show {warned[-1]} lists them"
        )


def _metrics_table(metrics: dict[str, float]) -> Table:
    table = _table(show_header=True)
    for name in metrics:
        table.add_column(metric_header(name), justify="right")
    table.add_row(*(fmt(v) for v in metrics.values()))
    return table


def print_misses(report: Any, limit: int = SHOW_MISSES, explanation: Any = None) -> None:
    out = console()
    k = report.run.k
    n_eval = report.n_questions - report.n_errors
    out.print(
        f"\n[bold]Misses[/]: {len(report.misses)} of {n_eval} questions had nothing relevant in the "
        f"top {k} (hit@{k} {report.hit_rate:.2f})"
    )
    if report.by_tag:
        tags = _table(title="misses by tag", title_justify="left")
        tags.add_column("tag")
        tags.add_column("n", justify="right")
        tags.add_column("misses", justify="right")
        tags.add_column(f"hit@{k}", justify="right")
        tags.add_column(f"vs all ({report.hit_rate:.2f})", justify="right")
        for tag in report.by_tag:
            delta = tag.hit_rate - report.hit_rate
            style = "red" if delta <= -0.1 else ("green" if delta >= 0.1 else "")
            tags.add_row(
                safe(tag.tag),
                str(tag.n),
                str(tag.misses),
                f"{tag.hit_rate:.2f}",
                f"[{style}]{delta:+.2f}[/]" if style else f"{delta:+.2f}",
            )
        out.print(tags)
    if report.by_doc:
        docs = _table(title="misses by expected document", title_justify="left")
        docs.add_column("document")
        docs.add_column("misses", justify="right")
        for doc, n in report.by_doc[:10]:
            docs.add_row(safe(doc), str(n))
        out.print(docs)
    if report.misses:
        # One print for the whole list: rich renders each call separately (issue 29.3).
        lines = ["\n[bold]missed questions[/]"]
        for miss in report.misses[:limit]:
            lines.append(
                f"[red]✗[/] [bold]{safe(miss.id)}[/]  [dim]{safe(', '.join(miss.tags))}[/]"
            )
            lines.append(f"  {safe(miss.question)}")
            lines.append(f"  expected: {safe(', '.join(miss.expected))}")
            why = explanation.of(miss.id) if explanation is not None else None
            if why is not None:
                lines.append(f"  [bold]why missed[/]: {safe(why.why())}")
            if not miss.retrieved:
                lines.append("    (nothing retrieved)")
            for hit in miss.retrieved:
                words = " ".join(str(hit.get("text") or "").split()[:MISS_WORDS])
                words = f" [dim]“{safe(words)}…”[/]" if words else ""
                # The document, not a chunk UUID: chunk ids belong to detail views.
                lines.append(f"    {hit['rank']}. {safe(str(hit['doc']))}{words}")
        if len(report.misses) > limit:
            lines.append(
                f"… and {len(report.misses) - limit} more (ragmeter show {report.run.id} --json)"
            )
        out.print("\n".join(lines))


def print_errors(report: Any) -> None:
    if not report.errors:
        return
    out = console()
    first = report.errors[0]
    out.print(
        f"[yellow]{report.n_errors} of {report.n_questions} questions failed[/]: "
        f"{safe(first.id)}: {safe(str(first.error))}"
    )
    for row in report.errors[1:5]:
        out.print(f"  {safe(row.id)}: {safe(str(row.error))}")


def _print_notes(report: Any) -> None:
    """Informational notes (ids mapped, paths made relative): said by `eval`, kept in --json."""
    for note in getattr(report, "notes", None) or ():
        console(stderr=True).print(f"[dim]note:[/] {safe(note)}")


def _print_warnings(report: Any) -> None:
    for warning in report.warnings:
        console(stderr=True).print(f"[yellow]warning:[/] {safe(warning)}")


def print_generation(report: Any) -> None:
    """Dumb checks, blame per tag, covered@k (label coverage) and judge calibration, when present."""
    out = console()
    judged = getattr(report, "judged", None) or {}
    k = report.run.k
    if judged and judged.get(f"covered@{k}") is not None:
        out.print(
            f"covered@{k} {judged[f'covered@{k}']:.2f} (labels: {safe(str(judged.get('labels', 'gold')))})"
        )
    if getattr(report, "dumb_checks", None):
        passed, checked = report.dumb_checks
        out.print(f"dumb checks {passed}/{checked} answers contain their expected strings")
    for name, info in (getattr(report, "judges", None) or {}).items():
        calibration = (info or {}).get("calibration")
        if not calibration:
            state = "[yellow]not calibrated[/]: run ragmeter judge calibrate before trusting it"
        elif calibration.get("flagged"):
            state = f"[red]flagged[/] (agreement {calibration.get('agreement', 0):.2f}): tighten the prompt"
        else:
            state = f"calibrated (agreement {calibration.get('agreement', 0):.2f})"
        out.print(f"judge {safe(str(name))}: {state}")
    blame = getattr(report, "blame", None) or {}
    if blame and any(n for tag, n in blame.items() if tag != "ok"):
        # The finer tags (issue 17.5) appear once claims are judged; old runs keep three.
        out.print("[bold]blame[/]: " + " · ".join(f"{tag} {n}" for tag, n in blame.items()))
        columns = list(blame)
        table = _table(title="blame by tag", title_justify="left")
        for col in ("tag", *columns):
            table.add_column(col, justify="left" if col == "tag" else "right")
        for tag, counts in sorted(report.blame_by_tag.items()):
            table.add_row(safe(tag), *(str(counts.get(c, 0)) for c in columns))
        out.print(table)


def print_eval(report: Any) -> None:
    out = console()
    _print_notes(report)
    _print_warnings(report)
    run = report.run
    out.print(
        f"[bold]run {run.id}[/] {safe(run.name)} — {safe(run.retriever)}, k={run.k}, level={run.level}"
    )
    out.print(_metrics_table(report.metrics))
    print_generation(report)
    print_errors(report)
    print_misses(report)


def print_show(report: Any, *, show_all: bool = False, explanation: Any = None) -> None:
    out = console()
    _print_warnings(report)
    run = report.run
    out.print(
        f"[bold]run {run.id}[/] {safe(run.name)} ({safe(run.status)}) — {safe(run.retriever)}, "
        f"k={run.k}, level={run.level}, {safe(run.created)}"
        + (f", commit {safe(run.commit[:12])}" if run.commit else "")
    )
    if run.note:
        out.print(f"change: {safe(run.note)}")
    from ragmeter.evaluation.versions import versions_line

    versions = versions_line(run.config)
    if versions:
        out.print(safe(versions))
    out.print(_metrics_table(dict(report.metrics)))
    _print_stage_latency(run.config.get("stage_latency"))
    print_generation(report)
    if show_all:
        table = _table(title="questions", title_justify="left")
        for col in ("id", "tags", "first relevant", "latency ms", "error", "why missed"):
            table.add_column(col)
        for row in report.rows:
            why = explanation.of(row.id) if explanation is not None else None
            table.add_row(
                safe(row.id),
                safe(", ".join(row.tags)),
                fmt(row.first_relevant_rank),
                fmt(row.latency_ms),
                safe(row.error or ""),
                safe(why.why()) if why is not None else "",
            )
        out.print(table)
    print_errors(report)
    print_misses(report, explanation=explanation)
    if explanation is not None:
        print_knobs(explanation)


def _print_stage_latency(stages: Any) -> None:
    """Per-stage timings of a reference pipeline (index build, retrieve, fuse, rerank, rewrite)."""
    if not stages:
        return
    table = _table(title="stage latency", title_justify="left")
    for col in ("stage", "n", "p50 ms", "p95 ms"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for name, ms in (stages.get("index_build_ms") or {}).items():
        table.add_row(f"index build ({safe(str(name))})", "1", fmt(float(ms)), "")
    for stage in ("rewrite", "retrieve", "fuse", "rerank"):
        row = stages.get(stage)
        if row:
            table.add_row(
                stage, str(row.get("n", "")), fmt(row.get("p50_ms")), fmt(row.get("p95_ms"))
            )
    console().print(table)


def print_retrieve(result: Any) -> None:
    out = console()
    table = _table(title=f"“{safe(result.question)}”", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("chunk")
    table.add_column("score", justify="right")
    if result.item_id is not None:
        table.add_column("relevant")
    table.add_column("text")
    for row in result.rows:
        cells = [str(row["rank"]), safe(row["id"]), fmt(row["score"])]
        if result.item_id is not None:
            cells.append(f"[green]yes ({row['grade']})[/]" if row["grade"] > 0 else "no")
        cells.append(safe(row["text"]))
        table.add_row(*cells)
    out.print(table)
    if result.item_id is not None:
        out.print(f"gold item: {safe(result.item_id)}")
        if result.not_returned:
            out.print("[red]expected but not returned:[/] " + safe(", ".join(result.not_returned)))
        else:
            out.print("[green]every expected document came back[/]")


def print_demo(result: Any) -> None:
    out = console()
    out.print(runs_table(result.runs, list(result.columns), title="ragmeter demo: runs"))
    out.print(
        f"\nBetter run: [bold]{safe(result.best.run.name)}[/] ({result.metric} {result.best.metrics.get(result.metric, 0):.3f})"
    )
    print_misses(result.best, limit=15)
    out.print(
        f"\nStore: {result.store_url}. Next: ragmeter show {result.best.run.id} --store {result.store_url}"
    )


def print_knobs(explanation: Any) -> None:
    """Each knob's measured ceiling, most recovered misses first, and its top tags."""
    out = console()
    if not explanation.knobs:
        out.print(f"explain: no knob recovers any of the {len(explanation.misses)} misses")
        return
    out.print(f"\n[bold]knobs[/] (explain, depth {explanation.depth}):")
    for knob in explanation.knobs:
        out.print(f"  {safe(knob.line())}")
        for tag in knob.by_tag[:3]:
            out.print(
                f"    tag {safe(str(tag['tag']))}: recovers {tag['recovered']} of "
                f"{tag['misses']} → hit rate ≤ {tag['ceiling']:.2f} (now {tag['hit_rate']:.2f})"
            )


def print_explanation(explanation: Any, causes: Sequence[str] = ()) -> None:
    """``ragmeter explain``: each miss with its causes and evidence, knobs, skipped probes."""
    out = console()
    shown = explanation.select(causes)
    counts = " · ".join(f"{name.replace('_', ' ')} {n}" for name, n in explanation.counts().items())
    out.print(
        f"[bold]run {explanation.run_id}[/]: {len(explanation.misses)} misses of "
        f"{explanation.n_evaluated} questions (k={explanation.k}, asked again for "
        f"{explanation.depth}) — {counts or 'no misses'}"
    )
    for miss in shown:
        out.print(f"[red]✗[/] [bold]{safe(miss.item_id)}[/]  [dim]{safe(', '.join(miss.tags))}[/]")
        out.print(f"  {safe(miss.question)}")
        if not miss.causes:
            out.print("  unexplained: no probe found evidence")
        for cause in miss.causes:
            out.print(f"  → [bold]{safe(cause.kind.replace('_', ' '))}[/] ({safe(cause.knob)}): "
                      f"{safe(cause.summary)}")  # fmt: skip
        for note in miss.notes:
            out.print(f"  [dim]note: {safe(note)}[/]")
    print_knobs(explanation)
    for row in explanation.verify:
        if "skipped" in row:
            out.print(f"verify {safe(row['knob'])}: not run ({safe(str(row['skipped']))})")
        else:
            out.print(
                f"verify {safe(row['knob'])}: recovered {row['recovered']} of {row['misses']} "
                f"misses ({row['recovered_predicted']} of the {row['predicted']} predicted), "
                f"lost {row['lost']} of {row['found']} found"
            )
    for probe, reason in explanation.skipped.items():
        out.print(f"[dim]probe {safe(probe)} skipped: {safe(reason)}[/]")
    for note in explanation.notes:
        out.print(f"[dim]note: {safe(note)}[/]")
    out.print(
        f"[dim]explained in {explanation.seconds:.1f}s; stored with run {explanation.run_id}[/]"
    )


def print_view(view: Any, *, show_all: bool = False) -> None:
    """``ragmeter show``: a :class:`~ragmeter.read.view.RunView` as text, computing nothing."""
    print_show(view.report, show_all=show_all, explanation=view.explanation)
    out = console()
    print_failed_answers(view.failed_answers)
    for metric, mean in view.judged.items():
        out.print(f"{metric} {mean.describe()}", markup=False)
    for judge, ids in view.unstable.items():
        if ids:
            listed = ", ".join(ids[:10]) + (" …" if len(ids) > 10 else "")
            line = f"{len(ids)} {judge} verdict(s) unstable across repeats: {listed}"
            out.print(line, markup=False)
    for line in view.health_lines:
        out.print(line, markup=False)


def print_failed_answers(rows: Sequence[Any], limit: int = SHOW_MISSES) -> None:
    """The questions whose answer failed, with their blame (issue 25.1)."""
    if not rows:
        return
    out = console()
    out.print(f"\n[bold]failed answers[/]: {len(rows)}")
    for row in rows[:limit]:
        out.print(f"[red]✗[/] [bold]{safe(row.id)}[/]  blame: {safe(str(row.blame))}")
        out.print(f"  {safe(row.question)}")
        if row.answer is not None:
            out.print(f"  answer: {safe(' '.join(str(row.answer).split()[: MISS_WORDS * 2]))}")
    if len(rows) > limit:
        out.print(f"… and {len(rows) - limit} more (ragmeter show RUN --json: failed_answers)")
