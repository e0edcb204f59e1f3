"""What TRACE sees in the CPU demo: the tiny reasoner's writing habits before and after training.

Reads the ``completions.jsonl`` of ``procrl evaluate`` runs (greedy, the same held-out problems)
and tabulates, per kind of problem, the share of completions written with a hedge or a filler
sentence (``procrl.data.synthetic.HEDGES`` / ``FILLERS``, the habits the reasoner was fine-tuned
with on the ``savings`` and ``garden`` problems) and the mean TRACE, beside answer accuracy.

Usage:
    python benchmarks/trace_tagger/demo_habits.py NAME=EVAL_DIR [NAME=EVAL_DIR ...] [--output FILE.md]

Example (the README demo's evaluations, then the same run without TRACE in its mix):
    python benchmarks/trace_tagger/demo_habits.py start=outputs/gsm8k_tiny_cpu/eval-test-procrl-tiny-reasoner \\
        trained=outputs/tiny/eval-test
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from procrl.data.synthetic import FILLERS, HEDGES

# the question's wording names its template (procrl/data/synthetic.py)
KINDS = {
    "savings": "wants a bike",
    "garden": "rows of tomato plants",
    "packs": "packs with",
    "wages": "an hour",
    "sharing": "boxes. Each box",
}


def kind_of(question: str) -> str:
    return next((kind for kind, words in KINDS.items() if words in question), "other")


def table(eval_dir: Path) -> dict[str, dict[str, float]]:
    """Per kind of problem (and ``all``): completions, hedge share, filler share, mean TRACE, accuracy."""
    rows = [json.loads(line) for line in (eval_dir / "completions.jsonl").read_text().splitlines() if line.strip()]
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(kind_of(row["question"]), []).append(row)
    groups["all"] = rows
    out = {}
    for kind, members in groups.items():
        lines = [set(r["completion"].splitlines()) for r in members]
        traces = [r["rewards"].get("trace") for r in members if r["rewards"].get("trace") is not None]
        out[kind] = {
            "completions": len(members),
            "hedge": sum(bool(set(HEDGES) & ls) for ls in lines) / len(members),
            "filler": sum(bool(set(FILLERS) & ls) for ls in lines) / len(members),
            "trace": sum(traces) / len(traces) if traces else float("nan"),
            "accuracy": sum((r["correct"] or 0) >= 1.0 for r in members) / len(members),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="NAME=EVAL_DIR (a procrl evaluate output folder)")
    parser.add_argument("--output", help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    lines = [
        "| model | problems | completions | with a hedge | with a filler | mean TRACE | answer accuracy |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for spec in args.runs:
        name, _, folder = spec.partition("=")
        for kind, t in table(Path(folder)).items():
            lines.append(
                f"| {name} | {kind} | {t['completions']} | {t['hedge']:.3f} | {t['filler']:.3f} | "
                f"{t['trace']:.3f} | {t['accuracy']:.3f} |"
            )
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.output:
        Path(args.output).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
