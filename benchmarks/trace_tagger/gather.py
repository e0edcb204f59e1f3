"""Gather the TRACE tagger's sentences from public corpora of model reasoning (see data/SOURCES.md).

Reads git snapshots of the source repositories (``--mirror``, one ``owner+name/repo`` git
directory per repository), samples whole answers per source at random (seed 0) until the
source's quota of sentences is reached, splits them with procrl's own sentence splitter (the
unit TRACE tags), and writes ``data/sentences.jsonl``: ``{id, split, source, model, context,
sentence}`` per line, ``context`` being the sentence before it in the same answer.

Usage: python benchmarks/trace_tagger/gather.py --mirror /path/to/mirrors
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
from pathlib import Path

from procrl.core.text import split_sentences

HERE = Path(__file__).parent

# (source, split, quota of sentences); the split is by source, so no held-out source shaped any choice
PLAN = [
    ("bbm_logical_deduction", "train", 200),
    ("bbm_tracking_shuffled_objects", "train", 140),
    ("bbm_multistep_arithmetic", "train", 140),
    ("reasoneval_perturbation", "train", 340),
    ("zscot_strategyqa", "train", 360),
    ("zscot_gsm8k", "train", 160),
    ("bbm_word_sorting", "dev", 90),
    ("zscot_date_understanding", "dev", 100),
    ("mrmath_redundant", "dev", 110),
    ("zscot_commonsensqa", "heldout", 160),
    ("mrmath_invalid", "heldout", 150),
    ("bbm_dyck_languages", "heldout", 60),
]


def git_show(mirror: Path, repo: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(mirror / repo / "repo"), "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
    ).stdout


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def answers(mirror: Path, source: str) -> list[tuple[str, list[str]]]:
    """(model, [step texts]) per answer of a source."""
    if source.startswith("bbm_"):
        rows = jsonl(git_show(mirror, "WHGTyen+BIG-Bench-Mistake", source[4:] + ".jsonl"))
        return [("PaLM 2", row["steps"]) for row in rows]
    if source == "reasoneval_perturbation":
        rows = jsonl(git_show(mirror, "GAIR-NLP+ReasonEval", "dataset/perturbation.json"))
        return [("GPT-4", row["reference_steps"]) for row in rows]
    if source.startswith("mrmath_"):
        text = git_show(mirror, "GAIR-NLP+ReasonEval", f"dataset/mr-math_{source[7:]}_errors.json")
        try:
            rows = json.loads(text)
        except json.JSONDecodeError:
            rows = jsonl(text)
        out = []
        for row in rows:
            if "model_output_step_format" in row:  # PRM800K-style: a list of one-string steps
                steps = [" ".join(step) for step in row["model_output_step_format"]]
            else:
                steps = [re.sub(r"^\s*\d+\.\s*", "", s) for s in row["model_output"].split("\n") if s.strip()]
            out.append((row["generator"], steps))
        return out
    if source.startswith("zscot_"):
        log = git_show(mirror, "kojima-takeshi188+zero_shot_cot", f"log/{source[6:]}_zero_shot_cot.log")
        out = []
        for block in log.split("*************************")[1:]:
            match = re.search(
                r"A: Let's think step by step\.(.*?)\nTherefore, (?:among [^,]*, )?the answer", block, re.S
            )
            if match:
                steps = [s for s in re.split(r"\n\s*\n|\n", match.group(1)) if s.strip()]
                if steps:
                    out.append(("GPT-3 text-davinci-002", steps))
        return out
    raise ValueError(source)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mirror", required=True, type=Path)
    parser.add_argument("--out", type=Path, default=HERE / "data" / "sentences.jsonl")
    args = parser.parse_args()
    rng = random.Random(0)
    seen: set[str] = set()
    rows = []
    for source, split, quota in PLAN:
        pool = answers(args.mirror, source)
        rng.shuffle(pool)
        taken = 0
        for model, steps in pool:
            if taken >= quota:
                break
            previous = ""
            for step in steps:
                for span in split_sentences(step):
                    sentence = " ".join(span.text.split())
                    if len(sentence) < 4 or len(sentence) > 400 or sentence.lower() in seen:
                        previous = sentence or previous
                        continue
                    seen.add(sentence.lower())
                    rows.append(
                        {"split": split, "source": source, "model": model, "context": previous, "sentence": sentence}
                    )
                    previous = sentence
                    taken += 1
        print(f"{source:32s} {split:8s} {taken:5d} sentences from {len(pool)} answers")
    for i, row in enumerate(rows):
        row["id"] = f"s{i:05d}"
    with args.out.open("w", encoding="utf-8") as handle:
        for row in rows:
            ordered = {k: row[k] for k in ("id", "split", "source", "model", "context", "sentence")}
            handle.write(json.dumps(ordered, ensure_ascii=False) + "\n")
    print(f"{len(rows)} sentences -> {args.out}")


if __name__ == "__main__":
    main()
