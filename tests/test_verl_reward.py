"""procrl's rewards for verl (procrl/verl.py): ``compute_score`` under verl's custom_reward_function
contract scores GSM8K's reference solutions at accuracy 1.0 and a wrong answer at 0; the token
reward manager puts a wrong step's penalty on the step's last token and the outcome on the last.
verl itself is not a dependency: where it is installed, the last test loads the manager and the
function through verl's own loaders and runs them on verl's DataProto."""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from procrl.core.config import ConfigError
from procrl.verl import ProcrlTokenRewardManager, compute_score, compute_score_batch

REPO = Path(__file__).resolve().parent.parent
GSM8K = Path(os.environ.get("PROCRL_GSM8K_DIR", REPO.parent / "shared" / "data" / "gsm8k"))
RECIPE = """recipe: procrl/v1
rewards:
  accuracy: {weight: 1.0}
  format: {weight: 0.2}
  first_error: {weight: 0.5, backend: arithmetic}
"""
QUESTION = "Tom has 3 boxes of 4 apples. How many apples?"
RIGHT = "3 * 4 = 12\nTom has 12 apples.\n#### 12"
WRONG = "3 * 4 = 13\nTom has 13 apples.\n#### 13"


@pytest.fixture
def recipe(tmp_path) -> str:
    path = tmp_path / "recipe.yaml"
    path.write_text(RECIPE)
    return str(path)


def _verl_ground_truth(answer: str) -> str:
    # verl's examples/data_preprocess/gsm8k.py extract_solution
    return re.search("#### (\\-?[0-9\\.\\,]+)", answer).group(0).split("#### ")[1].replace(",", "")


def test_gsm8k_reference_solutions_score_accuracy_one_and_a_wrong_answer_zero(recipe):
    path = GSM8K / "train.jsonl"
    if not path.is_file():
        pytest.skip(f"GSM8K data not found at {path} (PROCRL_GSM8K_DIR)")
    rows = [json.loads(line) for line in path.read_text().splitlines()[:300]]
    golds = [_verl_ground_truth(row["answer"]) for row in rows]
    infos = [
        {"split": "train", "index": i, "answer": r["answer"], "question": r["question"]} for i, r in enumerate(rows)
    ]
    results = compute_score_batch(
        ["openai/gsm8k"] * len(rows), [r["answer"] for r in rows], golds, infos, recipe=recipe
    )
    assert all(set(result) == {"score", "accuracy", "format", "first_error"} for result in results)
    assert [result["accuracy"] for result in results] == [1.0] * len(rows)
    wrong = [re.sub(r"#### .*$", f"#### {int(float(g)) + 1}", r["answer"]) for r, g in zip(rows, golds)]
    wrong_results = compute_score_batch(["openai/gsm8k"] * len(rows), wrong, golds, infos, recipe=recipe)
    assert [result["accuracy"] for result in wrong_results] == [0.0] * len(rows)
    assert all(w["score"] < r["score"] for w, r in zip(wrong_results, results))
    # one at a time, as verl's naive manager calls it, gives the same
    assert compute_score("openai/gsm8k", rows[0]["answer"], golds[0], infos[0], recipe=recipe) == results[0]


def test_called_as_verl_calls_it(recipe, monkeypatch):
    # verl.trainer.ppo.reward.get_custom_reward_fn: partial(_call_with_kwargs, fn, reward_kwargs)
    def call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):
        return raw_fn(*args, **{**kwargs, **extra_kwargs})

    reward = functools.partial(call_with_kwargs, compute_score, {"recipe": recipe})
    extra = {"question": QUESTION, "num_turns": None, "rollout_reward_scores": {}}
    right = reward(data_source="openai/gsm8k", solution_str=RIGHT, ground_truth="12", extra_info=extra)
    wrong = reward(data_source="openai/gsm8k", solution_str=WRONG, ground_truth="12", extra_info=extra)
    assert right == {"score": pytest.approx(1.2), "accuracy": 1.0, "format": 1.0, "first_error": 0.0}
    assert wrong == {"score": pytest.approx(-0.3), "accuracy": 0.0, "format": 1.0, "first_error": -1.0}
    monkeypatch.setenv("PROCRL_RECIPE", recipe)  # or the environment names the recipe
    assert compute_score("openai/gsm8k", RIGHT, "12", {"question": QUESTION}) == right
    monkeypatch.delenv("PROCRL_RECIPE")
    with pytest.raises(ConfigError, match="needs a recipe: set PROCRL_RECIPE"):
        compute_score("openai/gsm8k", RIGHT, "12")


def _tokenizer():
    from transformers import AutoTokenizer

    from procrl.models.tiny import TOKENIZER_ASSET

    return AutoTokenizer.from_pretrained(TOKENIZER_ASSET)


def _tensors(tokenizer, texts):
    """verl's rollout tensors: left-padded prompts, right-padded responses ending in EOS, one mask."""
    prompt = tokenizer([QUESTION] * len(texts), return_tensors="pt")["input_ids"]
    responses = [tokenizer(t)["input_ids"] + [tokenizer.eos_token_id] for t in texts]
    width = max(map(len, responses)) + 3
    ids = torch.full((len(texts), width), tokenizer.pad_token_id)
    mask = torch.zeros(len(texts), prompt.shape[1] + width, dtype=torch.long)
    mask[:, : prompt.shape[1]] = 1
    for i, row in enumerate(responses):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, prompt.shape[1] : prompt.shape[1] + len(row)] = 1
    non_tensors = {
        "data_source": np.array(["openai/gsm8k"] * len(texts), dtype=object),
        "reward_model": np.array([{"ground_truth": "12", "style": "rule"}] * len(texts), dtype=object),
        "extra_info": np.array([{"question": QUESTION} for _ in texts], dtype=object),
        "uid": np.array([f"u{i}" for i in range(len(texts))], dtype=object),
    }
    return {"prompts": prompt, "responses": ids, "attention_mask": mask}, non_tensors, responses


