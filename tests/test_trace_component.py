"""The `trace` reward component: scores, per-step scores, diagnostics, batching of a model
tagger, failure handling, `procrl score` output, and the tiny CPU training run."""

import json
import math
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.rewards import RewardBatch, RewardMix, RuntimeContext, parse_rewards
from procrl.rewards.trace import LABELS, TraceReward, sentence_validity, trace_score
from procrl.trainers.tagger import write_tiny_tagger

REPO = Path(__file__).resolve().parents[1]

WELL_ARGUED = (
    "Natalia sold 48 clips in April.\n"
    "In May she sold half as many, so she sold 48 / 2 = 24 clips.\n"
    "So she sold 48 + 24 = 72 clips in total.\n"
    "The answer is 72."
)
RAMBLING = "Hmm, wait. Maybe it is probably around 70, I guess. Wait, let me re-read. I think maybe 72."


def _component(**settings):
    (spec,) = parse_rewards({"trace": settings})
    return RewardMix([spec]), spec


def test_cue_component_scores_steps_and_diagnostics():
    mix, _ = _component(weight=0.5, tagger="cues")
    component = mix.components["trace"]
    assert component.needs_model() is None
    batch = RewardBatch.from_texts([WELL_ARGUED, RAMBLING, "", "#### 5"])
    output = mix.compute("trace", batch)
    good, bad, empty, answer_only = output.scores
    assert good > 0.9 and bad < 0.3
    assert empty == 0.0 and answer_only == 0.0  # empty reasoning scores 0.0

    details = output.details
    assert details[0]["sentences"] == [s.text for s in batch.segmentations[0].sentences]
    assert details[0]["labels"] == [["Data/Evidence"], ["Claim"], ["Claim"]]
    assert details[2]["labels"] == [] and details[2]["sentences"] == []
    for i, seg in enumerate(batch.segmentations):
        # the component's score is exactly the pure formula on the labels it reports
        result = trace_score(details[i]["labels"])
        assert output.scores[i] == pytest.approx(result.score)
        assert details[i]["state_validity"] == result.state_validity
        assert details[i]["transition_coherence"] == result.transition_coherence
        # per-step scores: mean sentence validity of each step's sentences
        steps = output.step_scores[i]
        assert len(steps) == len(seg.steps)
        for j in range(len(seg.steps)):
            mine = [sentence_validity(details[i]["labels"][k]) for k, s in enumerate(seg.sentence_step) if s == j]
            assert steps[j] == pytest.approx(sum(mine) / len(mine) if mine else 0.0)

    # batch diagnostics: element shares over all sentences, 8x8 transition counts
    sentences = [labels for d in details for labels in d["labels"]]
    for label in LABELS:
        share = sum(label in s for s in sentences) / len(sentences)
        assert output.metrics[f"element_share/{label}"] == pytest.approx(share)
    assert output.extras["labels"] == list(LABELS)
    assert output.extras["element_counts"] == [sum(label in s for s in sentences) for label in LABELS]
    assert details[0]["element_counts"] == {**{label: 0 for label in LABELS}, "Data/Evidence": 1, "Claim": 2}
    matrix = output.extras["transition_counts"]
    assert len(matrix) == 8 and all(len(row) == 8 and all(isinstance(v, int) for v in row) for row in matrix)
    expected = [[0] * 8 for _ in range(8)]
    for d in details:
        for i, row in enumerate(trace_score(d["labels"]).transition_counts):
            for j, value in enumerate(row):
                expected[i][j] += value
    assert matrix == expected and sum(map(sum, matrix)) > 0
    # the batch means are over the completions with sentences: the empty and answer-only ones are left out
    labelled = [d for d in details if d["labels"]]
    assert len(labelled) == 2
    for key in ("state_validity", "transition_coherence"):
        assert output.metrics[key] == pytest.approx(sum(d[key] for d in labelled) / 2)


def test_settings_are_validated_with_one_line_errors():
    with pytest.raises(ConfigError, match=r"rewards.trace.alpha: must be in \[0, 1\]"):
        parse_rewards({"trace": {"alpha": 1.5}})
    with pytest.raises(ConfigError, match="rewards.trace.batch_size"):
        parse_rewards({"trace": {"batch_size": 0}})
    with pytest.raises(ConfigError, match="rewards.trace.tagger_format: invalid value 'pooled'"):
        parse_rewards({"trace": {"tagger_format": "pooled"}})
    with pytest.raises(ConfigError, match="did you mean 'batch_size'"):
        parse_rewards({"trace": {"batchsize": 8}})
    (spec,) = parse_rewards({"trace": {"tagger": "hyyangkisti/TRACE-DeBERTa-v3-base", "batch_size": 64, "weight": 0.5}})
    assert TraceReward(spec.settings).needs_model() == "hyyangkisti/TRACE-DeBERTa-v3-base"


