"""Judge throughput: N first-error judge calls against a local OpenAI-compatible server that
answers after a fixed latency, with the ``concurrency`` bound vs one call at a time.

Expected: concurrent time ~= ceil(N / concurrency) x latency; the ratio against sequential
calls ~= concurrency (16 for the defaults). The server runs in its own process (as a real judge
server would be on its own machine).

    python benchmarks/judge_bench.py [--calls 64] [--latency 0.2] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import time

from procrl.rewards import RewardBatch, RewardMix, parse_rewards
from procrl.testing.openai_server import Reply, ScriptedOpenAIServer


def run(base_url: str, calls: int, concurrency: int, tag: str) -> float:
    mix = RewardMix(
        parse_rewards(
            {
                "first_error": {
                    "backend": "openai",
                    "model": "judge",
                    "base_url": base_url,
                    "concurrency": concurrency,
                    "cache_size": 0,
                    "timeout_s": 30.0,
                    "max_retries": 0,
                }
            }
        )
    )
    completions = [f"{i} + 1 = {i + 1}.\nThen {i + 1} * 2 = {2 * i + 2}.\n#### {2 * i + 2}" for i in range(calls)]
    batch = RewardBatch.from_texts(completions, [f"{tag} question {i}" for i in range(calls)])
    _ = batch.segmentations  # segment outside the timed region: only judge calls are measured
    started = time.perf_counter()
    output = mix.compute("first_error", batch)
    elapsed = time.perf_counter() - started
    judged = sum(d["verdict"] == "ok" for d in output.details)
    if judged != calls:
        raise SystemExit(f"only {judged}/{calls} calls got a verdict: {output.failures}")
    return elapsed


class FixedLatency:
    """Responder: every call answers the same verdict after ``latency`` seconds."""

    def __init__(self, latency: float):
        self.latency = latency

    def __call__(self, prompt: str, attempt: int) -> Reply:
        return Reply("Looks right. \\boxed{-1}", delay_s=self.latency)


def serve(latency: float, urls, stop) -> None:
    """The server in its own process, so that its Python work does not share the client's GIL
    (a real judge server is another machine)."""
    with ScriptedOpenAIServer(FixedLatency(latency)) as server:
        urls.put(server.base_url)
        stop.wait()
        urls.put(server.max_in_flight)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2, help="Server latency per call, seconds.")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    context = multiprocessing.get_context("spawn")
    urls, stop = context.Queue(), context.Event()
    process = context.Process(target=serve, args=(args.latency, urls, stop), daemon=True)
    process.start()
    try:
        base_url = urls.get(timeout=60)
        run(base_url, 2, 2, "warmup")
        sequential = run(base_url, args.calls, 1, "sequential")
        concurrent = run(base_url, args.calls, args.concurrency, "concurrent")
        stop.set()
        in_flight = urls.get(timeout=10)
    finally:
        stop.set()
        process.join(timeout=10)
    ideal = math.ceil(args.calls / args.concurrency) * args.latency
    print(f"{args.calls} judge calls, {args.latency * 1000:.0f} ms server latency")
    print(f"  sequential (concurrency 1):   {sequential:6.2f} s   (ideal {args.calls * args.latency:.2f} s)")
    print(
        f"  concurrency {args.concurrency:<3}:              {concurrent:6.2f} s"
        f"   (ideal {ideal:.2f} s = {args.calls}/{args.concurrency} x {args.latency} s)"
    )
    print(f"  most requests in flight: {in_flight}")
    print(f"  speed-up vs sequential: {sequential / concurrent:.1f}x (ideal {args.concurrency}x)")


if __name__ == "__main__":
    main()
