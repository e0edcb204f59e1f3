"""Build the labelled real corpora that docs/first-error.md "The reference judge" measures with ``procrl validate``,
from fetched bare git repositories (``git -C DIR show HEAD:path``); nothing is shipped.

* ``mr_gsm8k/*.json``: MR-GSM8K's grading files as they are (dvlab-research/MR-GSM8K,
  ``eval_results/gpt4-grading/``, MIT): ~590 distinct flawed real GSM8K solutions of several models
  with the human first-error step and the gold solution; localisation (acc_err) only.
* ``mr_gsm8k_with_prefixes.jsonl`` (procrl format): the same flawed solutions plus, as sound rows,
  the steps before each labelled first error ("prefix" rows: sound real text, but shorter than a
  whole solution and cut before the steps that would reuse their values, so a harsh test of false
  flags), and ``peers/*.jsonl``: ReasonEval's published per-sample scores of the same solutions
  (GAIR-NLP/ReasonEval ``eval_results/mr-gsm8k/``: Math-Shepherd-Mistral-7B per step, ROSCOE-SA/SS
  per solution), a prefix row getting the per-step scores of its steps (a PRM scores each step
  given the ones before it, so those are the scores the prefix would get).
* ``llama31_8b_gsm8k.jsonl`` (procrl format): Llama-3.1-8B-Instruct's zero-shot GSM8K test solutions
  (macklinhrw/llm-reasoning, no licence file: measure with it, never ship it): the 100 right-answer
  solutions hand-labelled in ``benchmarks/data/llama31_8b_gsm8k_labels.tsv`` (98 sound) and every
  wrong-answer one (flawed, step unknown), gold solutions from GSM8K's test split.
* ``gsm8k_real.jsonl`` (procrl format): the Llama rows and MR-GSM8K's flawed solutions of the
  original GSM8K questions (not its "reversed" and program-of-thought variants): real solutions of
  GSM8K test questions with both classes, for F1 (acc_err on MR-GSM8K's labels, acc_cor on the
  hand-labelled sound ones) and the AUROC among right-answer solutions.
* ``dev/`` and ``heldout/``: each procrl-format file split by question (:func:`held_out`: a fixed
  hash of the question text, 40% held out), so that the rules are chosen on ``dev/`` only and the
  figures of docs/first-error.md are reported on rows no rule was tuned on. The same question falls
  in the same part in every file (GSM8K real and MR-GSM8K share questions).
* ``fresh/gsm8k_fresh.jsonl`` (procrl format): real GSM8K test solutions of Qwen2.5-7B-Instruct,
  Llama-3.2-3B-Instruct and Llama-3.1-8B-Instruct (macklinhrw/llm-reasoning, zero-shot; no licence
  file: measured with, never shipped) whose first wrong step was labelled for this corpus
  (``benchmarks/data/gsm8k_fresh_labels.tsv``: how they were drawn and labelled; the guide,
  ``gsm8k_fresh_guide.md``); split like the others into ``dev/`` (tune on it) and ``heldout/``.
* ``fresh/gsm8k_fresh_second.jsonl``: a second draw of the same kind, made later and only of
  held-out questions (``benchmarks/data/gsm8k_fresh_second_labels.tsv``; Qwen2.5-7B-Instruct's
  few-shot solutions, the two Llamas' zero-shot ones), so that the final figure is also measured on
  rows that no round of rules was ever scored on; its ``dev/`` part is empty.
* ``fresh/gsm8k_fresh_tuning.jsonl``: labelled the same way for tuning only, of dev questions
  (``benchmarks/data/gsm8k_fresh_tuning_labels.tsv``; the three models' few-shot solutions and
  Llama-3.2-3B's zero-shot ones); its ``heldout/`` part is empty.
* ``reasoneval_perturbation.json``: ReasonEval's ``dataset/perturbation.json`` (MATH, GPT-4 sound
  solutions and perturbed copies); the gold solution *is* the sound one, so it measures how well
  a perturbation of the gold's own steps is found, not false flags on other decompositions.

    python benchmarks/reference_judge_corpora.py --output-dir /tmp/corpora \\
        --mr-gsm8k /work/.mirror/dvlab-research+MR-GSM8K/repo --reasoneval /work/.mirror/GAIR-NLP+ReasonEval/repo \\
        --llm-reasoning /work/.mirror/macklinhrw+llm-reasoning/repo --gsm8k-test ../shared/data/gsm8k/test.jsonl

Prints the ``procrl validate`` commands of the README table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MR_GSM8K_FILES = [
    f"eval_results/gpt4-grading/{name}_eval_results.json"
    for name in ("Claude", "GPT3_5", "GPT4", "llama2_70b", "mammoth_70B", "metamath_70B", "wizardmath_70B")
]
PEERS = {
    "math_shepherd": "eval_results/mr-gsm8k/math-shepherd_mistral-7b_eval_results.json",
    "roscoe_sa": "eval_results/mr-gsm8k/roscoe-sa_eval_results.json",
    "roscoe_ss": "eval_results/mr-gsm8k/roscoe-ss_eval_results.json",
}
LLAMA = "results/evaluation_results-Llama-3.1-8B-Instruct-2024-12-02-07-36.json"
LABELS = REPO / "benchmarks" / "data" / "llama31_8b_gsm8k_labels.tsv"
FRESH_LABELS = REPO / "benchmarks" / "data" / "gsm8k_fresh_labels.tsv"
FRESH_SECOND_LABELS = REPO / "benchmarks" / "data" / "gsm8k_fresh_second_labels.tsv"
FRESH_TUNING_LABELS = REPO / "benchmarks" / "data" / "gsm8k_fresh_tuning_labels.tsv"
FRESH_SOURCES = {
    "qwen25-7b": "results/archive/pre-prompt fix/evaluation_results-qwen2.5-7b-01-zs.json",
    "qwen25-7b-fs": "results/archive/pre-prompt fix/evaluation_results-qwen2.5-7b-01-fs.json",
    "llama32-3b-fs": "results/archive/pre-prompt fix/evaluation_results-llama3.2-3b-01-fs.json",
    "llama31-8b-fs": "results/archive/pre-prompt fix/evaluation_results-llama3.1-8b-01-fs.json",
    "llama32-3b": "results/evaluation_results-Llama-3.2-3B-Instruct-2024-12-02-05-33.json",
    "llama31-8b": LLAMA,
}


HELD_OUT_PERCENT = 40


def held_out(question: str) -> bool:
    """Whether a question belongs to the held-out part: a fixed hash of its text, not a seeded draw,
    so that the split is the same on every machine and in every file."""
    digest = hashlib.sha256(question.strip().encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % 100 < HELD_OUT_PERCENT


def split_file(path: Path, output: Path) -> tuple[str, str]:
    """``path`` (procrl JSONL) as ``dev/NAME`` and ``heldout/NAME``, by :func:`held_out`."""
    rows = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    parts = {"dev": [], "heldout": []}
    for line in rows:
        parts["heldout" if held_out(json.loads(line)["question"]) else "dev"].append(line + "\n")
    written = []
    for part, lines in parts.items():
        (output / part).mkdir(parents=True, exist_ok=True)
        (output / part / path.name).write_text("".join(lines), encoding="utf-8")
        written.append(str(output / part / path.name))
    return written[0], written[1]


def git_show(directory: str, path: str) -> str | None:
    """A file of a bare repository's HEAD, or None when the snapshot does not hold it (large files
    of a fetched snapshot may be absent)."""
    done = subprocess.run(["git", "-C", directory, "show", f"HEAD:{path}"], capture_output=True)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return done.stdout.decode("utf-8")


def records(text: str) -> list[dict]:
    """A JSON array or JSON lines."""
    text = text.strip()
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def mr_gsm8k(directory: str, output: Path) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The grading files and the procrl-format rows; per kept id: (label on the data's steps,
    procrl's step count)."""
    from procrl.core.text import segment
    from procrl.evaluation.corpora import read_solutions
    from procrl.evaluation.validate.metrics import map_label

    folder = output / "mr_gsm8k"
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for path in MR_GSM8K_FILES:
        text = git_show(directory, path)
        if text is None:
            print(f"mr-gsm8k: {path} is not in the snapshot; skipped", file=sys.stderr)
            continue
        target = folder / Path(path).name
        target.write_text(text, encoding="utf-8")
        files.append(str(target))
    _, solutions = read_solutions(files)
    rows, kept = [], {}
    for solution in solutions:
        steps = segment(solution.completion).steps
        label = (
            None
            if solution.label is None
            else map_label(solution.label, solution.data_spans, [(step.start, step.end) for step in steps])
        )
        if label is None or label < 0:
            continue  # no labelled error on procrl's steps (procrl's steps are the data's, minus a "#### N" line)
        common = {"question": solution.question, "answer": solution.reference, "kind": solution.kind}
        rows.append(
            {
                "id": solution.id,
                **common,
                "completion": solution.completion,
                "first_error": label,
                "answer_correct": solution.answer_correct,
            }
        )
        kept[solution.id] = (solution.label, len(steps))
        if solution.label >= 1:
            prefix = solution.completion[: solution.data_spans[solution.label][0]].rstrip()
            rows.append(
                {
                    "id": f"{solution.id}-prefix",
                    **common,
                    "completion": prefix,
                    "first_error": -1,
                    "answer_correct": None,
                }
            )
    (output / "mr_gsm8k_with_prefixes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return [str(output / "mr_gsm8k_with_prefixes.jsonl"), *files], kept


def peers(directory: str, output: Path, labels: dict[str, tuple[int, int]]) -> dict[str, str]:
    """Peer files on the rows' ids; per-step scores cut to procrl's steps (the data's last step is
    often the "#### N" line, which procrl does not count as a step), a prefix row's to its steps."""
    folder = output / "peers"
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, path in PEERS.items():
        text = git_show(directory, path)
        if text is None:
            print(f"reasoneval: {path} is not in the snapshot; skipped", file=sys.stderr)
            continue
        out = []
        for record in records(text):
            scores, kept = record["scores"], labels.get(record["id"])
            if isinstance(scores, list) and kept is not None:
                scores = scores[: kept[1]]
            out.append({"id": record["id"], "scores": scores})
            if isinstance(record["scores"], list) and kept is not None and kept[0] >= 1:
                out.append({"id": f"{record['id']}-prefix", "scores": record["scores"][: kept[0]]})
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
        written[name] = str(folder / f"{name}.jsonl")
    return written


def gsm8k_golds(gsm8k_test: str) -> dict[str, str]:
    """GSM8K's gold solution of each test question (the question as the key, stripped)."""
    return {
        json.loads(line)["question"].strip(): json.loads(line)["answer"]
        for line in Path(gsm8k_test).read_text(encoding="utf-8").splitlines()
        if line.strip()
    }


def llama(directory: str, gsm8k_test: str, output: Path) -> str | None:
    text = git_show(directory, LLAMA)
    if text is None:
        print(f"llm-reasoning: {LLAMA} is not in the snapshot; skipped", file=sys.stderr)
        return None
    solutions = json.loads(text)
    golds = gsm8k_golds(gsm8k_test)
    labels = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or line.startswith("index") or not line.strip():
            continue
        index, first_error, *_ = line.split("\t")
        labels[int(index)] = int(first_error)
    rows = []
    for index, solution in enumerate(solutions):
        right = _extracted_right(solution)
        if right and index not in labels:
            continue  # not hand-labelled
        rows.append(
            {
                "id": f"llama31-8b-{index}",
                "question": solution["question"],
                "completion": solution["response"],
                "answer": golds[solution["question"].strip()],
                "first_error": labels[index] if right else None,
                "answer_correct": right,
            }
        )
    path = output / "llama31_8b_gsm8k.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def fresh(
    directory: str, gsm8k_test: str, output: Path, labels: Path | None = None, name: str = "gsm8k_fresh"
) -> str | None:
    """The labelled rows of ``labels`` (default :data:`FRESH_LABELS`; ``x``: excluded, the reason in
    its note) with their solutions and gold solutions, written to ``fresh/NAME.jsonl``;
    ``answer_correct`` as the labels read the final answer (a right answer the original extractor
    misread is right)."""
    golds = gsm8k_golds(gsm8k_test)
    solutions = {}
    rows = []
    for line in (labels or FRESH_LABELS).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or line.startswith("model\t") or not line.strip():
            continue
        model, index, label, note = line.split("\t", 3)
        if label == "x":
            continue
        if model not in solutions:
            text = git_show(directory, FRESH_SOURCES[model])
            if text is None:
                print(f"llm-reasoning: {FRESH_SOURCES[model]} is not in the snapshot; skipped", file=sys.stderr)
                return None
            solutions[model] = json.loads(text)
        solution = solutions[model][int(index)]
        first_error = int(label)
        rows.append(
            {
                "id": f"{model}-{index}",
                "question": solution["question"],
                "completion": solution["response"],
                "answer": golds[solution["question"].strip()],
                "first_error": first_error,
                "answer_correct": first_error == -1 or _extracted_right(solution),
            }
        )
    (output / "fresh").mkdir(parents=True, exist_ok=True)
    path = output / "fresh" / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _extracted_right(solution: dict) -> bool:
    """Whether the results file's extracted answer is the gold's (None or unreadable: no)."""
    try:
        return abs(float(solution["predicted"]) - float(solution["correct"])) < 1e-6
    except (TypeError, ValueError):
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--mr-gsm8k", help="Bare git dir of dvlab-research/MR-GSM8K.")
    parser.add_argument("--reasoneval", help="Bare git dir of GAIR-NLP/ReasonEval.")
    parser.add_argument("--llm-reasoning", help="Bare git dir of macklinhrw/llm-reasoning.")
    parser.add_argument("--gsm8k-test", default=str(REPO.parent / "shared" / "data" / "gsm8k" / "test.jsonl"))
    args = parser.parse_args(argv)
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    recipe = "recipes/gsm8k_reference.yaml"
    commands = []
    if args.mr_gsm8k:
        (prefixes, *files), labels = mr_gsm8k(args.mr_gsm8k, output)
        commands.append(f"procrl validate --recipe {recipe} " + " ".join(f"--data {f}" for f in files))
        peer_files = peers(args.reasoneval, output, labels) if args.reasoneval else {}
        commands.append(
            f"procrl validate --recipe {recipe} --data {prefixes} "
            + " ".join(f"--peer {n}={p}" for n, p in peer_files.items())
        )
    if args.llm_reasoning:
        path = llama(args.llm_reasoning, args.gsm8k_test, output)
        if path:
            commands.append(f"procrl validate --recipe {recipe} --data {path}")
        if path and args.mr_gsm8k:
            rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
            flawed = [json.loads(line) for line in Path(prefixes).read_text(encoding="utf-8").splitlines()]
            rows += [r for r in flawed if r["kind"] == "original" and r["first_error"] != -1]
            combined = output / "gsm8k_real.jsonl"
            combined.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            commands.append(
                f"procrl validate --recipe {recipe} --data {combined} "
                + " ".join(f"--peer {n}={p}" for n, p in peer_files.items())
            )
    if args.llm_reasoning:
        drawn = (
            (FRESH_LABELS, "gsm8k_fresh"),
            (FRESH_SECOND_LABELS, "gsm8k_fresh_second"),
            (FRESH_TUNING_LABELS, "gsm8k_fresh_tuning"),
        )
        for labels, name in drawn:
            path = fresh(args.llm_reasoning, args.gsm8k_test, output, labels, name)
            if path:
                commands.append(f"procrl validate --recipe {recipe} --data {path}")
    names = (
        "mr_gsm8k_with_prefixes.jsonl",
        "gsm8k_real.jsonl",
        "fresh/gsm8k_fresh.jsonl",
        "fresh/gsm8k_fresh_second.jsonl",
        "fresh/gsm8k_fresh_tuning.jsonl",
    )
    for name in names:
        if (output / name).exists():
            dev, heldout = split_file(output / name, output)
            commands.append(f"# split by question: {dev} (tune on it), {heldout} (report on it)")
    if args.reasoneval:
        text = git_show(args.reasoneval, "dataset/perturbation.json")
        if text is not None:
            (output / "reasoneval_perturbation.json").write_text(text, encoding="utf-8")
            commands.append(f"procrl validate --recipe {recipe} --data {output / 'reasoneval_perturbation.json'}")
    print("\n".join(commands))
    return 0


if __name__ == "__main__":
    sys.exit(main())
