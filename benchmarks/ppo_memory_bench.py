"""Peak memory of scoring a PPO rollout (policy log-probs, values, entropy), before and after the
rollout takes log-probs and entropy from the completion positions a row at a time.

``before``: the full-batch variant, reproduced here: one forward over the batch
returning full-vocabulary logits at every position (prompt included), TRL's
``selective_log_softmax`` on the completion slice divided by the temperature, and the entropy as
``log_softmax(logits.float())``, its ``exp`` and their product over the whole (B, T, V) slice.
``after``: :func:`procrl.trainers.ppo.trainer.rollout_scores` as the trainer calls it (the LM
head on the completion positions only, ``ROLLOUT_CHUNK_ROWS`` rows per pass, TRL's
``selective_log_softmax_and_entropy``).

The model is a random Qwen2 (hidden 64, 2 layers, a value head on the policy) with the
vocabulary under test, float32 on CPU: the LM head's output dominates, as it does at 7B. Each
(variant, vocabulary, length) runs in its own process; the figure is the growth of the process's
peak resident set (``ru_maxrss``) during the scoring, over its peak after building the model and
the inputs. ``one row`` is the size of one row's completion logits in float32 (T x V x 4 bytes),
``batch`` the batch's (B x T x V x 4).

    python benchmarks/ppo_memory_bench.py [--rows 4] [--prompt 32] [--json OUT] [--markdown OUT]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

VOCABS = [32768, 151936]  # Llama-2 / Mistral, Qwen2.5
LENGTHS = [128, 512]
MIB = 1024 * 1024


def _peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def measure(variant: str, vocab: int, length: int, rows: int, prompt: int) -> dict:
    """One measurement in this process (run it in a fresh one)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from procrl.trainers.ppo.model import PolicyAndValue, value_head_for
    from procrl.trainers.ppo.trainer import ROLLOUT_CHUNK_ROWS, rollout_scores

    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = Qwen2Config(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=prompt + length + 8,
        tie_word_embeddings=False,
    )
    policy = Qwen2ForCausalLM(config).eval()
    model = PolicyAndValue(policy, value_head_for(policy)).eval()
    input_ids = torch.randint(0, vocab, (rows, prompt + length))
    attention_mask = torch.ones_like(input_ids)
    completion_ids = input_ids[:, prompt:]
    temperature = 0.7
    baseline = _peak_bytes()
    with torch.no_grad():
        if variant == "before":
            logits, values = model(input_ids=input_ids, attention_mask=attention_mask)
            from trl.trainer.utils import selective_log_softmax

            logprobs = selective_log_softmax(logits[:, prompt - 1 : -1] / temperature, completion_ids)
            old_values = values[:, prompt - 1 : -1].float()
            scaled = logits[:, prompt - 1 : -1] / temperature
            logp = torch.log_softmax(scaled.float(), dim=-1)
            entropy = -(logp.exp() * logp).sum(-1)
            del logits, scaled, logp
        else:
            logprobs, old_values, entropy = rollout_scores(
                lambda ids, mask, keep: model(input_ids=ids, attention_mask=mask, logits_to_keep=keep),
                input_ids,
                attention_mask,
                completion_ids,
                prompt,
                temperature,
                with_entropy=True,
            )
    peak = _peak_bytes() - baseline
    return {
        "variant": variant,
        "vocab": vocab,
        "length": length,
        "rows": rows,
        "prompt": prompt,
        "chunk_rows": ROLLOUT_CHUNK_ROWS if variant == "after" else rows,
        "peak_mib": round(peak / MIB, 1),
        "one_row_logits_mib": round(length * vocab * 4 / MIB, 1),
        "batch_logits_mib": round(rows * length * vocab * 4 / MIB, 1),
        "checksum": [
            round(float(logprobs.sum()), 3),
            round(float(entropy.sum()), 3),
            round(float(old_values.sum()), 3),
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4, help="completions in the rollout batch")
    parser.add_argument("--prompt", type=int, default=32, help="prompt tokens per row")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--markdown", help="write the table here")
    parser.add_argument("--one", nargs=3, metavar=("VARIANT", "VOCAB", "LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        variant, vocab, length = args.one
        print(json.dumps(measure(variant, int(vocab), int(length), args.rows, args.prompt)))
        return
    results = []
    for vocab in VOCABS:
        for length in LENGTHS:
            for variant in ("before", "after"):
                command = [sys.executable, __file__, "--rows", str(args.rows), "--prompt", str(args.prompt)]
                out = subprocess.run(
                    [*command, "--one", variant, str(vocab), str(length)],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
                )
                results.append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(json.dumps(results[-1]), flush=True)
    pairs = {(r["vocab"], r["length"], r["variant"]): r for r in results}
    lines = [
        f"| vocabulary | completion tokens | one row's logits (MiB) | batch's logits, {args.rows} rows (MiB) "
        "| peak before (MiB) | peak after (MiB) | after / one row | same numbers |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for vocab in VOCABS:
        for length in LENGTHS:
            before, after = pairs[(vocab, length, "before")], pairs[(vocab, length, "after")]
            same = all(abs(a - b) <= 1e-3 * max(1.0, abs(a)) for a, b in zip(before["checksum"], after["checksum"]))
            lines.append(
                f"| {vocab:,} | {length} | {after['one_row_logits_mib']:.1f} | {after['batch_logits_mib']:.1f} "
                f"| {before['peak_mib']:.1f} | {after['peak_mib']:.1f} "
                f"| {after['peak_mib'] / after['one_row_logits_mib']:.2f} | {'yes' if same else 'NO'} |"
            )
    table = "\n".join(lines)
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")


if __name__ == "__main__":
    main()
