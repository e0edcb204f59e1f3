"""Do the model-free rewards read real model text? ``procrl validate`` on the public corpora, with
this checkout and (``--baseline REV``) with an older commit, side by side.

Corpora (read from the fetched bare git dirs with ``git show``; nothing of them is written
into the repository): MR-GSM8K's ``eval_results/gpt4-grading/*.json`` (590 distinct flawed GSM8K
solutions of 6 models, human first-error labels: localisation and answer agreement, no AUROC),
BIG-Bench-Mistake's ``multistep_arithmetic.jsonl`` (300 PaLM 2 traces, sound and flawed) and
ReasonEval's ``dataset/perturbation.json`` (184 sound GPT-4 MATH solutions and 1064 perturbed
copies). The recipe (default ``recipes/gsm8k_trace.yaml`` with the cue tagger, so no component
downloads a model) is the one of this checkout in both arms.

Each arm is a fresh interpreter with its source first on ``PYTHONPATH`` (same venv). The
baseline is ``git archive REV`` extracted into a temporary directory, as
``benchmarks/startup_bench.py`` does, with this checkout's instrument (``procrl/evaluation/validate*.py``
and ``corpora.py``) copied over it: the measuring code is the same in both
arms, the rewards, segmentation and scoring are the baseline's.

    python benchmarks/real_text_bench.py [--baseline main] [--recipe R] [--set K=V ...]

Prints per corpus and component: AUROC sound vs flawed, AUROC among right answers, acc_err /
acc_cor of first-error components, the no-opinion share, the arithmetic judge's unverified share
(no checkable computation) on sound and on flawed solutions, and the accuracy reward's agreement with the labelled
answer correctness.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path("/work/.mirror")
CORPORA = {
    "MR-GSM8K": (
        "dvlab-research+MR-GSM8K",
        [
            f"eval_results/gpt4-grading/{m}_eval_results.json"
            for m in ("Claude", "GPT3_5", "llama2_70b", "mammoth_70B", "metamath_70B", "wizardmath_70B")
        ],
    ),
    "BIG-Bench-Mistake": ("WHGTyen+BIG-Bench-Mistake", ["multistep_arithmetic.jsonl"]),
    "ReasonEval": ("GAIR-NLP+ReasonEval", ["dataset/perturbation.json"]),
}
# (paths under procrl/; a baseline revision without the layered layout (procrl/evaluation/) cannot take them)
INSTRUMENT = (
    "evaluation/validate/run.py",
    "evaluation/validate/scoring.py",
    "evaluation/validate/peers.py",
    "evaluation/validate/report.py",
    "evaluation/validate/metrics.py",
    "evaluation/validate/text.py",
    "evaluation/validate/plot.py",
    "evaluation/corpora.py",
)
RUN = """
import json, sys
from procrl.evaluation.score import _jsonable
from procrl.evaluation.validate.run import run_validation
recipe, overrides, data = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
resamples, out = int(sys.argv[4]), sys.argv[5]
result = run_validation(recipe, overrides, data, resamples=resamples)
with open(out, "w") as handle:
    json.dump(_jsonable(result.report), handle)
