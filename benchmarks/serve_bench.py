"""Throughput and latency of ``procrl serve`` against scoring the same rows in-process.

The server runs as ``procrl serve`` in its own process (as an engine reaches it); clients are
threads of this process, each on its own keep-alive connection, each posting OpenRLHF's request for
one response at a time (its single-turn executor's ``{"query", "prompts", "labels"}``). At 1, 8 and
64 concurrent clients: requests per second and p50/p95 latency. The baseline, in the same run:
the same rows scored in-process by ``procrl score``'s code (:func:`procrl.evaluation.score.score_rows`,
batches of 64), rows per second. Rows: GSM8K reference solutions (``--gsm8k``) or the embedded
generator's problems; the mix: the recipe's (model-free by default).

    python benchmarks/serve_bench.py [--recipe recipes/gsm8k_tiny_process.yaml] [--gsm8k DIR] [--requests 512]

Is the client the bottleneck? The same clients, at each level, also post to ``/health`` (no
scoring: the server's and the clients' HTTP work alone); the CPU seconds the client process spends
per request are printed beside each level. When the ``/health`` ceiling is far above the scored
rate, the clients are not what limits it.

Wall-clock on a shared machine (clients, server and baseline share its cores, other work may run
on them): compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import inspect
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PROMPT = "<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


def load_rows(gsm8k: str | None, count: int) -> list[dict]:
    if gsm8k and (Path(gsm8k) / "train.jsonl").is_file():
        lines = (Path(gsm8k) / "train.jsonl").read_text(encoding="utf-8").splitlines()[:count]
        problems = [json.loads(line) for line in lines]
        source = f"GSM8K train, first {len(problems)} reference solutions"
    else:
        from procrl.data.synthetic import generate_problems

        problems = generate_problems(count, seed=0)
        source = f"{len(problems)} embedded generator problems, reference solutions"
    rows = [{"question": p["question"], "completion": p["answer"], "answer": p["answer"]} for p in problems]
    return rows, source


def in_process(recipe: str, rows: list[dict], batch_size: int, repeats: int = 3) -> dict:
    """Rows per second of ``procrl score``'s code on ``rows``: the median of ``repeats`` passes
    (the machine is shared: one pass can fall on another's work)."""
    from procrl.evaluation.score import score_rows
    from procrl.recipe import load_recipe
    from procrl.rewards.mix import RewardMix

    mix = RewardMix(load_recipe(recipe, scoring=True).rewards)
    list(score_rows(mix, rows[:8]))  # components loaded, as the server's warm-up does
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        scored = list(score_rows(mix, rows, batch_size=batch_size))
        rates.append(len(scored) / (time.perf_counter() - started))
    return {"rows": len(rows), "batch_size": batch_size, "rows_per_s": statistics.median(rates), "passes": rates}


def engines(recipe: str, rows: list[dict], repeats: int = 3) -> dict:
    """Rows per second through the other two routes, median of ``repeats`` passes: a TRL script's
    reward functions (procrl.trl, every component on batches of 64, as GRPOTrainer calls them) and
    verl's functions (procrl/verl.py: ``compute_score`` one response per call, as verl's naive
    manager calls it, and ``compute_score_batch`` on batches of 64)."""
    from procrl.trl import recipe_rewards
    from procrl.verl import compute_score, compute_score_batch

    funcs = recipe_rewards(recipe, diagnostics=False).funcs
    prompts = [PROMPT.format(question=r["question"]) for r in rows]

    def trl() -> None:
        for start in range(0, len(rows), 64):
            chunk = rows[start : start + 64]
            arguments = (prompts[start : start + 64], [r["completion"] for r in chunk])
            columns = {"question": [r["question"] for r in chunk], "answer": [r["answer"] for r in chunk]}
            for func in funcs:  # an async component's function is awaited, as GRPOTrainer does
                result = func(*arguments, **columns)
                if inspect.isawaitable(result):
                    asyncio.run(result)

    def verl_single() -> None:
        for r in rows:
            compute_score("openai/gsm8k", r["completion"], r["answer"], {"question": r["question"]}, recipe=recipe)

    def verl_batch() -> None:
        infos = [{"question": r["question"]} for r in rows]
        compute_score_batch(
            ["openai/gsm8k"] * len(rows),
            [r["completion"] for r in rows],
            [r["answer"] for r in rows],
            infos,
            recipe=recipe,
        )

    results = {}
    for name, work in (
        ("trl_reward_funcs_64", trl),
        ("verl_compute_score", verl_single),
        ("verl_compute_score_batch_64", verl_batch),
    ):
        work()  # warm: components loaded
        rates = []
        for _ in range(repeats):
            started = time.perf_counter()
            work()
            rates.append(len(rows) / (time.perf_counter() - started))
        results[name] = {"rows_per_s": statistics.median(rates), "passes": rates}
    return results


def start_server(recipe: str) -> tuple[subprocess.Popen, int]:
    command = [sys.executable, "-m", "procrl.launch.cli", "serve", "--recipe", recipe, "--port", "0", "--quiet"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=REPO)
    line = process.stderr.readline()
    if "http://" not in line:
        process.kill()
        raise SystemExit(f"procrl serve did not start: {line}{process.stderr.read()}")
    port = int(line.split("http://")[1].split()[0].rsplit(":", 1)[1])
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # the port answers 503 until the mix is warm
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/health")
        if connection.getresponse().status == 200:
            return process, port
        time.sleep(0.1)
    process.kill()
    raise SystemExit("procrl serve did not warm up within 300 s")


def run_clients(port: int, rows: list[dict], clients: int, requests: int, path: str = "/get_reward") -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            row = rows[i % len(rows)]
            prompt = PROMPT.format(question=row["question"])
            body = json.dumps({"query": [prompt + row["completion"]], "prompts": [prompt], "labels": [row["answer"]]})
            started = time.perf_counter()
            if path == "/health":
                connection.request("GET", path)
            else:
                connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            data = response.read()
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                if response.status != 200:
                    errors.append(f"{response.status} {data[:200]!r}")
        connection.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    cpu = time.process_time()
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    ordered = sorted(latencies)
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "seconds": seconds,
        "requests_per_s": len(latencies) / seconds,
        "client_cpu_ms_per_request": 1000 * cpu / max(len(latencies), 1),
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
    }


