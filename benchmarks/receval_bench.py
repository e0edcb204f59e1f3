"""ReCEval NLI scoring: batched, de-duplicated scorer vs one pair per forward pass.

The released ReCEval code runs the NLI model once per (premise, hypothesis) pair. procrl
collects the pairs of a whole batch of chains, computes identical pairs once and runs the rest
in length-sorted batches. Both run here on the same tiny local DeBERTa-v2 NLI model (random
weights, built on the fly) and the same GSM8K-like chains (GSM8K train reference solutions
from ../shared/data/gsm8k when present, else embedded GSM8K-style problems); the script
prints pairs/s of each, the speed ratio and the largest absolute difference of the
probabilities and chain scores, and exits 1 if the ratio is below --min-ratio or the
difference above 1e-4. On CPU the gain is the per-forward-pass overhead saved, plus the
padding the token budget avoids: with one torch thread (``--threads 1``, run with
``OMP_NUM_THREADS=1``) the batched passes are compute-bound (the floor checked here is 4x; the
measured ratios are in docs/receval.md); with several threads each of
the naive loop's tiny passes also pays the thread pool's synchronisation, so the ratio grows
and swings with how busy the machine is (floor 5x); on a GPU it is far larger. Each of
``--repeats`` rounds times the naive loop and the batched scorer back to back (and, for
reference, the batched scorer without its token budget); the script reports medians and the
range over rounds, and the median of the per-round ratios.

    OMP_NUM_THREADS=1 python benchmarks/receval_bench.py --threads 1 [--repeats 5] [--chains 64] \\
        [--batch-size 64] [--hidden 32]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
GSM8K_TRAIN = REPO_ROOT.parent / "shared" / "data" / "gsm8k" / "train.jsonl"


def load_chains(count: int) -> tuple[list[dict], str]:
    if GSM8K_TRAIN.is_file():
        rows = []
        with GSM8K_TRAIN.open() as handle:
            for line in handle:
                rows.append(json.loads(line))
                if len(rows) == count:
                    break
        return rows, f"GSM8K train reference solutions ({GSM8K_TRAIN})"
    from procrl.data.synthetic import generate_problems

    return generate_problems(count, seed=0), "embedded GSM8K-style problems"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=64, help="Number of reasoning chains.")
    parser.add_argument("--batch-size", type=int, default=64, help="Pairs per forward pass of the batched scorer.")
    parser.add_argument("--hidden", type=int, default=32, help="Hidden size of the tiny NLI model.")
    parser.add_argument(
        "--repeats", type=int, default=5, help="Timed rounds (naive then batched, back to back); medians are reported."
    )
    parser.add_argument(
        "--min-ratio",
        type=float,
        default=None,
        help="Fail when the median speed ratio is below this (default: 4 with one torch thread, else 5).",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads for both (default: torch's default, what a run gets)."
    )
    args = parser.parse_args(argv)

    import os
    import statistics

    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    args.threads = torch.get_num_threads()
    if args.min_ratio is None:
        args.min_ratio = 4.0 if args.threads == 1 else 5.0

    from procrl.rewards import RewardBatch
    from procrl.rewards.receval import ReCEvalCorrectness, chain_minimum, score_correctness_plan
    from procrl.rewards.scorers.nli import NLIScorer, write_tiny_nli_model

    rows, source = load_chains(args.chains)
    batch = RewardBatch.from_texts(
        [r["answer"] for r in rows], [r["question"] for r in rows], [r["answer"] for r in rows]
    )
    naive_times, batched_times, fixed_times, ratios, passes, fixed_passes = [], [], [], [], 0, 0
    with tempfile.TemporaryDirectory() as directory:
        model_dir = write_tiny_nli_model(
            Path(directory) / "nli",
            id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
            seed=0,
            hidden_size=args.hidden,
        )
        component = ReCEvalCorrectness(ReCEvalCorrectness.Settings(nli_model=str(model_dir)))
        plans, _ = component.plan(batch)
        plans = [p for p in plans if p is not None]
        pairs = [pair for plan in plans for pair in plan.pairs()]

        naive = NLIScorer(str(model_dir), cache_size=0)
        naive.score_one_by_one(pairs[:2])  # load and warm up the model outside the timing
        model, tokenizer = naive._model, naive._tokenizer
        NLIScorer(model, tokenizer=tokenizer, batch_size=args.batch_size).score(pairs[:2])
        for _ in range(args.repeats):  # back to back, so that each ratio sees the same machine load
            started = time.perf_counter()
            naive_values = naive.score_one_by_one(pairs)
            naive_times.append(time.perf_counter() - started)
            batched = NLIScorer(model, tokenizer=tokenizer, batch_size=args.batch_size)  # a fresh, empty cache
            started = time.perf_counter()
            batched_values = batched.score(pairs)
            batched_times.append(time.perf_counter() - started)
            ratios.append(naive_times[-1] / batched_times[-1])
            passes = batched.stats["forward_passes"]
            # reference: the same without the token budget (fixed, length-sorted batches of batch_size)
            fixed = NLIScorer(model, tokenizer=tokenizer, batch_size=args.batch_size, max_batch_tokens=1 << 62)
            started = time.perf_counter()
            fixed.score(pairs)
            fixed_times.append(time.perf_counter() - started)
            fixed_passes = fixed.stats["forward_passes"]

    naive_map = dict(zip(pairs, naive_values))
    probability_diff = max(abs(a - b) for pair in pairs for a, b in zip(naive_map[pair], batched_values[pair]))
    chain_diff = max(
        abs(
            chain_minimum(score_correctness_plan(plan, naive_map)[0])[0]
            - chain_minimum(score_correctness_plan(plan, batched_values)[0])[0]
        )
        for plan in plans
    )
    ratio = statistics.median(ratios)
    print(f"chains: {len(plans)} from {source}")
    print(
        f"pairs: {len(pairs)} ({len(set(pairs))} unique); tiny DeBERTa-v2 NLI, hidden {args.hidden}, 2 layers, "
        f"{args.threads} torch thread(s); {args.repeats} rounds, medians (min-max)"
    )
    for name, times, detail in (
        ("naive (1 pair per forward pass)", naive_times, f"{len(pairs)} passes"),
        (
            "batched + de-duplicated",
            batched_times,
            f"{passes} passes of <= {args.batch_size} pairs, <= {64 * args.batch_size} tokens",
        ),
        ("  same, fixed batches (reference)", fixed_times, f"{fixed_passes} passes of {args.batch_size} pairs"),
    ):
        median = statistics.median(times)
        print(
            f"{name:<32} {len(pairs) / median:8.1f} pairs/s "
            f" ({median:.3f} s, {min(times):.3f}-{max(times):.3f}; {detail})"
        )
    print(
        f"speed ratio: median {ratio:.1f}x ({min(ratios):.1f}-{max(ratios):.1f}x over rounds; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    print(f"max |difference|: probabilities {probability_diff:.2e}, chain scores {chain_diff:.2e}")
    ok = ratio >= args.min_ratio and probability_diff <= 1e-4 and chain_diff <= 1e-4
    print("PASS" if ok else f"FAIL (need a median >= {args.min_ratio}x and differences <= 1e-4)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
