"""The in-process first-error backends with tiny local models: the hf judge (the embedded tiny
Qwen2: its replies are noise, so verdicts are mostly missing, and nothing may raise) and the
prm judge (a tiny Qwen2 token classifier saved with the Qwen2.5-Math-PRM convention)."""

from __future__ import annotations

import json

import pytest
import torch

from procrl.launch.cli import main
from procrl.models.loading import TINY_MODEL, TOKENIZER_ASSET
from procrl.rewards import RewardBatch, RewardMix, parse_rewards
from procrl.rewards.judges import JudgeItem
from procrl.rewards.judges.hf import HFJudge
from procrl.rewards.judges.prm import PRMJudge, first_below
from procrl.rewards.judges.settings import HFSettings, PRMSettings

COMPLETIONS = [
    "First 3 + 4 = 7.\nThen 7 * 2 = 14.\n#### 14",
    "We add the apples.\nThen we double them and subtract one.\nSo it is 13.\n#### 13",
    "4 * 4 = 16.\n16 / 2 = 8.\n#### 8",
]
ITEMS = [
    JudgeItem("How many apples?", ("3 + 4 = 7.", "7 * 2 = 14.")),
    JudgeItem("A much longer question about many baskets of apples and pears?", ("a", "b", "c")),
    JudgeItem("Short?", ("4 * 4 = 16.",)),
]


# --- hf -------------------------------------------------------------------------------------


def test_hf_judge_on_the_tiny_model_counts_missing_verdicts_and_never_raises():
    mix = RewardMix(
        parse_rewards({"first_error": {"backend": "hf", "model": TINY_MODEL, "max_tokens": 8, "batch_size": 2}})
    )
    assert mix.components["first_error"].needs_model() == TINY_MODEL
    output = mix.compute("first_error", RewardBatch.from_texts(COMPLETIONS, ["q"] * 3))
    assert len(output.scores) == 3 and "exception" not in output.failures
    statuses = [d["verdict"] for d in output.details]
    assert set(statuses) <= {"ok", "no_verdict", "out_of_range"}
    assert sum(output.failures.values()) == sum(s != "ok" for s in statuses)
    for score, status in zip(output.scores, statuses):
        assert (score is None) == (status != "ok")


def test_hf_judge_batched_generation_matches_one_at_a_time():
    batched = HFJudge(HFSettings(model=TINY_MODEL, max_tokens=6, batch_size=3)).generate(ITEMS)
    single = HFJudge(HFSettings(model=TINY_MODEL, max_tokens=6, batch_size=1)).generate(ITEMS)
    assert len(batched) == 3
    assert batched == single  # left padding: padded prompts continue exactly like unpadded ones


def test_hf_judge_failure_becomes_judge_error():
    verdicts = HFJudge(HFSettings(model="/nonexistent/model/dir")).judge_sync(ITEMS[:2])
    assert [v.status for v in verdicts] == ["judge_error", "judge_error"]


# --- prm ------------------------------------------------------------------------------------


def _tiny_prm(directory, positive_bias: float | None = None, seed: int = 0):
    """A Qwen2 token classifier with two labels and the ``<extra_0>`` step separator.

    With ``positive_bias`` the head ignores the hidden state: logits (0, bias) everywhere, so the
    positive-class (index 1) probability of every step is sigmoid(bias).
    """
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForTokenClassification

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_ASSET)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<extra_0>"]})
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        num_labels=2,
        pad_token_id=tokenizer.pad_token_id,
        architectures=["Qwen2ForTokenClassification"],
    )
    model = Qwen2ForTokenClassification(config)
    if positive_bias is not None:
        with torch.no_grad():
            model.score.weight.zero_()
            model.score.bias.copy_(torch.tensor([0.0, positive_bias]))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)


