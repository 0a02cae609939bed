"""Issue 29.3: `ragmeter --help` lists every command without importing any of them."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from ragmeter.cli import COMMANDS, SUMMARIES, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_summary_is_the_commands_own_short_help(name: str) -> None:
    """Issue 29.3: the listed line is what Click would print from the imported command."""
    real = main.get_command(click.Context(main), name)
    assert real is not None
    listed = click.Command(name, help=SUMMARIES[name])
    for limit in (45, 62, 200):
        assert listed.get_short_help_str(limit) == real.get_short_help_str(limit)


def test_help_imports_no_command_numpy_or_pydantic() -> None:
    """Issue 29.3: `--help` prints the same list while importing none of the heavy modules."""
    code = (
        "import sys\n"
        "from ragmeter.cli import run\n"
        "sys.argv = ['ragmeter', '--help']\n"
        "try:\n"
        "    run()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('numpy', 'pydantic', 'rich', 'sqlalchemy', 'ragmeter.cli.eval')\n"
        "         if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "HEAVY []" in done.stdout
    for name in COMMANDS:
        assert f"\n  {name} " in done.stdout
