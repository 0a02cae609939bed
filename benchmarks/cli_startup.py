"""Fixed cost of a command (issue 29.3): `ragmeter --help` and `import ragmeter`.

Each command runs as a whole process, interleaved with the floor (`python -c pass`, the
interpreter's own start-up), ``--runs`` times; the medians and the ratio to the floor are
printed, with the modules each one imports. Target: ``ragmeter --help`` <= 0.15 s.

Run: ``.venv/bin/python benchmarks/cli_startup.py [--runs 15]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from _bytecode import compile_package

HELP = "from ragmeter.cli import run; import sys; sys.argv = ['ragmeter', '--help']; run()"
CASES = {
    "floor: python -c pass": "pass",
    "import ragmeter": "import ragmeter",
    "ragmeter --help": HELP,
    "ragmeter eval --help": HELP.replace("'--help'", "'eval', '--help'"),
}


def _once(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    return time.perf_counter() - start


def _modules(code: str) -> int:
    wrapped = f"import sys\ntry:\n    exec({code!r})\nexcept SystemExit:\n    pass\n"
    wrapped += "print(len(sys.modules), file=sys.stderr)"
    done = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True)
    return int(done.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    compile_package()
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for code in CASES.values():
        _once(code)  # warm the file cache
    for _ in range(args.runs):
        for name, code in CASES.items():
            times[name].append(_once(code))
    floor = statistics.median(times["floor: python -c pass"])
    print(f"{'command':<24} {'median':>9} {'÷ floor':>8} {'modules':>8}")
    for name, code in CASES.items():
        median = statistics.median(times[name])
        print(f"{name:<24} {median:>8.3f}s {median / floor:>7.1f}x {_modules(code):>8}")


if __name__ == "__main__":
    main()
