"""Tagger throughput: the batched TRACE tagger (all sentences of a generation batch tokenised
once, length-sorted, ``batch_size`` per forward) against a one-sentence-at-a-time loop (tokenise
and forward each sentence alone), on the same tiny random-weight published-format checkpoint
(DeBERTa-v2, built locally) and the same sentences (GSM8K train reasoning, split by procrl's
segmentation; embedded problems when the data is not there).

Both arms produce the same probabilities (checked, max abs difference printed). Prints
sentences/s of each arm and the ratio (target >= 3x). Arms are interleaved and the best of
``--repeats`` kept, so that load on a shared machine hits both alike.

    python benchmarks/trace_bench.py [--sentences 256] [--batch-size 64] [--repeats 2] [--hidden 32] [--layers 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GSM8K_TRAIN = REPO.parent / "shared" / "data" / "gsm8k" / "train.jsonl"


def sentences(count: int) -> list[str]:
    from procrl.core.text import segment_batch

    if GSM8K_TRAIN.is_file():
        rows = [json.loads(line) for line in GSM8K_TRAIN.read_text().splitlines()[:count]]
        answers = [r["answer"] for r in rows]
    else:
        from procrl.data.synthetic import generate_problems

        answers = [p["answer"] for p in generate_problems(count, seed=0)]
    out = [s.text for seg in segment_batch(answers) for s in seg.sentences]
    return out[:count]


def one_at_a_time(tagger, texts: list[str]) -> list[list[float]]:
    """The naive loop: tokenise and forward each sentence alone."""
    import torch

    rows = []
    with torch.inference_mode():
        for text in texts:
            inputs = tagger.tokenizer(text, truncation=True, max_length=tagger.max_length, return_tensors="pt")
            inputs = {k: v for k, v in inputs.items() if k in tagger._forward_inputs()}
            rows.append(torch.sigmoid(tagger._logits(inputs))[0].tolist())
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()

    import torch

    from procrl.rewards.scorers.taggers import load_tagger
    from procrl.trainers.tagger import write_tiny_tagger

    texts = sentences(args.sentences)
    with tempfile.TemporaryDirectory() as tmp:
        directory = write_tiny_tagger(Path(tmp) / "tagger", hidden_size=args.hidden, num_layers=args.layers)
        tagger = load_tagger(str(directory), batch_size=args.batch_size)
        tagger.predict_proba(texts[:8])  # warm-up
        one_at_a_time(tagger, texts[:8])
        batched_times, naive_times = [], []
        for _ in range(args.repeats):
            started = time.perf_counter()
            batched = tagger.predict_proba(texts)
            batched_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            naive = one_at_a_time(tagger, texts)
            naive_times.append(time.perf_counter() - started)
    difference = (torch.tensor(batched) - torch.tensor(naive)).abs().max().item()
    batched_rate = len(texts) / min(batched_times)
    naive_rate = len(texts) / min(naive_times)
    print(
        f"tiny DeBERTa-v2 tagger (hidden {args.hidden}, {args.layers} layers), {len(texts)} sentences, "
        f"torch threads {torch.get_num_threads()}"
    )
    print(f"  batched (batch_size {args.batch_size}, length-sorted): {batched_rate:10.1f} sentences/s")
    print(f"  one sentence at a time:                     {naive_rate:10.1f} sentences/s")
    print(f"  max |difference| of probabilities: {difference:.2e}")
    print(f"ratio batched / one-at-a-time: {batched_rate / naive_rate:.1f}x (target >= 3x)")


if __name__ == "__main__":
    main()
