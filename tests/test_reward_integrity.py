"""No built-in reward mix pays a policy for skipping, padding, hedging or slipping in its
reasoning (docs/spec.md section 0; docs/rewards.md "What the mixes guarantee").

For 500 GSM8K train problems, five completions each (procrl/evaluation/integrity.py): the reference
solution W; W with one intermediate calculation result changed, final answer kept (S); S after
three number-free restatement steps (P); the answer line alone (A); three hedging sentences and
the answer line (H). Every recipe in recipes/ whose rewards run without a download (judges with
a model on the arithmetic backend, the reference judge as it is, TRACE on an embedded tagger: the
recipe's own when it is embedded, procrl:trace-tagger in the tiny recipes, else the cue tagger) is
scored exactly as ``procrl score`` scores
(the same code path, the same fallback policy), on the problems whose W the arithmetic verifier
accepts:

* every mix: W >= S, W >= A, W >= H and P <= S (nothing pays for a slip, for skipping, hedging
  or padding) on >= 98% of the problems;
* a mix with a process reward (first_error, TRACE, ReCEval): W > A and W > H strictly;
* a mix with a component that checks the steps' correctness (first_error): also W > S.

The reference judge (``first_error: {backend: reference}``) also pays nothing for three
completions that state no quantity worked out: the question's sentences copied with their numbers
(C), the gold answer stated first and then restated without working (E), number-free steps (N).

An outcome-only mix (accuracy + format) cannot tell W, S, A and H apart, and a structure-only
mix (TRACE) cannot see a changed number: for them the strict W > S (and, outcome-only, W > A,
W > H) is not promised, and the test says which orderings each recipe is held to.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from procrl.evaluation.integrity import KINDS, build_cases, orderings
from procrl.evaluation.score import score_rows
from procrl.recipe import load_recipe
from procrl.rewards import RewardMix
from procrl.rewards.registry import component_info
from tests.helpers.rewards import offline_overrides

REPO = Path(__file__).resolve().parent.parent
RECIPES = sorted((REPO / "recipes").glob("*.yaml"))
NUM_PROBLEMS = 500
THRESHOLD = 0.98
# recipes whose rewards cannot run without a download even with the substitutions below
NEEDS_A_DOWNLOAD = {"gsm8k_receval.yaml"}  # an NLI model and a causal LM


@pytest.fixture(scope="module")
def cases(gsm8k_train):
    rows = [json.loads(line) for line in gsm8k_train.read_text(encoding="utf-8").splitlines() if line.strip()]
    built = build_cases(rows, NUM_PROBLEMS, seed=0)
    assert len(built) == NUM_PROBLEMS * len(KINDS)
    verified = sum(c["w_verified"] for c in built) // len(KINDS)
    assert verified >= 0.97 * NUM_PROBLEMS  # the verifier accepts nearly every reference
    return built


def weak_orderings(scored: list[dict]) -> dict[str, float]:
    """Share of verified problems where nothing pays: W >= S, W >= A, W >= H, P <= S."""
    by_problem: dict = {}
    for row in scored:
        if row["w_verified"]:
            by_problem.setdefault(row["problem"], {})[row["kind"]] = row["reward"]
    shares = {}
    for name, check in {
        "W>=S": lambda t: t["W"] >= t["S"],
        "W>=A": lambda t: t["W"] >= t["A"],
        "W>=H": lambda t: t["W"] >= t["H"],
        "P<=S": lambda t: t["P"] <= t["S"],
    }.items():
        shares[name] = sum(all(t[k] is not None for k in KINDS) and check(t) for t in by_problem.values()) / len(
            by_problem
        )
    return shares


def test_every_recipe_is_covered():
    names = {path.name for path in RECIPES}
    assert NEEDS_A_DOWNLOAD <= names
    assert len(names - NEEDS_A_DOWNLOAD) >= 6  # accuracy, judge, grpo_process, ppo_process, trace, tiny_cpu


@pytest.mark.parametrize("path", [p for p in RECIPES if p.name not in NEEDS_A_DOWNLOAD], ids=lambda p: p.stem)
def test_no_built_in_mix_pays_for_skipping_padding_hedging_or_slips(path, cases):
    recipe = load_recipe(path, offline_overrides(path))
    mix = RewardMix(recipe.rewards)
    assert all(component.needs_model() is None for component in mix.components.values()), path.name
    scored = list(score_rows(mix, cases))
    strict = orderings(scored)
    weak = weak_orderings(scored)
    types = {spec.type for spec in recipe.rewards}
    grades_reasoning = any(component_info(spec.type).grades == "reasoning" for spec in recipe.rewards)
    print(f"\n{path.name}: {strict['problems']} verified problems; strict {strict}; weak {weak}")
    for name, share in weak.items():
        assert share >= THRESHOLD, (path.name, name, share)
    if grades_reasoning:
        assert strict["W>A"] >= THRESHOLD and strict["W>H"] >= THRESHOLD, (path.name, strict)
    if "first_error" in types:
        assert strict["W>S"] >= THRESHOLD and strict["P<=S"] >= THRESHOLD and strict["all"] >= THRESHOLD, (
            path.name,
            strict,
        )


def test_receval_recipe_is_the_only_one_skipped():
    for path in RECIPES:
        mix = RewardMix(load_recipe(path, offline_overrides(path)).rewards)
        needs = {name for name, c in mix.components.items() if c.needs_model() is not None}
        assert bool(needs) == (path.name in NEEDS_A_DOWNLOAD), (path.name, needs)


def test_judge_recipe_through_procrl_score(cases, tmp_path, capsys):
    """The issue's command, end to end: procrl score on the five-completion sets of 100 problems."""
    from procrl.launch.cli import main

    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in cases[: 100 * len(KINDS)]))
    out = tmp_path / "scored.jsonl"
    assert (
        main(
            [
                "score",
                "--recipe",
                str(REPO / "recipes" / "gsm8k_judge.yaml"),
                "--set",
                "rewards.first_error.backend=arithmetic",
                "--input",
                str(data),
                "--output",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    result = orderings(scored)
    assert result["problems"] >= 97
    for name in ("W>S", "W>A", "W>H", "P<=S"):
        assert result[name] >= THRESHOLD, (name, result)
    kinds = {row["kind"]: row for row in scored if row["problem"] == scored[0]["problem"]}
    assert kinds["W"]["reward"] == 1.0 and kinds["A"]["diagnostics"]["first_error"]["verdict"] == "no_steps"
    assert kinds["H"]["diagnostics"]["first_error"]["verdict"] == "unverified"
    assert kinds["S"]["diagnostics"]["first_error"]["index"] >= 0


def _sentences(text: str) -> list[str]:
    import re

    return [part.strip() for part in re.split(r"(?<=[.?!])\s+", text) if part.strip()]


def test_reference_judge_pays_nothing_for_no_quantities_copied_numbers_or_an_early_answer(cases):
    from procrl.core.answers import parse_gold
    from procrl.evaluation.integrity import RESTATEMENTS

    mix = RewardMix(load_recipe(REPO / "recipes" / "gsm8k_reference.yaml").rewards)
    rows, kinds = [], {}
    worked = [c for c in cases if c["kind"] == "W"]
    for case in worked:
        gold = parse_gold(case["answer"])
        answer = f"#### {gold:g}"
        extra = {
            "C": "\n".join(_sentences(case["question"]) + [answer]),
            "E": "\n".join([f"The answer is {gold:g}, which is what we get.", *RESTATEMENTS[:3], answer]),
            "N": "\n".join([*RESTATEMENTS[3:], answer]),
        }
        for kind, completion in {"W": case["completion"], **extra}.items():
            kinds.setdefault(case["problem"], {})[kind] = len(rows)
            rows.append({**case, "kind": kind, "completion": completion})
    scored = list(score_rows(mix, rows))
    first_error = [row["rewards"]["first_error"] for row in scored]
    checked = [p for p in kinds.values() if first_error[p["W"]] == 0.0]
    assert len(checked) >= 0.95 * len(worked), len(checked)  # the judge checks and accepts nearly every reference
    for kind in ("C", "E", "N"):
        paid = [p for p in checked if first_error[p[kind]] is None or first_error[p[kind]] >= first_error[p["W"]]]
        assert len(paid) <= (1 - THRESHOLD) * len(checked), (
            kind,
            len(paid),
            [rows[p[kind]]["completion"] for p in paid[:3]],
        )
        totals_w = [scored[p["W"]]["reward"] for p in checked]
        totals_k = [scored[p[kind]]["reward"] for p in checked]
        assert sum(w > k for w, k in zip(totals_w, totals_k)) >= THRESHOLD * len(checked), kind
