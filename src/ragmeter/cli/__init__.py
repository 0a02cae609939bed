"""The ``ragmeter`` command: a thin shell over the library.

Each command lives in a module of this package and is loaded on first use, so
``ragmeter --help`` stays fast and a command's heavy imports cost nothing to the
others. Our exceptions become a one-line message and the exit code of
``RagmeterError.exit_code`` (0 ok, 1 gate failed, 2 input error, 3 could not
evaluate; 130 after Ctrl-C, 141 when the reader of the output went away, as in
``ragmeter eval … | head``); nothing else prints a traceback to the user.
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import os
import sys
from typing import Any

import click

from ragmeter._redact import redact
from ragmeter.errors import RagmeterError
from ragmeter.executors.collector import loading, own_process

# Exit code after Ctrl-C (128 + SIGINT), as a shell reports it.
INTERRUPTED_EXIT_CODE = 130
# Exit code when the output's reader closed the pipe (128 + SIGPIPE), as a shell reports a
# command stopped by it; Click's default, 1, would read as "gate failed".
BROKEN_PIPE_EXIT_CODE = 141

# name -> "module:attribute". Modules are imported only when the command runs
# (or when --help lists it).
COMMANDS: dict[str, str] = {
    "demo": "ragmeter.cli.demo:demo",
    "diff": "ragmeter.cli.diff:diff",
    "eval": "ragmeter.cli.eval:eval_command",
    "explain": "ragmeter.cli.explain:explain",
    "export": "ragmeter.cli.export:export",
    "flywheel": "ragmeter.cli.flywheel:flywheel",
    "gate": "ragmeter.cli.gate:gate",
    "generate": "ragmeter.cli.generate:generate",
    "gold": "ragmeter.cli.gold:gold",
    "ingest": "ragmeter.cli.ingest:ingest",
    "judge": "ragmeter.cli.judge:judge",
    "metrics": "ragmeter.cli.metrics:metrics",
    "report": "ragmeter.cli.report:report",
    "retrieve": "ragmeter.cli.retrieve:retrieve",
    "review": "ragmeter.cli.review:review",
    "runs": "ragmeter.cli.runs:runs",
    "serve": "ragmeter.cli.serve:serve",
    "show": "ragmeter.cli.show:show",
    "store": "ragmeter.cli.store:store",
    "sweep": "ragmeter.cli.sweep:sweep",
}


# name -> the first paragraph of the command's help, so `ragmeter --help` lists the commands
# without importing them (numpy, pydantic...: issue 29.3). A test checks each against the
# command's own help; a command missing here is imported to list it.
SUMMARIES: dict[str, str] = {
    "demo": "Evaluate BM25 on whole documents and on sections of the bundled uv docs (offline).",
    "diff": "Compare run B with run A: metric deltas with a 95% bootstrap CI and a paired randomization test, per-tag deltas (Holm-corrected), and flipped questions.",
    "eval": "Evaluate a retriever on a gold set and store the run.",
    "explain": "Explain every retrieval miss of a run: causes with evidence, and which knob recovers how many.",
    "export": "Export a stored run: one row per question with its metrics, ranking, answer and verdict.",
    "flywheel": "Turn failed production queries into gold candidates.",
    "gate": "Pass (exit 0) or fail (exit 1) a candidate run against a baseline, for CI.",
    "generate": "Write gold candidates with an LLM: questions (default) or adversarial variants.",
    "gold": "Work with gold sets (questions and the documents that answer them).",
    "ingest": "The HTTP endpoint services use to log queries and feedback.",
    "judge": "Judge answers and chunks with a model you configure, and calibrate the judge.",
    "metrics": "Compute retrieval metrics for a qrels file and a run file, like trec_eval.",
    "report": "Write a static HTML report of a run to attach to a pull request or send to someone.",
    "retrieve": "Run one question through the retriever alone and print what came back.",
    "review": "Review CANDIDATES: [a]ccept, [e]dit, [r]eject, [s]kip, [q]uit.",
    "runs": "List stored runs: a run per row, a metric per column, newest last.",
    "serve": "Start the dashboard: runs, run detail, diffs, labelling and review.",
    "show": "Show a run: metrics, per-question rows and the misses by tag and document.",
    "store": "Manage run stores (SQLite files and PostgreSQL databases).",
    "sweep": "Run every combination of GRID.yaml as a stored run; print them sorted by --metric and, per tag, which config wins and by how much.",
}


def _available(target: str) -> bool:
    module = target.split(":", 1)[0]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = [name for name, target in COMMANDS.items() if _available(target)]
        return sorted(set(super().list_commands(ctx)) | set(lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _available(target):
            return super().get_command(ctx, cmd_name)
        module_name, attr = target.split(":", 1)
        with loading():
            command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands from SUMMARIES, importing only those it lacks (as Click does)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            summary = SUMMARIES.get(name) if name in COMMANDS else None
            command = (
                click.Command(name, help=summary)
                if summary is not None
                else self.get_command(ctx, name)
            )
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # a closed pipe shows here, where it is handled below
        except RagmeterError as error:
            # Known secrets (env: headers, template keys) are masked on the terminal too.
            click.echo(f"Error: {redact(str(error))}", err=True)
            ctx.exit(error.exit_code)
        except KeyboardInterrupt as interrupt:
            # Ctrl-C: say what was kept (evaluate() names the run to resume) and exit
            # 130 as shells do; Click's default, 1, would read as "gate failed".
            click.echo(f"Aborted: {interrupt}" if str(interrupt) else "Aborted!", err=True)
            ctx.exit(INTERRUPTED_EXIT_CODE)
        except OSError as error:
            if error.errno == errno.EPIPE:
                _silence_stdout()
                ctx.exit(BROKEN_PIPE_EXIT_CODE)
            # The backstop of issue 27.16: a file the user named that the operating system
            # refused (a folder, no permission) is exit 2 naming it, not a traceback. Writers
            # raise OutputError themselves (formats/output.py); this catches any that do not.
            if error.filename is None:
                raise
            reason = error.strerror or type(error).__name__
            click.echo(f"Error: {redact(str(error.filename))}: {reason}", err=True)
            ctx.exit(2)


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so the flush at exit cannot fail on the pipe again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test runner's buffer): nothing is flushed to a pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ragmeter")
def main() -> None:
    """Measure whether a RAG pipeline retrieves the right context.

    Exact retrieval metrics per question, per cluster and per change, with the
    answer-quality judgement kept apart. Exit codes: 0 ok, 1 gate failed,
    2 usage or input error, 3 could not evaluate.
    """


def run() -> None:  # pragma: no cover - console entry point helper
    own_process()
    main(prog_name="ragmeter")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
