"""Model-level validation of TRACE: does a system's mean TRACE track its answer accuracy?

Corpus (no labelling, training or tuning choice looked at it): the result logs of "Re-Reading
Improves Reasoning in Large Language Models" (github Tebmer/Rereading-LLM-Reasoning, Apache-2.0,
``results/*.jsonl``): the same GSM8K and CommonsenseQA test questions answered by three chat
models (text-davinci-003, gpt-3.5-turbo, gpt-4o-mini), each with two prompts (``vanilla``, ``cot``)
and two readings of the question (baseline, re-read), every answer scored right or wrong: 12
systems per task. A seeded sample of questions common to every system is scored.

For each tagger (the cue tagger and ``procrl:trace-tagger``) and system: mean TRACE (procrl's
segmentation, tagger, threshold 0.5 and ``trace_score``, as ``trace`` runs in training) and
accuracy; Pearson and Spearman r across systems per task and pooled; per answer, the AUROC of
TRACE for right vs wrong answers within each system (mean over systems).

Usage: python benchmarks/trace_tagger/validate.py --mirror /path/to/mirrors [--questions 200]
Writes results/validation.json and results/validation.md.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import time
from pathlib import Path

from procrl.core.text import segment_batch
from procrl.rewards.scorers.taggers import LABELS, load_tagger
from procrl.rewards.trace import trace_score

HERE = Path(__file__).parent
REPO = "Tebmer+Rereading-LLM-Reasoning"
FILES = {
    "gsm8k": {
        "text-davinci-003 / read once": "gsm_topp1.0_temp0.0_majority1_20230828_141934.jsonl",
        "text-davinci-003 / re-read": "gsm_topp1.0_temp0.0_majority1_20230828_142302.jsonl",
        "gpt-3.5-turbo / read once": "gsm_topp1.0_temp0.0_majority1_20230828_1157.jsonl",
        "gpt-3.5-turbo / re-read": "gsm_topp1.0_temp0.0_majority1_20230828_1200.jsonl",
        "gpt-4o-mini / read once": "gsm_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes1_20240926_221724.jsonl",  # noqa: E501
        "gpt-4o-mini / re-read": "gsm_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes2_20240926_222057.jsonl",  # noqa: E501
    },
    "commonsenseqa": {
        "text-davinci-003 / read once": "commonsenseqa_topp1.0_temp0.0_majority1_readtimes1_20230912_002205.jsonl",
        "text-davinci-003 / re-read": "commonsenseqa_topp1.0_temp0.0_majority1_readtimes2_20230912_002237.jsonl",
        "gpt-3.5-turbo / read once": "commonsenseqa_topp1.0_temp0.0_majority1_readtimes1_20230912_002124.jsonl",
        "gpt-3.5-turbo / re-read": "commonsenseqa_topp1.0_temp0.0_majority1_readtimes2_20230912_002132.jsonl",
        "gpt-4o-mini / read once": "commonsenseqa_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes1_20240926_224916.jsonl",  # noqa: E501
        "gpt-4o-mini / re-read": "commonsenseqa_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes2_20240926_225049.jsonl",  # noqa: E501
    },
}
PROMPTS = ("vanilla", "cot")


def pearson(x: list[float], y: list[float]) -> float:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sx = sum((a - mx) ** 2 for a in x) ** 0.5
    sy = sum((b - my) ** 2 for b in y) ** 0.5
    return sxy / (sx * sy) if sx and sy else float("nan")


def ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2
        i = j + 1
    return out


def auroc(positive: list[float], negative: list[float]) -> float | None:
    if not positive or not negative:
        return None
    wins = sum((p > q) + 0.5 * (p == q) for p in positive for q in negative)
    return wins / (len(positive) * len(negative))


def load_systems(mirror: Path, questions: int, seed: int) -> dict[str, dict[str, list[dict]]]:
    """task -> system -> [{"id", "text", "correct"}] on the same sampled question ids."""
    out = {}
    for task, files in FILES.items():
        per_file = {}
        for name, file in files.items():
            text = subprocess.run(
                ["git", "-C", str(mirror / REPO / "repo"), "show", f"HEAD:results/{file}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            rows = {}
            for line in text.splitlines():
                if line.strip():
                    row = json.loads(line)
                    rows.setdefault(row["id"], row)  # a few ids repeat in one log: the first answer
            per_file[name] = rows
        common = sorted(set.intersection(*(set(rows) for rows in per_file.values())))
        chosen = sorted(random.Random(seed).sample(common, min(questions, len(common))))
        systems = {}
        for name, rows in per_file.items():
            for prompt in PROMPTS:
                systems[f"{name.split(' / ')[0]} / {prompt} / {name.split(' / ')[1]}"] = [
                    {"id": i, "text": rows[i][prompt]["generation"][0], "correct": bool(rows[i][prompt]["score"])}
                    for i in chosen
                ]
        out[task] = systems
    return out


def score_all(tagger, texts: list[str]) -> tuple[list[float], list[int]]:
    segmentations = segment_batch(texts)
    sentences = [[span.text for span in seg.sentences] for seg in segmentations]
    flat = [s for group in sentences for s in group]
    probabilities = tagger.predict_proba(flat) if flat else []
    scores, shares, offset = [], [0] * len(LABELS), 0
    for group in sentences:
        rows = probabilities[offset : offset + len(group)]
        offset += len(group)
        labels = [[LABELS[j] for j, p in enumerate(row) if p >= 0.5] for row in rows]
        for row in labels:
            for label in row:
                shares[LABELS.index(label)] += 1
        scores.append(trace_score(labels).score)
    return scores, shares + [len(flat)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mirror", required=True, type=Path)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--taggers", default="cues,procrl:trace-tagger")
    args = parser.parse_args()
    data = load_systems(args.mirror, args.questions, args.seed)
    result = {"corpus": "github Tebmer/Rereading-LLM-Reasoning results/ (Apache-2.0)", "questions": args.questions}
    for tagger_name in args.taggers.split(","):
        tagger = load_tagger(tagger_name, batch_size=64)
        per_task = {}
        for task, systems in data.items():
            rows = {}
            for system, answers in systems.items():
                started = time.perf_counter()
                scores, counts = score_all(tagger, [a["text"] for a in answers])
                correct = [a["correct"] for a in answers]
                rows[system] = {
                    "accuracy": sum(correct) / len(correct),
                    "trace": sum(scores) / len(scores),
                    "auroc": auroc(
                        [s for s, c in zip(scores, correct) if c], [s for s, c in zip(scores, correct) if not c]
                    ),
                    "sentences": counts[-1],
                    "element_share": {label: counts[j] / max(1, counts[-1]) for j, label in enumerate(LABELS)},
                    "seconds": time.perf_counter() - started,
                }
                print(
                    f"{tagger_name:22s} {task:14s} {system:40s} acc {rows[system]['accuracy']:.3f} "
                    f"trace {rows[system]['trace']:.3f}",
                    flush=True,
                )
            accuracy = [v["accuracy"] for v in rows.values()]
            trace = [v["trace"] for v in rows.values()]
            aurocs = [v["auroc"] for v in rows.values() if v["auroc"] is not None]
            per_task[task] = {
                "systems": rows,
                "pearson": pearson(trace, accuracy),
                "spearman": pearson(ranks(trace), ranks(accuracy)),
                "mean_auroc": sum(aurocs) / len(aurocs),
            }
        pooled_acc = [v["accuracy"] for t in per_task.values() for v in t["systems"].values()]
        pooled_trace = [v["trace"] for t in per_task.values() for v in t["systems"].values()]
        result[tagger_name] = {
            "tasks": per_task,
            "pooled_pearson": pearson(pooled_trace, pooled_acc),
            "pooled_spearman": pearson(ranks(pooled_trace), ranks(pooled_acc)),
        }
    (HERE / "results" / "validation.json").write_text(json.dumps(result, indent=2) + "\n")
    names = args.taggers.split(",")
    lines = [
        f"Corpus: {result['corpus']}; {args.questions} questions per task (seed {args.seed}), "
        "the same for every system.",
        "",
        "| task | system | accuracy | "
        + " | ".join(f"TRACE ({n})" for n in names)
        + " | "
        + " | ".join(f"AUROC ({n})" for n in names)
        + " |",
        "|---|---|---:|" + "---:|" * (2 * len(names)),
    ]
    for task in FILES:
        for system in data[task]:
            cells = [result[n]["tasks"][task]["systems"][system] for n in names]
            auc = ["-" if c["auroc"] is None else f"{c['auroc']:.2f}" for c in cells]
            lines.append(
                f"| {task} | {system} | {cells[0]['accuracy']:.3f} | "
                + " | ".join(f"{c['trace']:.3f}" for c in cells)
                + " | "
                + " | ".join(auc)
                + " |"
            )
    lines += [
        "",
        "| correlation with accuracy across systems | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for task in FILES:
        lines.append(
            f"| {task}: Pearson r (12 systems) | "
            + " | ".join(f"{result[n]['tasks'][task]['pearson']:.3f}" for n in names)
            + " |"
        )
        lines.append(
            f"| {task}: Spearman rho | "
            + " | ".join(f"{result[n]['tasks'][task]['spearman']:.3f}" for n in names)
            + " |"
        )
        lines.append(
            f"| {task}: mean per-answer AUROC | "
            + " | ".join(f"{result[n]['tasks'][task]['mean_auroc']:.3f}" for n in names)
            + " |"
        )
    lines.append(
        "| pooled (24 systems): Pearson r | " + " | ".join(f"{result[n]['pooled_pearson']:.3f}" for n in names) + " |"
    )
    lines.append("| pooled: Spearman rho | " + " | ".join(f"{result[n]['pooled_spearman']:.3f}" for n in names) + " |")
    (HERE / "results" / "validation.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