def test_alpha_setting_reaches_the_formula():
    batch = RewardBatch.from_texts([RAMBLING, WELL_ARGUED])
    mix, _ = _component(alpha=1.0)
    out = mix.compute("trace", batch)
    assert out.scores == [pytest.approx(d["state_validity"]) for d in out.details]


@pytest.fixture(scope="module")
def tagger_dir(tmp_path_factory):
    return write_tiny_tagger(tmp_path_factory.mktemp("trace-component") / "ckpt", seed=11)


def test_model_tagger_loads_lazily_once_and_tags_the_whole_batch_in_one_pass(tagger_dir):
    mix, _ = _component(tagger=str(tagger_dir), batch_size=256, threshold=0.5)
    component = mix.components["trace"]
    assert component.needs_model() == str(tagger_dir)
    mix.bind(RuntimeContext(device="cpu"))
    assert component._tagger is None  # nothing loaded before the first score
    completions = [WELL_ARGUED, RAMBLING, "", "One sentence only."] * 2
    batch = RewardBatch.from_texts(completions)
    n_sentences = sum(len(s.sentences) for s in batch.segmentations)
    output = mix.compute("trace", batch)
    tagger = component._tagger
    calls = []
    tagger.encoder.register_forward_hook(lambda module, args, kwargs_or_out: calls.append(1))
    second = mix.compute("trace", RewardBatch.from_texts(completions))
    assert component._tagger is tagger  # loaded once
    assert len(calls) == 1  # all sentences of the batch: one forward pass at batch_size 256
    assert second.scores == output.scores
    # the labels come from the model's probabilities at the threshold
    probabilities = tagger.predict_proba([s.text for seg in batch.segmentations for s in seg.sentences])
    assert len(probabilities) == n_sentences
    flat = [labels for d in output.details for labels in d["labels"]]
    assert flat == [[LABELS[j] for j, p in enumerate(row) if p >= 0.5] for row in probabilities]
    # with batch_size 4 the same sentences take ceil(n/4) passes and give the same labels
    mix_small, _ = _component(tagger=str(tagger_dir), batch_size=4)
    small = mix_small.compute("trace", RewardBatch.from_texts(completions))
    small_calls = []
    mix_small.components["trace"]._tagger.encoder.register_forward_hook(lambda *a: small_calls.append(1))
    mix_small.compute("trace", RewardBatch.from_texts(completions))
    assert len(small_calls) == math.ceil(n_sentences / 4)
    assert [d["labels"] for d in small.details] == [d["labels"] for d in output.details]


def test_non_finite_probabilities_fail_per_sample_not_the_batch(tagger_dir):
    mix, _ = _component(tagger=str(tagger_dir))
    component = mix.components["trace"]
    component.tagger.head.bias.data[2] = float("nan")
    output = mix.compute("trace", RewardBatch.from_texts([WELL_ARGUED, "", RAMBLING]))
    assert output.scores == [None, 0.0, None]  # None = no opinion (the spec's fallback)
    assert output.failures == {"non_finite_probability": 2}
    assert output.step_scores[0] is None and output.step_scores[1] == []


def test_a_missing_tagger_fails_the_component_not_training(tmp_path):
    mix, _ = _component(tagger=str(tmp_path / "nowhere"), fallback=0.0)
    output = mix.compute("trace", RewardBatch.from_texts([WELL_ARGUED]))
    assert output.scores == [0.0] and output.failures == {"exception": 1}


def test_procrl_score_writes_per_sentence_labels(tmp_path):
    from procrl.launch.cli import main

    rows = [
        {"question": "How many clips?", "completion": WELL_ARGUED, "answer": "#### 72"},
        {"question": "?", "completion": RAMBLING},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    assert (
        main(
            [
                "score",
                "--recipe",
                str(REPO / "recipes" / "gsm8k_tiny_smoke.yaml"),
                "--input",
                str(source),
                "--output",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    first = scored[0]
    assert first["diagnostics"]["trace"]["labels"] == [["Data/Evidence"], ["Claim"], ["Claim"]]
    assert len(first["diagnostics"]["trace"]["sentences"]) == 3
    assert first["rewards"]["trace"] > 0.9 > scored[1]["rewards"]["trace"]
    assert all("trace" in step["scores"] for step in first["steps"])


def test_tiny_cpu_recipe_logs_the_trace_reward(tmp_path):
    from procrl.launch.cli import main

    output_dir = tmp_path / "run"
    assert (
        main(
            [
                "train",
                str(REPO / "recipes" / "gsm8k_tiny_smoke.yaml"),
                "--set",
                "trainer.max_steps=2",
                "--set",
                "trainer.save_steps=100",
                "--output-dir",
                str(output_dir),
            ]
        )
        == 0
    )
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "rewards/trace/mean" in entry]
    assert len(logged) == 2
    for entry in logged:
        assert 0.0 <= entry["rewards/trace/mean"] <= 1.0
        assert "rewards/trace/element_share/Claim" in entry
