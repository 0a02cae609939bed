"""Generate docs/cli.md from the commands' own ``--help``.

``python -m ragmeter.cli._docs > docs/cli.md``; a test checks the file is current
and that every command has help text.
"""

from __future__ import annotations

import click

from ragmeter.cli import main


def _walk(command: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=" ".join(path))
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                found += _walk(sub, [*path, name])
    return found


HELP_OPTIONS = ["-h", "--help"]


def render_cli_reference() -> str:
    """The CLI reference: one section per command with its ``--help`` output."""
    parts = [
        "# CLI reference\n",
        "Generated from `--help` by `python -m ragmeter.cli._docs > docs/cli.md`; "
        "a test keeps it current.\n",
    ]
    for path, command in _walk(main, ["ragmeter"]):
        parent = None
        for name in path[:-1]:
            parent = click.Context(
                main if parent is None else parent.command,
                info_name=name,
                parent=parent,
                help_option_names=HELP_OPTIONS,
            )
        # The contexts get main's help option names explicitly: a Context built by hand does
        # not read context_settings, and click caches each command's help option the first
        # time it is asked, so the output would depend on what ran before in this process.
        ctx = click.Context(
            command,
            info_name=path[-1],
            parent=parent,
            terminal_width=100,
            max_content_width=100,
            help_option_names=HELP_OPTIONS,
        )
        parts.append(f"## {' '.join(path)}\n\n```\n{command.get_help(ctx).rstrip()}\n```\n")
    return "\n".join(parts)


def commands_without_help() -> list[str]:
    """Commands whose help text is empty (a test keeps this list empty)."""
    return [
        " ".join(path)
        for path, command in _walk(main, ["ragmeter"])
        if not (command.help or "").strip()
    ]


if __name__ == "__main__":  # pragma: no cover
    print(render_cli_reference(), end="")
