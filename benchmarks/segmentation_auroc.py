"""Each component's AUROC (sound vs flawed, and among right answers) on labelled real corpora, with
spaCy's sentence splitter and with procrl's own ``rules`` splitter, side by side: the measurement a
change of segmentation must pass (no component lower). Runs ``procrl validate --json`` twice per
recipe and corpus, ``--set segmentation=spacy`` and ``segmentation=rules``; with ``--before DIR``
(a checkout of the code before the change) the spaCy side runs that code as it was instead. A run
already written to ``--work`` is read back (the script resumes).

    python benchmarks/segmentation_auroc.py --work /tmp/auroc \\
        --corpus mr-gsm8k=CORPORA/mr_gsm8k_with_prefixes.jsonl \\
        --corpus heldout=CORPORA/heldout/gsm8k_real.jsonl,CORPORA/heldout/gsm8k_fresh.jsonl \\
        --corpus bbm-multistep=BBM/multistep_arithmetic.jsonl > auroc.md

(``benchmarks/reference_judge_corpora.py`` builds the procrl-format corpora; BIG-Bench-Mistake's
files are read as they are.) Needs spaCy (``pip install 'procrl[spacy]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECIPES = {
    "tiny_cpu": ["recipes/gsm8k_tiny_cpu.yaml"],  # TRACE with the embedded tagger, arithmetic judge
    "trace_cues": ["recipes/gsm8k_trace.yaml", "--set", "rewards.trace.tagger=cues"],  # reference judge
    # multiple-choice corpora: the reference judge reads numeric answers only
    "trace_cues_choice": [
        "recipes/gsm8k_trace.yaml",
        "--set",
        "rewards.trace.tagger=cues",
        "--set",
        "rewards.first_error=false",
    ],
}
SPLITTERS = ("spacy", "rules")


def run(work: Path, recipe: str, corpus: str, files: list[str], splitter: str, before: Path | None) -> dict:
    out = work / f"{recipe}--{corpus}--{splitter}.json"
    if out.exists():
        return json.loads(out.read_text())
    command = [sys.executable, "-m", "procrl", "validate", "--recipe", *RECIPES[recipe]]
    tree = before if (before is not None and splitter == "spacy") else REPO
    if tree == REPO:
        command += ["--set", f"segmentation={splitter}"]
    command += ["--json", "--quiet", "--overwrite"]
    command += ["--output-dir", str(work / f"{recipe}--{corpus}--{splitter}")]
    for path in files:
        command += ["--data", path]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{recipe} {corpus} {splitter}: {done.stderr.strip().splitlines()[-1:]}")
    report = json.loads(done.stdout)
    out.write_text(json.dumps(report))
    return report


def _shown(value) -> str:
    return "" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="Folder of the runs (kept: the script resumes).")
    parser.add_argument("--corpus", action="append", required=True, help="NAME=FILE[,FILE...]")
    parser.add_argument("--recipe", action="append", choices=sorted(RECIPES), help="Default: every one.")
    parser.add_argument("--before", type=Path, help="A checkout before the change: the spaCy side runs its code.")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    header = ["recipe", "corpus", "component", "n sound / flawed", "AUROC spacy", "AUROC rules"]
    print("| " + " | ".join([*header, "among right answers spacy", "rules"]) + " |")
    print("|---|---|---|---|---|---|---|---|")
    lower = []
    for recipe in args.recipe or sorted(RECIPES):
        for entry in args.corpus:
            corpus, _, files = entry.partition("=")
            reports = {s: run(args.work, recipe, corpus, files.split(","), s, args.before) for s in SPLITTERS}
            for name, old in reports["spacy"]["components"].items():
                new = reports["rules"]["components"][name]
                counts = f"{old['n_sound']} / {old['n_flawed']}"
                a, b = old.get("auroc"), new.get("auroc")
                ra, rb = old.get("auroc_right_answer"), new.get("auroc_right_answer")
                row = [recipe, corpus, name, counts, _shown(a), _shown(b), _shown(ra), _shown(rb)]
                print("| " + " | ".join(row) + " |", flush=True)
                for x, y in ((a, b), (ra, rb)):
                    if x is not None and y is not None and y < x - 1e-12:
                        lower.append(f"{recipe} {corpus} {name}: {x:.4f} -> {y:.4f}")
    print(f"\nLower with the rules splitter: {len(lower)}" + "".join(f"\n- {line}" for line in lower))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
