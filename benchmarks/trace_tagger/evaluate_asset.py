"""Per-element precision / recall / F1 of the shipped ``procrl:trace-tagger`` and of the cue tagger
against the adjudicated labels, on the dev sources (settings were chosen there) and the held-out
sources (never looked at for any choice). Writes ``results/f1.json``, ``results/f1.md`` and the
held-out figures into ``procrl/assets/trace-tagger/tagger.json`` (the card's numbers; a test
checks them against the shipped tagger).

Usage: python benchmarks/trace_tagger/evaluate_asset.py
"""

from __future__ import annotations

import json
from pathlib import Path

from procrl.models.loading import TRACE_TAGGER_ASSET
from procrl.rewards.scorers.taggers import LABELS, load_tagger
from procrl.trainers.tagger import f1_per_label

HERE = Path(__file__).parent


def main() -> None:
    result: dict = {}
    for name in ("procrl:trace-tagger", "cues"):
        tagger = load_tagger(name, batch_size=64)
        result[name] = {}
        for split in ("dev", "heldout"):
            rows = [json.loads(x) for x in (HERE / "data" / f"{split}.jsonl").read_text().splitlines() if x.strip()]
            probabilities = tagger.predict_proba([r["sentence"] for r in rows])
            predicted = [[LABELS[j] for j, p in enumerate(row) if p >= 0.5] for row in probabilities]
            per_label = f1_per_label([r["labels"] for r in rows], predicted)
            scored = [v["f1"] for v in per_label.values() if v["f1"] is not None]
            exact = sum(set(p) == set(r["labels"]) for p, r in zip(predicted, rows)) / len(rows)
            result[name][split] = {
                "sentences": len(rows),
                "macro_f1": sum(scored) / len(scored),
                "exact_set": exact,
                "per_label": per_label,
            }
    (HERE / "results" / "f1.json").write_text(json.dumps(result, indent=2) + "\n")
    meta_file = TRACE_TAGGER_ASSET / "tagger.json"
    meta = json.loads(meta_file.read_text())
    meta["heldout"] = result["procrl:trace-tagger"]["heldout"]
    meta["dev"] = {k: v for k, v in result["procrl:trace-tagger"]["dev"].items() if k != "per_label"}
    meta_file.write_text(json.dumps(meta, indent=2) + "\n")

    def cell(value):
        return "-" if value is None else f"{value:.2f}"

    lines = []
    for split in ("heldout", "dev"):
        n = result["cues"][split]["sentences"]
        lines += [
            f"**{split}** ({n} sentences): P / R / F1 per element",
            "",
            "| element | support | procrl:trace-tagger P | R | F1 | cue tagger P | R | F1 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for label in LABELS:
            a = result["procrl:trace-tagger"][split]["per_label"][label]
            b = result["cues"][split]["per_label"][label]
            lines.append(
                f"| {label} | {a['support']} | {cell(a['precision'])} | {cell(a['recall'])} | {cell(a['f1'])} | "
                f"{cell(b['precision'])} | {cell(b['recall'])} | {cell(b['f1'])} |"
            )
        a, b = result["procrl:trace-tagger"][split], result["cues"][split]
        lines += [
            f"| macro-F1 | | | | {a['macro_f1']:.3f} | | | {b['macro_f1']:.3f} |",
            f"| exact label set | | | | {a['exact_set']:.3f} | | | {b['exact_set']:.3f} |",
            "",
        ]
    (HERE / "results" / "f1.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
