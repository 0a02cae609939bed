"""A tiny OpenAI-compatible chat server on loopback (stdlib only) for re-rank/rewrite tests.

``POST /v1/chat/completions``: a re-rank prompt ("Grade how well …") is answered with
``{"scores": [...]}``, each passage scored by how many question words it contains (max 3);
any other prompt gets ``reply`` (default "feline, meow, purring"). ``mode="bad"`` answers
prose without JSON; ``mode="500"`` answers HTTP 500. Requests are recorded.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ChatState:
    base_url: str = ""
    mode: str = "ok"
    reply: str = "feline, meow, purring"
    requests: list[dict[str, Any]] = field(default_factory=list)


def _scores(prompt: str) -> list[int]:
    question = re.search(r"Question: (.*)", prompt)
    words = {w for w in re.findall(r"\w+", (question.group(1) if question else "").lower())}
    passages = re.findall(r"^\[\d+\] (.*)$", prompt, flags=re.MULTILINE)
    return [min(3, len(words & set(re.findall(r"\w+", p.lower())))) for p in passages]


@contextmanager
def serve_chat(mode: str = "ok") -> Iterator[ChatState]:
    state = ChatState(mode=mode)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            if state.mode == "500":
                self.send_response(500)
                self.end_headers()
                return
            prompt = body["messages"][-1]["content"]
            if state.mode == "bad":
                content = "I think passage two is best."
            elif prompt.startswith("Grade how well"):
                content = json.dumps({"scores": _scores(prompt)})
            else:
                content = state.reply
            payload = {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "m"),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