def test_prm_reads_the_positive_class_at_each_separator(tmp_path):
    path = _tiny_prm(tmp_path / "prm", positive_bias=2.0)  # p(correct) = sigmoid(2) = 0.881 per step
    judge = PRMJudge(PRMSettings(model=path, threshold=0.5))
    verdicts = judge.judge_sync(ITEMS)
    for item, verdict in zip(ITEMS, verdicts):
        assert verdict.ok and verdict.index == -1
        assert verdict.step_probabilities == pytest.approx(
            [torch.sigmoid(torch.tensor(2.0)).item()] * len(item.steps), abs=1e-5
        )
    strict = PRMJudge(PRMSettings(model=path, threshold=0.9)).judge_sync(ITEMS)
    assert [v.index for v in strict] == [0, 0, 0]


def test_prm_batched_scores_match_single_and_separators_in_text_are_dropped(tmp_path):
    path = _tiny_prm(tmp_path / "prm-random", seed=1)
    batched = PRMJudge(PRMSettings(model=path, batch_size=3)).step_probabilities(ITEMS)
    single = PRMJudge(PRMSettings(model=path, batch_size=1)).step_probabilities(ITEMS)
    for a, b, item in zip(batched, single, ITEMS):
        assert len(a) == len(item.steps)
        assert a == pytest.approx(b, abs=1e-5)
    sneaky = JudgeItem("q", ("3 + 4 = 7 <extra_0> and more", "fine"))
    assert len(PRMJudge(PRMSettings(model=path)).step_probabilities([sneaky])[0]) == 2


def test_first_below():
    assert first_below([0.9, 0.6, 0.2, 0.1], 0.5) == 2
    assert first_below([0.9, 0.6], 0.5) == -1
    assert first_below([0.4], 0.5) == 0


def test_prm_component_and_eval_judge_threshold_sweep(tmp_path, capsys):
    path = _tiny_prm(tmp_path / "prm", positive_bias=0.0)  # every step p = 0.5
    mix = RewardMix(parse_rewards({"first_error": {"backend": "prm", "model": path, "threshold": 0.6}}))
    output = mix.compute("first_error", RewardBatch.from_texts(COMPLETIONS[:2]))
    assert output.scores == [-1.0, -1.0]  # 0.5 < 0.6 at step 0
    assert output.details[0]["step_probabilities"] == [0.5, 0.5]

    data = tmp_path / "pb.json"
    data.write_text(
        json.dumps(
            [
                {"problem": "q1", "steps": ["a", "b"], "label": -1},
                {"problem": "q2", "steps": ["a", "b"], "label": 0},
                {"problem": "q3", "steps": ["a"], "label": -1},
            ]
        )
    )
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "recipe: procrl/v1\nmodel: {name_or_path: procrl:tiny-qwen2}\ndata: {dataset: synthetic}\n"
        f"rewards:\n  accuracy: {{weight: 1.0}}\n  judge: {{type: first_error, backend: prm, model: '{path}'}}\n"
    )
    assert main(["eval-judge", "--recipe", str(recipe), "--data", str(data), "--json", "--device", "cpu"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 3 and report["threshold"] == 0.5
    sweep = report["threshold_sweep"]
    assert len(sweep["thresholds"]) == 19
    # p = 0.5 everywhere: thresholds <= 0.5 call everything correct, above 0.5 flag step 0
    below = [r for r in sweep["thresholds"] if r["threshold"] <= 0.5]
    above = [r for r in sweep["thresholds"] if r["threshold"] > 0.5]
    assert all(r["acc_cor"] == 1.0 and r["acc_err"] == 0.0 for r in below)
    assert all(r["acc_cor"] == 0.0 and r["acc_err"] == 1.0 for r in above)


def test_judge_models_load_whole_under_zero3():
    from transformers.integrations import HfDeepSpeedConfig
    from transformers.integrations.deepspeed import is_deepspeed_zero3_enabled, unset_hf_deepspeed_config

    zero3 = HfDeepSpeedConfig({"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1})  # noqa: F841 (kept alive: transformers holds a weak reference)
    try:
        assert is_deepspeed_zero3_enabled()
        judge = HFJudge(HFSettings(model=TINY_MODEL, max_tokens=2))
        judge._load()  # would go through deepspeed.zero.Init (and fail without a process group) otherwise
        assert all(p.numel() > 0 and p.device.type == "cpu" for p in judge._model.parameters())
        assert is_deepspeed_zero3_enabled()  # restored after loading
    finally:
        unset_hf_deepspeed_config()
