"""Issue 29.2/29.3: a command loads its modules with the garbage collector paused, then frozen.

Each case runs in a fresh interpreter: ``own_process`` and ``gc.freeze`` are process-wide.
"""

from __future__ import annotations

import os
import subprocess
import sys

from _fresh import SOURCE as _SOURCE


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": _SOURCE},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_loading_pauses_then_freezes_only_in_a_commands_own_process() -> None:
    """Issue 29.2: no collection runs while the eval modules load (they cost ~0.1 s of a
    0.75 s run-file eval); what loaded is frozen; a library or test process is untouched."""
    out = _python(
        "import gc\n"
        "from ragmeter.executors import collector\n"
        "with collector.loading():\n"
        "    assert gc.isenabled()\n"
        "assert gc.get_freeze_count() == 0\n"
        "collector.own_process()\n"
        "passes = []\n"
        "gc.callbacks.append(lambda phase, info: passes.append(info['generation']))\n"
        "with collector.loading():\n"
        "    assert not gc.isenabled()\n"
        "    import ragmeter.evaluation.job\n"
        "    during = len(passes)\n"
        "print('during', during, 'enabled', gc.isenabled(), 'frozen', gc.get_freeze_count() > 0)\n"
        "print('elsewhere', collector.frozen_elsewhere())\n"
    )
    assert "during 0 enabled True frozen True" in out
    assert "elsewhere False" in out


def test_a_run_freezes_again_and_gives_back_unless_someone_else_froze() -> None:
    """Issue 29.2: ``quiet_collector`` treats the command's own freeze as its own (a run keeps
    its young threshold and thaws everything after); another freezer (the dashboard) is left
    alone, as before."""
    out = _python(
        "import gc\n"
        "from ragmeter.executors import collector\n"
        "collector.own_process()\n"
        "with collector.loading():\n"
        "    from ragmeter.evaluation.finish import quiet_collector\n"
        "young = gc.get_threshold()[0]\n"
        "with quiet_collector():\n"
        "    print('run', gc.get_threshold()[0] >= 20_000, gc.get_freeze_count() > 0)\n"
        "print('after', gc.get_threshold()[0] == young, gc.get_freeze_count())\n"
    )
    assert "run True True" in out
    assert "after True 0" in out


def test_a_process_that_froze_by_itself_is_left_alone() -> None:
    """Issue 15.5 kept: objects frozen by someone else (the dashboard) stay frozen through a
    run, which leaves the collector's settings alone."""
    out = _python(
        "import gc\n"
        "from ragmeter.executors import collector\n"
        "from ragmeter.evaluation.finish import quiet_collector\n"
        "collector.own_process()\n"
        "young = gc.get_threshold()[0]\n"
        "gc.freeze()\n"
        "print('elsewhere', collector.frozen_elsewhere())\n"
        "with quiet_collector():\n"
        "    print('left alone', gc.get_threshold()[0] == young)\n"
        "print('still frozen', gc.get_freeze_count() > 0)\n"
    )
    assert "elsewhere True" in out and "left alone True" in out and "still frozen True" in out


def test_while_questions_run_the_collector_walks_neither_the_setup_nor_queued_rows() -> None:
    """Issue 29.2: once a run's setup is made, its judgments and tally are frozen (a young
    pass would walk 200,000 judgments at 100k questions), and what waits for the store is a
    row of plain values, not a result with its hits. After the run the collector is as
    before: enabled, its thresholds back, nothing left frozen."""
    out = _python(
        "import gc\n"
        "import ragmeter\n"
        "from ragmeter.gold.goldset import GoldSet\n"
        "from ragmeter.store import Store\n"
        "gold = GoldSet.from_records([{'id': f'q{i}', 'question': f'question {i}',\n"
        "    'relevant': [f'd{i % 50}']} for i in range(3000)])\n"
        "seen = {}\n"
        "def search(question, k):\n"
        "    if not seen:\n"
        "        kinds = {type(o).__name__ for o in gc.get_objects()}\n"
        "        seen['walked'] = sorted(kinds & {'Judgments', 'Tally', 'ScoreInputs', 'QuestionPath'})\n"
        "        seen['frozen'] = gc.get_freeze_count() > 0\n"
        "    n = int(question.split()[1])\n"
        "    return [{'id': f'd{(n + j) % 50}', 'doc': f'd{(n + j) % 50}', 'score': 1.0 - j / 10}\n"
        "            for j in range(10)]\n"
        "class Rows(Store):\n"
        "    def add_result_rows(self, run_id, rows, *, replace=True):\n"
        "        rows = list(rows)\n"
        "        kinds = {type(v).__name__ for row in rows for v in row}\n"
        "        seen.setdefault('queued', set()).update(kinds | {type(r).__name__ for r in rows})\n"
        "        super().add_result_rows(run_id, rows, replace=replace)\n"
        "young = gc.get_threshold()\n"
        "report = ragmeter.evaluate(gold, search, k=10, store=Rows('sqlite://'))\n"
        "print('walked', seen['walked'], 'frozen', seen['frozen'])\n"
        "print('queued', sorted(seen['queued']))\n"
        "print('after', gc.isenabled(), gc.get_threshold() == young, gc.get_freeze_count())\n"
        "print('questions', report.n_questions, report.run.status)\n"
    )
    assert "walked [] frozen True" in out, out
    assert "queued ['NoneType', 'float', 'int', 'str', 'tuple']" in out, out
    assert "after True True 0" in out, out
    assert "questions 3000 complete" in out, out
