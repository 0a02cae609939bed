"""A tiny OpenAI-compatible chat server on loopback (stdlib only) for re-rank/rewrite tests.

``POST /v1/chat/completions``: a re-rank prompt ("Grade how well …") is answered with
``{"scores": [...]}``, each passage scored by how many question words it contains (max 3);
any other prompt gets ``reply`` (default "feline, meow, purring"). ``mode="bad"`` answers
prose without JSON; ``mode="500"`` answers HTTP 500. Requests are recorded.

``mode="judge"`` plays a deterministic judge: a faithfulness prompt ("CONTEXT: …") is
answered ``supported`` exactly when the answer's text occurs in the context, except that
an answer containing ``GARBLE`` gets prose (so it ends as a recorded error); a relevance
prompt ("Question: …") gets a grade counting the question words in the passage (max 3).

``mode="flaky"`` is that judge changing its mind: the second time it sees a faithfulness
prompt whose answer contains ``Within``, it inverts its verdict (issue 17.4's repeats).
``mode="wobbly"`` does the same by the answer's number (``Widget N …``): on its second
sight of a prompt it inverts the verdict when ``N % 5 == 1`` and answers prose (a failed
repeat) when ``N % 7 == 2``; which repeat that is depends on arrival order, not content.
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
    seen: dict[str, int] = field(default_factory=dict)
    # Guards ``seen`` in "wobbly": repeats sent at once arrive on parallel threads.
    lock: threading.Lock = field(default_factory=threading.Lock)


def _overlap(question: str, passage: str) -> int:
    words = set(re.findall(r"\w+", question.lower()))
    return min(3, len(words & set(re.findall(r"\w+", passage.lower()))))


def _judge_reply(prompt: str) -> str:
    faithfulness = re.match(
        r"CONTEXT:\n(.*)\n\nQUESTION: .*\n\nANSWER: (.*?)\n\nReply", prompt, re.S
    )
    if faithfulness:
        context, answer = faithfulness.groups()
        if "GARBLE" in answer:
            return "Let me think about that."
        supported = answer.strip() in context
        claims = [] if supported else [answer.strip()[:100]]
        return json.dumps({"supported": supported, "unsupported_claims": claims, "reason": "r"})
    relevance = re.match(r"Question: (.*)\n\nPassage:\n(.*)\n\nReply", prompt, re.S)
    if relevance:
        return json.dumps({"grade": _overlap(*relevance.groups()), "reason": "overlap"})
    return "I do not recognise this prompt."


def _scores(prompt: str) -> list[int]:
    question = re.search(r"Question: (.*)", prompt)
    passages = re.findall(r"^\[\d+\] (.*)$", prompt, flags=re.MULTILINE)
    return [_overlap(question.group(1) if question else "", p) for p in passages]


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
            elif state.mode == "judge":
                content = _judge_reply(prompt)
            elif state.mode == "flaky":
                state.seen[prompt] = calls = state.seen.get(prompt, 0) + 1
                content = _judge_reply(prompt)
                if calls == 2 and "ANSWER: Within" in prompt:
                    verdict = json.loads(content)
                    supported = not verdict["supported"]
                    claims = [] if supported else ["Within"]
                    content = json.dumps(
                        {"supported": supported, "unsupported_claims": claims, "reason": "r"}
                    )
            elif state.mode == "wobbly":
                with state.lock:
                    state.seen[prompt] = calls = state.seen.get(prompt, 0) + 1
                content = _judge_reply(prompt)
                number = re.search(r"ANSWER: Widget (\d+)", prompt)
                n = int(number.group(1)) if number else -1
                if calls == 2 and n % 7 == 2:
                    content = "Let me think about that."
                elif calls == 2 and n % 5 == 1:
                    verdict = json.loads(content)
                    supported = not verdict["supported"]
                    claims = [] if supported else [f"Widget {n}"]
                    content = json.dumps(
                        {"supported": supported, "unsupported_claims": claims, "reason": "r"}
                    )
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
