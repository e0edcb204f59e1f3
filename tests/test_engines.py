"""procrl's engine adapters (procrl/engines/): verl's token rewards add up to procrl's total and never
pay for more steps of the same quality (hand-written solutions: worked, one slip, each padded with
steps of the same quality; TRACE-, first-error- and ReCEval-shaped step scores), and the inputs
the TRL and verl adapters are given are checked (lengths, gold answers) with one ValueError naming
both sides."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from procrl.core.config import field
from procrl.rewards import RewardBatch, RewardComponent, RewardOutput

QUESTION = "Tom has 3 bags of 4 apples and buys 2 more. How many apples?"


class Shaped(RewardComponent):
    """A hand-made process reward: each step's score is the ``[x]`` it ends with; the scalar is
    shaped as TRACE's (0.7 x the mean step validity + 0.3 x a full coherence) or ReCEval's (the
    minimum over the steps)."""

    @dataclass
    class Settings:
        shape: str = field("trace", help="trace or receval.")

    def score(self, batch: RewardBatch) -> RewardOutput:
        scores, steps = [], []
        for completion, segmentation in zip(batch.completions, batch.segmentations):
            values = [
                float(re.search(r"\[([0-9.]+)\]", completion[s.start : s.end]).group(1)) for s in segmentation.steps
            ]
            steps.append(values)
            if self.settings.shape == "trace":
                scores.append(0.7 * sum(values) / len(values) + 0.3 if values else 0.0)
            else:
                scores.append(min(values) if values else 0.0)
        return RewardOutput(scores=scores, step_scores=steps)


WORKED = "3 * 4 = 12 [0.9]\n12 + 2 = 14 [0.9]\n#### 14"
SLIP = "3 * 4 = 13 [0.2]\n13 + 2 = 15 [0.9]\n#### 15"
PAD = "".join(f"{n} = {n} [0.9]\n" for n in (12, 12, 12, 12, 12))
WORKED_PADDED = WORKED.replace("12 + 2", PAD + "12 + 2")
SLIP_PADDED = SLIP.replace("13 + 2", "".join(f"{n} = {n} [0.9]\n" for n in (13, 13, 13, 13, 13)) + "13 + 2")
TEXTS = [WORKED, SLIP, WORKED_PADDED, SLIP_PADDED]


def _recipe(tmp_path, shape: str) -> str:
    path = tmp_path / f"{shape}.yaml"
    path.write_text(
        "recipe: procrl/v1\nrewards:\n  accuracy: {weight: 1.0}\n"
        "  first_error: {weight: 0.5, backend: arithmetic}\n"
        f"  shaped: {{type: 'tests.test_engines:Shaped', shape: {shape}, weight: 0.8}}\n"
    )
    return str(path)


def _rollout(tokenizer, texts):
    from tests.test_verl_reward import _Rollout

    prompt = tokenizer([QUESTION] * len(texts), return_tensors="pt")["input_ids"]
    responses = [tokenizer(t)["input_ids"] + [tokenizer.eos_token_id] for t in texts]
    width = max(map(len, responses)) + 2
    ids = torch.full((len(texts), width), tokenizer.pad_token_id)
    mask = torch.zeros(len(texts), prompt.shape[1] + width, dtype=torch.long)
    mask[:, : prompt.shape[1]] = 1
    for i, row in enumerate(responses):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, prompt.shape[1] : prompt.shape[1] + len(row)] = 1
    non_tensors = {
        "reward_model": np.array([{"ground_truth": "14", "style": "rule"}] * len(texts), dtype=object),
        "extra_info": np.array([{"question": QUESTION} for _ in texts], dtype=object),
    }
    return _Rollout({"prompts": prompt, "responses": ids, "attention_mask": mask}, non_tensors)


@pytest.mark.parametrize("shape", ["trace", "receval"])
def test_verl_token_rewards_add_up_to_the_total_and_never_pay_for_more_steps(tmp_path, shape):
    from transformers import AutoTokenizer

    from procrl.models.tiny import TOKENIZER_ASSET
    from procrl.verl import ProcrlTokenRewardManager, compute_score_batch

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_ASSET)
    recipe = _recipe(tmp_path, shape)
    manager = ProcrlTokenRewardManager(tokenizer, 0, None, "data_source", recipe=recipe)
    out = manager(_rollout(tokenizer, TEXTS), return_dict=True)
    sums = out["reward_tensor"].sum(dim=1).tolist()
    totals = [r["score"] for r in compute_score_batch([None] * 4, TEXTS, ["14"] * 4, [{"question": QUESTION}] * 4,
                                                      recipe=recipe)]  # fmt: skip
    # hand-computed totals: accuracy 1 / 0; first_error 0 / -1 (the slip "3 * 4 = 13"); shaped
    # TRACE: 0.7 x mean + 0.3 (0.93 worked, 0.7 x 0.55 + 0.3 = 0.685 slip, 0.7 x (0.2 + 6 x 0.9) / 7
    # + 0.3 = 0.86 padded slip); ReCEval: the minimum (0.9 worked, 0.2 slip)
    shaped = {"trace": [0.93, 0.685, 0.93, 0.86], "receval": [0.9, 0.2, 0.9, 0.2]}[shape]
    expected = [1.0 + 0.8 * shaped[0], -0.5 + 0.8 * shaped[1], 1.0 + 0.8 * shaped[2], -0.5 + 0.8 * shaped[3]]
    assert totals == [pytest.approx(e) for e in expected]
    assert out["reward_extra_info"]["score"] == [pytest.approx(e) for e in expected]
    assert sums == [pytest.approx(e, abs=1e-5) for e in expected]  # each response's rewards add up to its total
    assert sums[2] <= sums[0] + 1e-6  # padding with steps of the same quality never pays
    if shape == "receval":  # nor does diluting a slip with good steps, under a minimum
        assert sums[3] <= sums[1] + 1e-6
    # (TRACE's own score is a mean: good steps around a slip raise it, in procrl score as here; the
    # token rewards pay that total, never the per-step sum that grew with every step)
    assert all(s < 1.0 + 0.8 * 0.93 + 1e-5 for s in sums[1::2])  # no slip reaches the worked solution
    # the slip's step is where the credit is lost: its token reward is the lowest of the response
    slip = out["reward_tensor"][1]
    assert slip.argmin().item() < slip.nonzero().flatten().max().item()


def test_balanced_step_rewards_by_hand():
    from procrl.trainers.credit import balanced_step_rewards

    # two steps of equal reward: min-form weights 1/2 each; the last token gets the rest of the total
    steps, last = balanced_step_rewards([[0.9, 0.9], [], [-0.5, 0.0]], [1.72, 0.3, None])
    assert steps[0] == [pytest.approx(0.45), pytest.approx(0.45)] and last[0] == pytest.approx(0.82)
    assert steps[1] == [] and last[1] == pytest.approx(0.3)
    # first-error shaped: weights e^5 / (e^5 + 1) and 1 / (e^5 + 1); no total: 0
    w = math.exp(5) / (math.exp(5) + 1)
    assert steps[2] == [pytest.approx(-0.5 * w), pytest.approx(0.0)] and last[2] == pytest.approx(0.5 * w)
    # sum: the rewards unchanged
    assert balanced_step_rewards([[0.9, 0.9]], [1.0], "sum")[1] == [pytest.approx(-0.8)]


# -- inputs --


def test_trl_reward_functions_refuse_answers_of_another_length():
    from procrl.trl import recipe_rewards

    rewards = recipe_rewards({"accuracy": {"weight": 1.0}, "format": {"weight": 0.2}})
    accuracy = rewards.funcs[0]
    with pytest.raises(ValueError, match=r"completions and answer differ in length: 2 completions, 1 answer"):
        accuracy(prompts=["q", "q"], completions=["#### 1", "#### 2"], answer=["1"])
    with pytest.raises(ValueError, match=r"completions and prompts differ in length: 2 completions, 3 prompts"):
        accuracy(prompts=["q", "q", "q"], completions=["#### 1", "#### 2"], answer=["1", "2"])
    assert accuracy(prompts=["q", "q"], completions=["#### 1", "#### 2"], answer=["1", "1"]) == [1.0, 0.0]


def test_verl_inputs_checked(tmp_path):
    from procrl.verl import compute_score, compute_score_batch

    recipe = tmp_path / "r.yaml"
    recipe.write_text("recipe: procrl/v1\nrewards:\n  accuracy: {weight: 1.0}\n")
    with pytest.raises(ValueError, match="solution_strs and ground_truths differ in length: 3 solution_strs, 2"):
        compute_score_batch([None] * 3, ["#### 1", "#### 2", "#### 3"], ["1", "2"], recipe=str(recipe))
    with pytest.raises(ValueError, match="solution_strs and extra_infos differ in length: 1 solution_strs, 2"):
        compute_score_batch([None], ["#### 1"], ["1"], [{}, {}], recipe=str(recipe))
    # a dict gold: its documented key, never the dict's first number
    gold = {"note": "checked 7 times", "answer": "5"}
    assert compute_score(None, "#### 5", gold, recipe=str(recipe))["accuracy"] == 1.0
    assert compute_score(None, "#### 7", gold, recipe=str(recipe))["accuracy"] == 0.0
    with pytest.raises(
        ValueError, match=r"ground_truths\[0\]: a dict gold answer needs one of the keys 'ground_truth'"
    ):
        compute_score(None, "#### 7", {"note": "checked 7 times"}, recipe=str(recipe))
    with pytest.raises(ValueError, match=r"ground_truths\[0\]: expected a string, a number.*got set"):
        compute_score(None, "#### 7", {7}, recipe=str(recipe))


# -- text handling on hostile runs: one pass, never a search per character --


def _within(seconds: float, work, *args):
    """``work(*args)``, failed when still running after ``seconds`` (a hang guard set hundreds of
    times above a linear pass, not a speed measurement: a quadratic pass over these runs takes hours)."""
    import signal

    def stop(*_):
        raise TimeoutError(f"{work.__name__} still running after {seconds} s: super-linear on this input")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return work(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


RUNS = {
    "spaces": " " * 400_000 + "x",
    "special tokens": "<|im_end|>" * 40_000 + "x",
    "digits": "7" * 400_000 + "x",
    "stars": "*" * 400_000 + "x",
    "scheme characters": "x= " + "a." * 200_000,
    "separators": "x=1 " + ";" * 400_000,
    "schemes": "a://" * 100_000 + "x=",
}


@pytest.mark.parametrize("run", RUNS)
def test_the_servers_text_handling_is_linear_on_long_runs(run):
    from procrl.core.redaction import redact_text
    from procrl.engines.server import _closing_special_tokens

    text = RUNS[run]
    assert _within(20, redact_text, text) == text  # nothing in them is a secret
    assert _within(20, _closing_special_tokens, text) == text  # no closing tokens at their end
    assert _within(20, _closing_special_tokens, text + "<|im_end|> ") == text


def test_regexes_read_long_runs_once():
    from procrl.core.answers import extract_prediction
    from procrl.rewards.quantities.evaluate import _PERCENT
    from procrl.rewards.receval.rcu import _PREMISE_SEPARATOR

    assert _within(20, _PREMISE_SEPARATOR.split, "a" + " " * 400_000 + "x") == ["a" + " " * 400_000 + "x"]
    assert _within(20, _PERCENT.sub, r"(\1/100)", "7" * 400_000 + "x") == "7" * 400_000 + "x"
    assert _within(20, extract_prediction, "The answer is " + "*" * 400_000 + "x") == (None, "none")
    assert _within(20, extract_prediction, "#### **" + " " * 400_000 + "x") == (None, "none")
    assert extract_prediction("#### **$ 12") == (12.0, "hashes")  # what the runs sit around still reads


@pytest.mark.parametrize("run", ["spaces", "special tokens", "digits", "stars"])
def test_the_rewards_score_long_runs(run):
    from procrl.evaluation.score import score_rows
    from procrl.rewards.mix import RewardMix

    mix = RewardMix.from_recipe_rewards(
        {
            "accuracy": {},
            "format": {},
            "first_error": {"backend": "arithmetic"},
            "reference": {"type": "first_error", "backend": "reference"},
        }  # fmt: skip
    )
    body = RUNS[run][:32_000]
    texts = [f"3 * 4 = 12\n#### {body}", f"3 * 4 ={body}12\nso{body}", f"The answer is {body}", f"#### **{body}"]
    rows = [{"question": "Tom has 3 boxes of 4 apples. How many?", "completion": t, "answer": "12"} for t in texts]
    scored = _within(60, lambda: list(score_rows(mix, rows)))
    assert len(scored) == 4 and all(row["rewards"]["accuracy"] in (0.0, 1.0) for row in scored)


def test_the_web_stack_is_imported_by_procrl_serve_only():
    import subprocess
    import sys

    code = (
        "import sys, procrl, procrl.trl, procrl.verl, procrl.engines.server\n"
        "from procrl.launch.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in ('uvicorn', 'starlette') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