class _Rollout:
    """The fields of verl's DataProto the manager reads (``batch``, ``non_tensor_batch``, length, slices)."""

    def __init__(self, batch, non_tensor_batch):
        self.batch, self.non_tensor_batch = batch, non_tensor_batch

    def __len__(self):
        return len(self.batch["responses"])

    def __getitem__(self, index):
        return _Rollout(
            {k: v[index] for k, v in self.batch.items()}, {k: v[index] for k, v in self.non_tensor_batch.items()}
        )


def _check_token_rewards(tokenizer, rewards, responses):
    right, wrong = rewards
    # the sound solution: its outcome (1.0 + 0.2 + 0) on its last token (EOS), nothing elsewhere
    assert right.nonzero().flatten().tolist() == [len(responses[0]) - 1]
    assert right[len(responses[0]) - 1].item() == pytest.approx(1.2)
    # the wrong step: its weighted step rewards [0.5 x -1, 0] min-form aggregated as procrl's PPO does
    # (weights softmax(-r / 0.1) = e^5 / (e^5 + 1), 1 / (e^5 + 1)) on the token that ends
    # "3 * 4 = 13"; on the last token what the total (-0.3 = 0 + 0.2 - 0.5) has left after it
    slip = -0.5 * math.exp(5) / (math.exp(5) + 1)
    placed = {k: round(wrong[k].item(), 6) for k in wrong.nonzero().flatten().tolist()}
    step_token = next(k for k, v in placed.items() if v == pytest.approx(slip, abs=1e-6))
    assert "= 13" in tokenizer.decode(responses[1][: step_token + 1]) and "= 13" not in tokenizer.decode(
        responses[1][:step_token]
    )
    assert placed == {
        step_token: pytest.approx(slip, abs=1e-6),
        len(responses[1]) - 1: pytest.approx(-0.3 - slip, abs=1e-6),
    }
    assert wrong.sum().item() == pytest.approx(-0.3)  # the response's total, as procrl score gives it


def test_token_reward_manager_places_step_rewards_on_their_tokens(recipe):
    tokenizer = _tokenizer()
    tensors, non_tensors, responses = _tensors(tokenizer, [RIGHT, WRONG])
    data = _Rollout(tensors, non_tensors)
    manager = ProcrlTokenRewardManager(tokenizer, 0, None, "data_source", recipe=recipe)
    out = manager(data, return_dict=True)  # verl's batch call
    _check_token_rewards(tokenizer, out["reward_tensor"], responses)
    assert out["reward_extra_info"]["score"] == [pytest.approx(1.2), pytest.approx(-0.3)]
    assert out["reward_extra_info"]["first_error"] == [0.0, -1.0]
    # verl's reward loop: one response per run_single, the tensor from assemble_rm_scores
    singles = [asyncio.run(manager.run_single(data[i : i + 1])) for i in range(2)]
    tensor = ProcrlTokenRewardManager.assemble_rm_scores(data, [s["reward_score"] for s in singles])
    assert torch.equal(tensor, out["reward_tensor"])
    assert singles[1]["reward_extra_info"]["accuracy"] == 0.0


def test_with_verl_itself(recipe):
    pytest.importorskip("verl.experimental.reward_loop")
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager

    import procrl.verl

    tokenizer = _tokenizer()
    tensors, non_tensors, responses = _tensors(tokenizer, [RIGHT, WRONG])
    data = DataProto.from_dict(tensors=tensors, non_tensors=non_tensors)
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {"path": None, "name": None},
                "reward_manager": {
                    "source": "importlib",
                    "name": "ProcrlTokenRewardManager",
                    "module": {"path": procrl.verl.__file__},
                },
                "reward_kwargs": {"recipe": recipe},
            }
        }
    )
    manager = load_reward_manager(config, tokenizer, reward_router_address=None, reward_model_tokenizer=None)
    singles = [asyncio.run(manager.run_single(data[i : i + 1])) for i in range(2)]
    _check_token_rewards(
        tokenizer, type(manager).assemble_rm_scores(data, [s["reward_score"] for s in singles]), responses
    )
    # the outcome function through verl's loader and its naive manager
    config.reward.custom_reward_function = {
        "path": procrl.verl.__file__,
        "name": "compute_score",
        "reward_kwargs": {"recipe": recipe},
    }
    config.reward.reward_manager = {"source": "register", "name": "naive"}
    naive = load_reward_manager(config, tokenizer, reward_router_address=None, reward_model_tokenizer=None)
    results = [naive.loop.run_until_complete(naive.run_single(data[i : i + 1])) for i in range(2)]  # verl's loop
    assert [r["reward_score"] for r in results] == [pytest.approx(1.2), pytest.approx(-0.3)]
    assert results[1]["reward_extra_info"]["first_error"] == -1.0
