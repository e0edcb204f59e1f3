"""Agreement of the two blind labellers of the TRACE tagger's sentences: Cohen's kappa per element.

Each element is a yes/no decision per sentence; kappa = (p_o - p_e) / (1 - p_e) on the sentences
both labelled. Writes ``results/agreement.json`` and prints a Markdown table.

Usage: python benchmarks/trace_tagger/agreement.py
"""

from __future__ import annotations

import json
from pathlib import Path

from procrl.rewards.scorers.taggers import LABELS

HERE = Path(__file__).parent


def read(path: Path) -> dict[str, set[str]]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["id"]] = set(row["labels"])
    return out


def kappa(a: list[bool], b: list[bool]) -> float | None:
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def main() -> None:
    first = read(HERE / "data" / "labels_A.jsonl")
    second = read(HERE / "data" / "labels_B.jsonl")
    splits = {
        row["id"]: row["split"] for row in map(json.loads, (HERE / "data" / "sentences.jsonl").read_text().splitlines())
    }
    ids = sorted(set(first) & set(second))
    table = {}
    for label in LABELS:
        a = [label in first[i] for i in ids]
        b = [label in second[i] for i in ids]
        table[label] = {
            "kappa": kappa(a, b),
            "A_positive": sum(a),
            "B_positive": sum(b),
            "both": sum(x and y for x, y in zip(a, b)),
        }
    exact = sum(first[i] == second[i] for i in ids) / len(ids)
    per_split = {
        split: sum(first[i] == second[i] for i in ids if splits.get(i) == split)
        / max(1, sum(splits.get(i) == split for i in ids))
        for split in ("train", "dev", "heldout")
    }
    heldout = [i for i in ids if splits.get(i) == "heldout"]
    for label in LABELS:
        a = [label in first[i] for i in heldout]
        b = [label in second[i] for i in heldout]
        table[label]["kappa_heldout"] = kappa(a, b) if any(a) or any(b) else None
    kappas = [v["kappa"] for v in table.values() if v["kappa"] is not None]
    result = {
        "overlap": len(ids),
        "exact_set_agreement": exact,
        "exact_set_agreement_per_split": per_split,
        "mean_kappa": sum(kappas) / len(kappas),
        "per_element": table,
    }
    (HERE / "results" / "agreement.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"{len(ids)} sentences labelled by both; exact label-set agreement {exact:.3f}")
    print("| element | kappa (all) | kappa (held-out sources) | A positive | B positive | both |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, v in table.items():
        k = "-" if v["kappa"] is None else f"{v['kappa']:.3f}"
        h = "-" if v["kappa_heldout"] is None else f"{v['kappa_heldout']:.3f}"
        print(f"| {label} | {k} | {h} | {v['A_positive']} | {v['B_positive']} | {v['both']} |")
    print(f"| mean | {result['mean_kappa']:.3f} | | | | |")
    print("exact label-set agreement per split: " + ", ".join(f"{k} {v:.3f}" for k, v in per_split.items()))


if __name__ == "__main__":
    main()
