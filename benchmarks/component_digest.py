"""A digest of every reward component's scores, per shipped recipe and corpus: run it before and
after a change that must not change what any component decides (a refactor, a move, a format);
equal digests mean no score, per-step score, detail or failure count changed.

For each recipe of ``recipes/`` its reward mix (loaded for scoring, as ``procrl score`` does)
scores every row of each corpus in batches of 64. A component that cannot load here (a judge
behind an API, a model that is not on this machine) is named as skipped with the reason, in
both runs alike. Corpora: the shipped fixtures (``tests/data/validate/``), the synthetic
problems' solutions (clean and with every slip), the reward-integrity cases built from GSM8K's
test split (worked, one slip, padded, answer alone, hedged) and GSM8K's test gold solutions.

    python benchmarks/component_digest.py --gsm8k ../shared/data/gsm8k > before.md
    # ... the change ...
    python benchmarks/component_digest.py --gsm8k ../shared/data/gsm8k > after.md && diff before.md after.md

Prints a markdown table: recipe, corpus, component, rows scored, mean score, sha256 (first 16).
``--rows FILE`` also writes every row's score and per-step scores as JSON lines, so that two runs'
changed verdicts can be listed row by row (``benchmarks/segmentation_diff.py`` reads two such files).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from quantities_digest import FIXTURES, Row, _gsm8k, _plain, _solutions, _synthetic  # noqa: E402

BATCH = 64


def integrity_rows(gsm8k_test: Path, problems: int = 60) -> list[Row]:
    """The five completions per problem of the reward-integrity check (procrl.evaluation.integrity)."""
    from procrl.evaluation.integrity import build_cases

    records = [json.loads(line) for line in gsm8k_test.read_text().splitlines() if line.strip()]
    cases = build_cases(records, problems, seed=0)
    return [Row(case["question"], case["completion"], case["answer"]) for case in cases]


def corpora(gsm8k: Path | None) -> dict[str, list[Row]]:
    found = {f"fixture/{name}": _solutions([str(REPO / "tests" / "data" / "validate" / name)]) for name in FIXTURES}
    found["synthetic"] = _synthetic()
    if gsm8k is not None:
        found["integrity"] = integrity_rows(gsm8k / "test.jsonl")
        found["gsm8k/test"] = _gsm8k(gsm8k / "test.jsonl")[:500]
    return found


def loadable_mix(specs):
    """The recipe's mix, or, when a component cannot load here (a judge behind an API, a model not on
    this machine), the mix of those that can, each alone and ungated; the others are named."""
    import dataclasses

    from procrl.rewards.mix import RewardMix

    try:
        return RewardMix(specs), {}
    except Exception:
        pass
    loadable, skipped = [], {}
    for spec in specs:
        alone = dataclasses.replace(spec, gate=None)
        try:
            RewardMix([alone])
            loadable.append(alone)
        except Exception as error:  # named, in both runs alike
            skipped[spec.name] = f"skipped: {type(error).__name__}"
    return (RewardMix(loadable) if loadable else None), skipped


def digest_mix(recipe_path: Path, rows_by_corpus: dict[str, list[Row]], row_log=None) -> list[tuple]:
    from procrl.recipe import load_recipe
    from procrl.rewards.protocol import RewardBatch

    recipe = load_recipe(str(recipe_path), scoring=True)
    mix, skipped = loadable_mix(recipe.rewards)
    lines = [(recipe_path.name, "*", name, 0, None, reason) for name, reason in skipped.items()]
    if mix is None:
        return lines
    for corpus, rows in rows_by_corpus.items():
        hashers = {name: hashlib.sha256() for name in mix.specs}
        sums = {name: [0.0, 0] for name in mix.specs}
        for start in range(0, len(rows), BATCH):
            chunk = rows[start : start + BATCH]
            batch = RewardBatch([r.completion for r in chunk], [r.question for r in chunk], [r.gold for r in chunk])
            for name, output in mix.score_all(batch).items():
                hashers[name].update(
                    json.dumps(
                        _plain([output.scores, output.step_scores, output.details, output.failures]), sort_keys=True
                    ).encode()
                )
                if row_log is not None:
                    for offset, score in enumerate(output.scores):
                        steps = output.step_scores[offset] if output.step_scores is not None else None
                        record = {"recipe": recipe_path.name, "corpus": corpus, "component": name}
                        record.update(row=start + offset, score=score, steps=steps)
                        row_log.write(json.dumps(_plain(record), sort_keys=True) + "\n")
                present = [s for s in output.scores if s is not None]
                sums[name][0] += sum(present)
                sums[name][1] += len(present)
        for name in mix.specs:
            total, count = sums[name]
            lines.append(
                (
                    recipe_path.name,
                    corpus,
                    name,
                    len(rows),
                    total / count if count else None,
                    hashers[name].hexdigest()[:16],
                )
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gsm8k", type=Path, default=None, help="Folder with GSM8K's test.jsonl.")
    parser.add_argument("--recipes", nargs="+", type=Path, default=sorted((REPO / "recipes").glob("*.yaml")))
    parser.add_argument("--rows", type=Path, default=None, help="Write every row's scores here (JSON lines).")
    args = parser.parse_args(argv)
    rows_by_corpus = corpora(args.gsm8k)
    row_log = None if args.rows is None else args.rows.open("w", encoding="utf-8")
    print("| recipe | corpus | component | rows | mean | sha256 (first 16) |\n|---|---|---|---|---|---|")
    for recipe_path in args.recipes:
        for recipe, corpus, name, rows, mean, digest in digest_mix(recipe_path, rows_by_corpus, row_log):
            shown = "" if mean is None else f"{mean:.6f}"
            print(f"| {recipe} | {corpus} | {name} | {rows} | {shown} | {digest} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
