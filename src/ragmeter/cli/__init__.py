"""The ``ragmeter`` command: a thin shell over the library.

Each command lives in a module of this package and is loaded on first use, so
``ragmeter --help`` stays fast and a command's heavy imports cost nothing to the
others. Our exceptions become a one-line message and the exit code of
``RagmeterError.exit_code`` (0 ok, 1 gate failed, 2 input error, 3 could not
evaluate; 130 after Ctrl-C); nothing else prints a traceback to the user.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from ragmeter.errors import RagmeterError

# Exit code after Ctrl-C (128 + SIGINT), as a shell reports it.
INTERRUPTED_EXIT_CODE = 130

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
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RagmeterError as error:
            click.echo(f"Error: {error}", err=True)
            ctx.exit(error.exit_code)
        except KeyboardInterrupt as interrupt:
            # Ctrl-C: say what was kept (evaluate() names the run to resume) and exit
            # 130 as shells do; Click's default, 1, would read as "gate failed".
            click.echo(f"Aborted: {interrupt}" if str(interrupt) else "Aborted!", err=True)
            ctx.exit(INTERRUPTED_EXIT_CODE)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ragmeter")
def main() -> None:
    """Measure whether a RAG pipeline retrieves the right context.

    Exact retrieval metrics per question, per cluster and per change, with the
    answer-quality judgement kept apart. Exit codes: 0 ok, 1 gate failed,
    2 usage or input error, 3 could not evaluate.
    """


def run() -> None:  # pragma: no cover - console entry point helper
    main(prog_name="ragmeter")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
