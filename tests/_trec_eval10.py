"""trec_eval 10.0 as the primary reference, built from the unmodified shared source.

``../shared/tools/trec_eval-10.0`` is copied to a scratch folder and built with
``make`` (about 2 s). trec_eval prints values with ``%6.4f``; to compare at 1e-9 the
*precise* build adds one header of ours on the compiler's command line
(``-include``) that rewrites that format to ``%.17g`` (every double printed exactly);
trec_eval's own files are not touched. Callers skip with a reason when the source
or a C compiler is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "shared" / "tools" / "trec_eval-10.0"
BUILD_TIMEOUT_S = 300
RUN_TIMEOUT_S = 120

_PRECISE_H = r"""
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
/* ragmeter tests: print trec_eval's %6.4f values with every digit (%.17g). */
__attribute__((unused)) static int ragmeter_precise_printf(const char *format, ...) {
    char rewritten[512];
    const char *found = strstr(format, "%6.4f");
    va_list args;
    int n;
    va_start(args, format);
    if (found != NULL && strlen(format) < 400) {
        size_t head = (size_t) (found - format);
        memcpy(rewritten, format, head);
        strcpy(rewritten + head, "%.17g");
        strcat(rewritten, found + 5);
        n = vprintf(rewritten, args);
    } else {
        n = vprintf(format, args);
    }
    va_end(args);
    return n;
}
#define printf ragmeter_precise_printf
"""


def missing_reason() -> str | None:
    """Why trec_eval 10 cannot be built here, or None."""
    if not (SOURCE / "Makefile").exists():
        return f"trec_eval 10 source not found at {SOURCE} (needs ../shared/tools)"
    if shutil.which("make") is None or shutil.which("gcc") is None:
        return "trec_eval 10 needs make and gcc to build"
    return None


def build(folder: Path, *, precise: bool = True) -> Path:
    """Copy the source into ``folder`` and build it; returns the binary's path."""
    target = folder / "trec_eval-10.0"
    shutil.copytree(SOURCE, target)
    command = ["make", "-s", "-C", str(target), "trec_eval"]
    if precise:
        header = folder / "ragmeter_precise.h"
        header.write_text(_PRECISE_H)
        command.append(
            f'CFLAGS=-g -I. -w -DVERSIONID=\\"10.0\\" -include {header}'  # -w: their warnings
        )
    subprocess.run(command, check=True, capture_output=True, timeout=BUILD_TIMEOUT_S)
    return target / "trec_eval"


def write_qrels(path: Path, qrels: Mapping[str, Mapping[str, int]]) -> Path:
    path.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, judged in qrels.items() for d, g in judged.items())
    )
    return path


def write_run(path: Path, run: Mapping[str, Mapping[str, float]]) -> Path:
    """A TREC run; scores written with every digit so trec_eval reads the same doubles."""
    lines = []
    for q, ranking in run.items():
        for rank, (doc, score) in enumerate(ranking.items(), 1):
            lines.append(f"{q} Q0 {doc} {rank} {score!r} tag\n")
    path.write_text("".join(lines))
    return path


def evaluate(
    binary: Path, qrels: Path, run: Path, measures: Iterable[str], *options: str
) -> dict[str, dict[str, float]]:
    """``{qid: {measure: value}}`` from ``trec_eval -q -c`` (the ``all`` row too)."""
    command = [str(binary), "-q", "-c", *options]
    for measure in measures:
        command += ["-m", measure]
    done = subprocess.run(
        [*command, str(qrels), str(run)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"trec_eval failed ({done.returncode}): {done.stderr[-2000:]}")
    out: dict[str, dict[str, float]] = {}
    for line in done.stdout.splitlines():
        name, qid, value = line.split()
        try:
            number = float(value)
        except ValueError:
            continue  # runid, relstring
        out.setdefault(qid, {})[name] = number
    return out
