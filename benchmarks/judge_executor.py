"""The faithfulness judge on the local executor and on Ray (issue 9).

A stand-in model server (a separate process on loopback, stdlib only) answers every
chat completion with a valid verdict after ``--latency-ms``. The same cases are
judged with ``JudgeClient(executor="local")`` and ``executor="ray"`` (a local Ray with
``--ray-cpus`` CPUs, one worker each), at the same per-process ``--concurrency``, and
the benchmark prints seconds, requests per second and Ray's speed-up. No cache, so
every case is a request.

What it shows: with Ray, in-flight requests grow with the workers (workers x
concurrency), so a latency-bound judge scales with the cluster; on one small machine
the gain is capped by the CPU the ``openai`` client spends per request.

Run: ``.venv/bin/python benchmarks/judge_executor.py [--cases 400] [--latency-ms 100]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERDICT = json.dumps({"supported": True, "unsupported_claims": [], "reason": "ok"})


def serve(latency_s: float) -> None:
    """The stand-in model server; prints its port, then serves until killed."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: with Nagle on, delayed ACKs add ~40 ms.
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(latency_s)
            message = {"role": "assistant", "content": VERDICT}
            body = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "judge",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--ray-cpus", type=int, default=2)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency_ms / 1000.0)
        return

    import ray

    from ragmeter.judge import JudgeClient
    from ragmeter.judge.faithfulness import FaithfulnessCase, judge_faithfulness

    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--latency-ms", str(args.latency_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
        cases = [
            FaithfulnessCase(f"c{i}", f"question {i}", (f"context {i}",), f"answer {i}")
            for i in range(args.cases)
        ]
        ray.init(num_cpus=args.ray_cpus, include_dashboard=False, logging_level="warning")
        # Workers import ragmeter and openai once; that start-up is not what is measured.
        warm = JudgeClient(model="judge", base_url=base_url, executor="ray")
        judge_faithfulness(warm, cases[: 2 * args.ray_cpus])
        seconds = {}
        for executor in ("local", "ray"):
            client = JudgeClient(
                model="judge", base_url=base_url, executor=executor, concurrency=args.concurrency
            )
            started = time.perf_counter()
            batch = judge_faithfulness(client, cases)
            seconds[executor] = time.perf_counter() - started
            if len(batch.verdicts) != len(cases):
                raise SystemExit(f"{executor}: {len(batch.errors)} errors: {batch.errors}")
            print(
                f"{executor:>5}: {len(cases)} requests in {seconds[executor]:.2f} s "
                f"({len(cases) / seconds[executor]:.0f}/s)"
            )
        ideal = args.cases * args.latency_ms / 1000.0 / args.concurrency
        print(
            f"ray / local speed-up: {seconds['local'] / seconds['ray']:.2f}x with "
            f"{args.ray_cpus} workers x concurrency {args.concurrency} "
            f"(latency-bound ideal: local {ideal:.1f} s, ray {ideal / args.ray_cpus:.1f} s)"
        )
    finally:
        server.kill()
        server.wait()
        ray.shutdown()


if __name__ == "__main__":
    main()