"""


def git_dir(mirror: Path, name: str) -> Path:
    directory = mirror / name / "repo"
    if not directory.is_dir():
        sys.exit(f"{directory}: not found (fetch the corpus first, or give --mirror)")
    return directory


def export_corpora(mirror: Path, directory: Path, only: list[str] | None) -> dict[str, list[Path]]:
    files: dict[str, list[Path]] = {}
    for corpus, (name, paths) in CORPORA.items():
        if only and corpus not in only:
            continue
        source = git_dir(mirror, name)
        files[corpus] = []
        for path in paths:
            target = directory / corpus / Path(path).name
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as handle:
                subprocess.run(["git", "-C", str(source), "show", f"HEAD:{path}"], stdout=handle, check=True)
            files[corpus].append(target)
    return files


def baseline_source(revision: str, directory: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", revision, "procrl", "procrl_recipe_hook.py"], cwd=REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    for name in INSTRUMENT:
        (directory / "procrl" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / "procrl" / name, directory / "procrl" / name)
    return directory


def run_arm(
    source: Path, recipe: str, overrides: list[str], data: list[Path], resamples: int, out: Path, cwd: Path
) -> dict:
    env = dict(
        os.environ,
        PYTHONPATH=str(source),
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        HF_HUB_OFFLINE="1",
        WANDB_MODE="offline",
    )
    argv = [
        sys.executable,
        "-c",
        RUN,
        recipe,
        json.dumps(overrides),
        json.dumps([str(p) for p in data]),
        str(resamples),
        str(out),
    ]
    started = time.perf_counter()
    process = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if process.returncode != 0:
        sys.exit(f"failed ({process.returncode}) with {source}:\n{process.stderr[-3000:]}")
    report = json.loads(out.read_text())
    report["_seconds"] = time.perf_counter() - started
    return report


def _f(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _p(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _none_share(stats: dict) -> float | None:
    classes = stats["by_class"]
    n = sum(c["n"] for c in classes.values())
    return sum((c.get("none") or 0) * c["n"] for c in classes.values()) / n if n else None


def rows_of(report: dict) -> dict[str, dict[str, str]]:
    """Per component (and the total) the figures printed side by side."""
    out = {}
    for name, stats in [*report["components"].items(), ("weighted total", report["reward"])]:
        local = stats.get("localisation") or {}
        sound = stats["by_class"].get("sound", {})
        flawed = [c for k, c in stats["by_class"].items() if k != "sound"]
        n_flawed = sum(c["n"] for c in flawed)
        unverified_flawed = (
            sum(c.get("unverified", 0) * c["n"] for c in flawed) / n_flawed
            if n_flawed and all("unverified" in c for c in flawed)
            else None
        )
        agreement = stats.get("agreement") or {}
        out[name] = {
            "AUROC": _f(stats.get("auroc")),
            "AUROC right-ans": _f(stats.get("auroc_right_answer")),
            "acc_err": _p(local.get("acc_err")) if local else "",
            "acc_cor": _p(local.get("acc_cor")) if local else "",
            "none": _p(_none_share(stats)),
            "unverified sound": _p(sound.get("unverified")) if "unverified" in sound else "",
            "unverified flawed": _p(unverified_flawed) if unverified_flawed is not None else "",
            "answer agrees": (f"{agreement['agree']}/{agreement['scored']}" if agreement.get("labelled") else ""),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", default=None, help="Git revision to compare with (e.g. main before the new verifier)."
    )
    parser.add_argument("--recipe", default=str(REPO / "recipes" / "gsm8k_trace.yaml"))
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="Recipe overrides (default: rewards.trace.tagger=cues).",
    )
    parser.add_argument("--corpus", action="append", choices=list(CORPORA), default=None, help="Only these corpora.")
    parser.add_argument(
        "--mirror", default=str(MIRROR), help="Where the corpora's bare git dirs are (owner+name/repo)."
    )
    parser.add_argument(
        "--resamples", type=int, default=1000, help="Bootstrap resamples (the intervals go to report.json)."
    )
    parser.add_argument("--json", default=None, help="Also write every arm's report here (one JSON object).")
    args = parser.parse_args()
    overrides = args.overrides if args.overrides is not None else ["rewards.trace.tagger=cues"]

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        files = export_corpora(Path(args.mirror), tmp_path / "corpora", args.corpus)
        arms = {"now": REPO}
        if args.baseline:
            arms[f"@{args.baseline}"] = baseline_source(args.baseline, Path(tempfile.mkdtemp(dir=tmp)))
        reports: dict[str, dict[str, dict]] = {}
        for corpus, data in files.items():
            for arm, source in arms.items():
                out = tmp_path / f"{corpus}-{arm.strip('@')}.json"
                reports.setdefault(corpus, {})[arm] = run_arm(
                    source, args.recipe, overrides, data, args.resamples, out, tmp_path
                )
                print(f"scored {corpus} with {arm} in {reports[corpus][arm]['_seconds']:.0f} s", file=sys.stderr)

    columns = [
        "AUROC",
        "AUROC right-ans",
        "acc_err",
        "acc_cor",
        "none",
        "unverified sound",
        "unverified flawed",
        "answer agrees",
    ]
    names = list(arms)

    def cell(tables: dict[str, dict], name: str, column: str) -> str:
        values = [tables[a].get(name, {}).get(column, "-") for a in names]
        return "" if not any(values) else " | ".join(values)

    print(
        f"recipe {Path(args.recipe).name} {' '.join('--set ' + o for o in overrides)}; "
        + (f"each cell: now | {names[1]}" if len(names) > 1 else "this checkout")
    )
    for corpus, by_arm in reports.items():
        report = by_arm["now"]
        classes = ", ".join(f"{n} {k}" for k, n in report["classes"].items())
        print(f"\n{corpus}: {report['n']} solutions ({classes})")
        tables = {arm: rows_of(r) for arm, r in by_arm.items()}
        width = {c: max(len(c), *(len(cell(tables, n, c)) for n in tables["now"])) for c in columns}
        print(f"  {'component':<16}" + "".join(f"  {c:>{width[c]}}" for c in columns))
        for name in tables["now"]:
            print(f"  {name:<16}" + "".join(f"  {cell(tables, name, c):>{width[c]}}" for c in columns))
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=1) + "\n")


if __name__ == "__main__":
    main()
