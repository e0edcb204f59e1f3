"""Tagger throughput: the batched TRACE tagger (all sentences of a generation batch tokenised
once, length-sorted, ``batch_size`` per forward) against a one-sentence-at-a-time loop (tokenise
and forward each sentence alone), on the same tiny random-weight published-format checkpoint
(DeBERTa-v2, built locally) and the same sentences (GSM8K train reasoning, split by procrl's
segmentation; embedded problems when the data is not there).

Both arms produce the same probabilities (checked, max abs difference printed). Prints
sentences/s of each arm and the ratio (target >= 3x). Arms are interleaved and the best of
``--repeats`` kept, so that load on a shared machine hits both alike.

    python benchmarks/trace_bench.py [--sentences 256] [--batch-size 64] [--repeats 2] [--hidden 32] [--layers 2]

``--taggers``: instead, sentences/s of the taggers a recipe can name, on the same sentences: the
cue tagger, ``procrl:trace-tagger`` (all-MiniLM-L6-v2 + head, the CPU recipes' tagger) and the
shape of the published tagger (DeBERTa-v3-base: hidden 768, 12 layers, 128k vocabulary, relative
attention; random weights built locally, the MiniLM tokenizer), each batched as ``trace`` runs it.

    python benchmarks/trace_bench.py --taggers [--sentences 256] [--repeats 2]
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


def deberta_v3_base_shape(batch_size: int):
    """A published-format tagger with DeBERTa-v3-base's shape and random weights (no download)."""
    import torch
    from transformers import AutoModel, AutoTokenizer, DebertaV2Config

    from procrl.models.loading import trace_tagger_base
    from procrl.rewards.scorers.taggers import TraceCheckpointTagger

    config = DebertaV2Config(
        vocab_size=128100,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        relative_attention=True,
        position_biased_input=False,
        pos_att_type=["p2c", "c2p"],
        max_relative_positions=-1,
        position_buckets=256,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
    )
    torch.manual_seed(0)
    encoder = AutoModel.from_config(config)
    head = torch.nn.Linear(768, 8)
    return TraceCheckpointTagger(
        encoder, head, AutoTokenizer.from_pretrained(trace_tagger_base()), batch_size=batch_size
    )


def compare_taggers(texts: list[str], batch_size: int, repeats: int) -> None:
    import torch

    from procrl.rewards.scorers.taggers import load_tagger

    arms = {
        "cue tagger (tagger: cues)": lambda: load_tagger("cues"),
        "procrl:trace-tagger (MiniLM-L6, 22.7M)": lambda: load_tagger("procrl:trace-tagger", batch_size=batch_size),
        "DeBERTa-v3-base shape (184M, random)": lambda: deberta_v3_base_shape(batch_size),
    }
    taggers = {name: build() for name, build in arms.items()}
    for tagger in taggers.values():
        tagger.predict_proba(texts[:8])  # warm-up
    best = {name: float("inf") for name in taggers}
    for _ in range(repeats):  # interleaved: load on a shared machine hits every arm alike
        for name, tagger in taggers.items():
            started = time.perf_counter()
            tagger.predict_proba(texts)
            best[name] = min(best[name], time.perf_counter() - started)
    cue_rate = len(texts) / best["cue tagger (tagger: cues)"]
    print(
        f"{len(texts)} sentences (GSM8K train reasoning), batch {batch_size}, torch threads {torch.get_num_threads()}"
    )
    for name, seconds in best.items():
        rate = len(texts) / seconds
        print(f"  {name:42s} {rate:10.1f} sentences/s  ({rate / cue_rate:.3f}x the cue tagger)")
    minilm = len(texts) / best["procrl:trace-tagger (MiniLM-L6, 22.7M)"]
    deberta = len(texts) / best["DeBERTa-v3-base shape (184M, random)"]
    print(f"procrl:trace-tagger / DeBERTa-v3-base shape: {minilm / deberta:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--taggers", action="store_true", help="compare the cue, embedded and DeBERTa-shape taggers")
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
    if args.taggers:
        compare_taggers(texts, args.batch_size, args.repeats)
        return
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