def health(port: int) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/health")
    return json.loads(connection.getresponse().read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=str(REPO / "recipes" / "gsm8k_tiny_process.yaml"))
    parser.add_argument("--gsm8k", default=str(REPO.parent / "shared" / "data" / "gsm8k"))
    parser.add_argument("--requests", type=int, default=512, help="Requests (= rows) per concurrency level.")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--output", default=None, help="Write the results as JSON and a Markdown table (stem).")
    args = parser.parse_args()

    rows, source = load_rows(args.gsm8k, args.requests)
    before = in_process(args.recipe, rows, 64)
    one_by_one = in_process(args.recipe, rows, 1)
    routes = engines(args.recipe, rows)
    process, port = start_server(args.recipe)
    try:
        levels = []
        for clients in args.clients:
            start = health(port)
            level = run_clients(port, rows, clients, args.requests)
            end = health(port)
            ceiling = run_clients(port, rows, clients, args.requests, "/health")
            level["health_requests_per_s"] = ceiling["requests_per_s"]
            batches = end["batches_scored"] - start["batches_scored"]
            level["rows_per_batch"] = (end["rows_scored"] - start["rows_scored"]) / max(batches, 1)
            levels.append(level)
    finally:
        process.terminate()
        process.wait(timeout=30)
    # the baseline measured before and after the served levels (the machine is shared: its load
    # moves): the median of all its passes, every ratio against it
    after = in_process(args.recipe, rows, 64)
    passes = before["passes"] + after["passes"]
    baseline = {**before, "rows_per_s": statistics.median(passes), "passes": passes}
    for level in levels:
        level["vs_in_process"] = level["requests_per_s"] / baseline["rows_per_s"]

    lines = [
        f"procrl serve vs in-process scoring: {source}; recipe {os.path.relpath(args.recipe, REPO)}; "
        f"{os.cpu_count()} CPUs (shared)",
        "",
        "| clients | requests/s | p50 ms | p95 ms | rows per mix batch | errors | vs in-process "
        "| client CPU ms/request | same clients on /health, requests/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for level in levels:
        lines.append(
            f"| {level['clients']} | {level['requests_per_s']:.1f} | {level['p50_ms']:.1f} | {level['p95_ms']:.1f} "
            f"| {level['rows_per_batch']:.1f} | {level['errors']} | {level['vs_in_process']:.2f}x "
            f"| {level['client_cpu_ms_per_request']:.2f} | {level['health_requests_per_s']:.0f} |"
        )
    lines.append(
        f"| in-process (`procrl score`, batches of 64) | {baseline['rows_per_s']:.1f} rows/s | | | 64 | | 1.00x |"
    )
    lines.append(
        f"| in-process, one row per batch | {one_by_one['rows_per_s']:.1f} rows/s | | | 1 | "
        f"| {one_by_one['rows_per_s'] / baseline['rows_per_s']:.2f}x |"
    )
    names = {
        "trl_reward_funcs_64": "TRL script: procrl.trl reward functions, batches of 64",
        "verl_compute_score": "verl: compute_score, one response per call",
        "verl_compute_score_batch_64": "verl: compute_score_batch, batches of 64",
    }
    for key, route in routes.items():
        ratio = route["rows_per_s"] / baseline["rows_per_s"]
        lines.append(f"| {names[key]} | {route['rows_per_s']:.1f} rows/s | | | | | {ratio:.2f}x |")
    table = "\n".join(lines)
    print(table)
    if args.output:
        result = {
            "source": source,
            "recipe": os.path.relpath(args.recipe, REPO),
            "in_process": baseline,
            "in_process_one_row_per_batch": one_by_one,
            "engines": routes,
            "served": levels,
        }
        Path(args.output + ".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        Path(args.output + ".md").write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
