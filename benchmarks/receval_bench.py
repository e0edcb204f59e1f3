"""ReCEval NLI scoring: batched, de-duplicated scorer vs one pair per forward pass.

The released ReCEval code runs the NLI model once per (premise, hypothesis) pair. procrl
collects the pairs of a whole batch of chains, computes identical pairs once and runs the rest
in length-sorted batches. Both run here on the same tiny local DeBERTa-v2 NLI model (random
weights, built on the fly) and the same GSM8K-like chains (GSM8K train reference solutions
from ../shared/data/gsm8k when present, else embedded GSM8K-style problems); the script
prints pairs/s of each, the speed ratio and the largest absolute difference of the
probabilities and chain scores, and exits 1 if the ratio is below --min-ratio or the
difference above 1e-4. On CPU the gain is the per-forward-pass overhead saved: with one torch
thread it is ~5x on the 2-core box (batched passes are then compute-bound); with several
threads each of the naive loop's tiny passes also pays the thread pool's synchronisation, so
the ratio grows (and depends on how busy the machine is); on a GPU it is far larger.

    python benchmarks/receval_bench.py [--chains 64] [--batch-size 64] [--hidden 32] [--threads N]
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
    parser.add_argument("--min-ratio", type=float, default=5.0, help="Fail below this speed ratio.")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads for both (default: torch's default, what a run gets).")
    args = parser.parse_args(argv)

    import os

    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    args.threads = torch.get_num_threads()

    from procrl.rewards.base import RewardBatch
    from procrl.rewards.nli import NLIScorer, write_tiny_nli_model
    from procrl.rewards.receval import ReCEvalCorrectness, chain_minimum, score_correctness_plan

    rows, source = load_chains(args.chains)
    batch = RewardBatch.from_texts([r["answer"] for r in rows], [r["question"] for r in rows], [r["answer"] for r in rows])
    with tempfile.TemporaryDirectory() as directory:
        model_dir = write_tiny_nli_model(Path(directory) / "nli", id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
                                         seed=0, hidden_size=args.hidden)
        component = ReCEvalCorrectness(ReCEvalCorrectness.Settings(nli_model=str(model_dir)))
        plans, _ = component.plan(batch)
        plans = [p for p in plans if p is not None]
        pairs = [pair for plan in plans for pair in plan.pairs()]

        naive = NLIScorer(str(model_dir), cache_size=0)
        batched = NLIScorer(str(model_dir), batch_size=args.batch_size)
        naive.score_one_by_one(pairs[:2])  # load and warm up both models outside the timing
        NLIScorer(str(model_dir), batch_size=args.batch_size).score(pairs[:2])
        batched._load()

        started = time.perf_counter()
        naive_values = naive.score_one_by_one(pairs)
        naive_seconds = time.perf_counter() - started
        started = time.perf_counter()
        batched_values = batched.score(pairs)
        batched_seconds = time.perf_counter() - started

    naive_map = dict(zip(pairs, naive_values))
    probability_diff = max(abs(a - b) for pair in pairs for a, b in zip(naive_map[pair], batched_values[pair]))
    chain_diff = max(
        abs(chain_minimum(score_correctness_plan(plan, naive_map)[0])[0] - chain_minimum(score_correctness_plan(plan, batched_values)[0])[0])
        for plan in plans
    )
    naive_rate = len(pairs) / naive_seconds
    batched_rate = len(pairs) / batched_seconds
    ratio = batched_rate / naive_rate
    print(f"chains: {len(plans)} from {source}")
    print(f"pairs: {len(pairs)} ({len(set(pairs))} unique); tiny DeBERTa-v2 NLI, hidden {args.hidden}, 2 layers, "
          f"{args.threads} torch thread(s)")
    print(f"naive (1 pair per forward pass): {naive_rate:10.1f} pairs/s  ({naive_seconds:.3f} s, {len(pairs)} passes)")
    print(f"batched + de-duplicated:         {batched_rate:10.1f} pairs/s  ({batched_seconds:.3f} s, "
          f"{batched.stats['forward_passes']} passes of <= {args.batch_size})")
    print(f"speed ratio: {ratio:.1f}x  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"max |difference|: probabilities {probability_diff:.2e}, chain scores {chain_diff:.2e}")
    ok = ratio >= args.min_ratio and probability_diff <= 1e-4 and chain_diff <= 1e-4
    print("PASS" if ok else f"FAIL (need >= {args.min_ratio}x and differences <= 1e-4)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
