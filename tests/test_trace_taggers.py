"""TRACE taggers: the published checkpoint format (exact reference inference, loud failures),
HF multi-label classifiers, the cue tagger, and the train-tagger round trip. Tiny models built
locally (no Hub)."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from procrl.rewards.scorers.taggers import (
    CueTagger,
    HFSequenceTagger,
    TaggerLoadError,
    TraceCheckpointTagger,
    load_tagger,
)
from procrl.rewards.trace import LABELS
from procrl.trainers.tagger import f1_per_label, read_labelled, train_tagger, write_tiny_encoder, write_tiny_tagger

DATA = Path(__file__).parent / "data" / "trace_sentences.jsonl"

SENTENCES = [
    "Natalia sold 48 clips in April.",
    "So she sold 48 + 24 = 72 clips in total, which is the number of clips she sold altogether in both months.",
    "Let me check the calculation again.",
    "Recall that there are 60 minutes in an hour.",
    "However, the question asks for girls.",
    "x",
    "This answer makes sense because it is less than the budget and the budget was 100 dollars in the problem.",
]


@pytest.fixture(scope="module")
def tagger_dir(tmp_path_factory):
    return write_tiny_tagger(tmp_path_factory.mktemp("trace-tagger") / "ckpt", seed=3)


def _reference_probabilities(directory, sentences):
    """The reference inference written out by hand: AutoModel.from_config + Linear(hidden, 8) on
    the first token's last hidden state, pooler ignored, sigmoid, one sentence at a time."""
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    config = AutoConfig.from_pretrained(directory)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    encoder = AutoModel.from_config(config).eval()
    state = load_file(str(Path(directory) / "model.safetensors"))
    encoder.load_state_dict({k[len("deberta.") :]: v for k, v in state.items() if k.startswith("deberta.")})
    head = torch.nn.Linear(config.hidden_size, 8)
    head.load_state_dict({"weight": state["classifier.weight"], "bias": state["classifier.bias"]})
    rows = []
    with torch.no_grad():
        for sentence in sentences:
            inputs = tokenizer(sentence, truncation=True, max_length=512, return_tensors="pt")
            hidden = encoder(**inputs).last_hidden_state[:, 0]
            rows.append(torch.sigmoid(head(hidden))[0])
    return torch.stack(rows)


def test_published_checkpoint_has_the_published_layout(tagger_dir):
    from safetensors import safe_open

    with safe_open(str(tagger_dir / "model.safetensors"), framework="pt") as f:
        keys = set(f.keys())
    assert {"classifier.weight", "classifier.bias", "pooler.dense.weight", "pooler.dense.bias"} <= keys
    assert any(k.startswith("deberta.encoder.") for k in keys)
    assert (tagger_dir / "config.json").is_file() and (tagger_dir / "tokenizer.json").is_file()


def test_published_format_reproduces_the_reference_forward(tagger_dir):
    tagger = load_tagger(str(tagger_dir), batch_size=3)
    assert isinstance(tagger, TraceCheckpointTagger)
    batched = torch.tensor(tagger.predict_proba(SENTENCES))
    reference = _reference_probabilities(tagger_dir, SENTENCES)
    assert batched.shape == (len(SENTENCES), 8)
    # batched + padded vs one at a time: equal up to float32 rounding of the padded matmuls
    torch.testing.assert_close(batched, reference, rtol=0, atol=1e-6)
    # batch size 1 runs the very same computation as the reference: bit-identical
    single = torch.tensor(load_tagger(str(tagger_dir), batch_size=1).predict_proba(SENTENCES))
    assert torch.equal(single, reference)


def test_published_format_ignores_the_pooler(tagger_dir):
    """The HF sequence-classification forward goes through the pooler and differs; changing
    the pooler tensors does not change the TRACE tagger's output."""
    from transformers import AutoModelForSequenceClassification

    tagger = load_tagger(str(tagger_dir))
    ours = torch.tensor(tagger.predict_proba(SENTENCES))
    hf = AutoModelForSequenceClassification.from_pretrained(tagger_dir).eval()
    with torch.no_grad():
        enc = tagger.tokenizer(SENTENCES, padding=True, return_tensors="pt")
        via_pooler = torch.sigmoid(hf(**enc).logits)
    assert (ours - via_pooler).abs().max() > 1e-4
    forced_hf = load_tagger(str(tagger_dir), format="hf")
    assert isinstance(forced_hf, HFSequenceTagger)
    torch.testing.assert_close(torch.tensor(forced_hf.predict_proba(SENTENCES)), via_pooler, rtol=0, atol=1e-6)


def test_pooler_tensors_do_not_matter(tagger_dir, tmp_path):
    from safetensors.torch import load_file, save_file

    copy = tmp_path / "no-pooler"
    shutil.copytree(tagger_dir, copy)
    state = load_file(str(copy / "model.safetensors"))
    reference = torch.tensor(load_tagger(str(copy)).predict_proba(SENTENCES))
    save_file({k: v for k, v in state.items() if not k.startswith("pooler.")}, str(copy / "model.safetensors"))
    assert torch.equal(torch.tensor(load_tagger(str(copy), format="trace").predict_proba(SENTENCES)), reference)


def _without(tagger_dir, tmp_path, drop):
    from safetensors.torch import load_file, save_file

    copy = tmp_path / "broken"
    shutil.copytree(tagger_dir, copy)
    state = load_file(str(copy / "model.safetensors"))
    save_file({k: v for k, v in state.items() if not drop(k)}, str(copy / "model.safetensors"))
    return copy


def test_missing_head_tensors_fail_loudly(tagger_dir, tmp_path):
    broken = _without(tagger_dir, tmp_path, lambda k: k.startswith("classifier."))
    with pytest.raises(TaggerLoadError, match=r"head tensor\(s\) \['classifier.weight', 'classifier.bias'\] missing"):
        load_tagger(str(broken), format="trace")


def test_missing_encoder_tensors_fail_loudly(tagger_dir, tmp_path):
    broken = _without(tagger_dir, tmp_path, lambda k: k.startswith("deberta.encoder.layer.1."))
    with pytest.raises(TaggerLoadError, match=r"encoder tensor\(s\) missing .*deberta.encoder.layer.1"):
        load_tagger(str(broken))


def test_missing_weights_file_and_wrong_labels_fail_loudly(tagger_dir, tmp_path):
    empty = tmp_path / "empty"
    shutil.copytree(tagger_dir, empty)
    (empty / "model.safetensors").unlink()
    with pytest.raises(TaggerLoadError, match="no model.safetensors"):
        load_tagger(str(empty), format="trace")
    renamed = tmp_path / "renamed"
    shutil.copytree(tagger_dir, renamed)
    config = json.loads((renamed / "config.json").read_text())
    config["id2label"] = {str(i): name for i, name in enumerate(["A", "B", "C", "D", "E", "F", "G", "H"])}
    config["label2id"] = {v: int(k) for k, v in config["id2label"].items()}
    (renamed / "config.json").write_text(json.dumps(config))
    with pytest.raises(TaggerLoadError, match="lacks TRACE label"):
        load_tagger(str(renamed))


def test_id2label_order_is_respected(tagger_dir, tmp_path):
    """A checkpoint whose id2label lists the labels in another order: outputs are reordered."""
    permuted = tmp_path / "permuted"
    shutil.copytree(tagger_dir, permuted)
    config = json.loads((permuted / "config.json").read_text())
    order = list(reversed(LABELS))
    config["id2label"] = {str(i): name for i, name in enumerate(order)}
    config["label2id"] = {name: i for i, name in enumerate(order)}
    (permuted / "config.json").write_text(json.dumps(config))
    straight = torch.tensor(load_tagger(str(tagger_dir)).predict_proba(SENTENCES))
    reordered = torch.tensor(load_tagger(str(permuted)).predict_proba(SENTENCES))
    assert torch.equal(reordered, straight.flip(1))


def test_hf_multilabel_classifier_with_the_labels_in_id2label(tmp_path):
    """A BERT-style classifier with a differently shaped head (auto -> 'hf'), labels shuffled."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, RobertaConfig

    base = write_tiny_tagger(tmp_path / "bert", model_type="bert", seed=1)
    tokenizer = AutoTokenizer.from_pretrained(base)
    names = list(LABELS) + ["Other"]
    names = names[3:] + names[:3]
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=520,
        pad_token_id=tokenizer.pad_token_id,
        id2label=dict(enumerate(names)),
        label2id={n: i for i, n in enumerate(names)},
    )
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config).eval()
    model.save_pretrained(tmp_path / "roberta")
    tokenizer.save_pretrained(tmp_path / "roberta")
    tagger = load_tagger(str(tmp_path / "roberta"), batch_size=2)
    assert isinstance(tagger, HFSequenceTagger)
    with torch.no_grad():
        logits = model(**tokenizer(SENTENCES, padding=True, return_tensors="pt")).logits
    expected = torch.sigmoid(logits)[:, [names.index(label) for label in LABELS]]
    torch.testing.assert_close(torch.tensor(tagger.predict_proba(SENTENCES)), expected, rtol=0, atol=1e-6)


def test_hf_classifier_without_the_labels_is_refused(tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig

    base = write_tiny_tagger(tmp_path / "bert", model_type="bert", seed=1)
    config = BertConfig(
        vocab_size=500, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, num_labels=3
    )
    AutoModelForSequenceClassification.from_config(config).save_pretrained(tmp_path / "nli")
    AutoTokenizer.from_pretrained(base).save_pretrained(tmp_path / "nli")
    with pytest.raises(TaggerLoadError, match="lacks TRACE label"):
        load_tagger(str(tmp_path / "nli"), format="hf")


def test_cue_tagger_matches_the_handwritten_labels():
    """The cue lists were tuned on tests/data/trace_sentences.jsonl (written for this purpose)."""
    rows = read_labelled(DATA)
    tagger = CueTagger()
    predicted = [
        [LABELS[j] for j, p in enumerate(row) if p >= 0.5]
        for row in tagger.predict_proba([r["sentence"] for r in rows])
    ]
    exact = sum(set(p) == set(r["labels"]) for p, r in zip(predicted, rows)) / len(rows)
    scores = f1_per_label([r["labels"] for r in rows], predicted)
    macro = sum(v["f1"] for v in scores.values()) / len(scores)
    assert exact >= 0.9 and macro >= 0.9, (exact, scores)
    assert tagger.predict_proba(["", "   "]) == [[0.0] * 8, [0.0] * 8]


def test_cue_tagger_gives_a_well_argued_solution_a_higher_trace_than_rambling():
    from procrl.rewards.trace import trace_score

    tagger = CueTagger()

    def score(sentences):
        rows = tagger.predict_proba(sentences)
        return trace_score([{LABELS[j] for j, p in enumerate(r) if p >= 0.5} for r in rows]).score

    argued = [
        "Natalia sold 48 clips in April.",
        "In May she sold half as many, so she sold 24 clips.",
        "So she sold 48 + 24 = 72 clips in total.",
    ]
    rambling = ["Hmm, wait.", "Maybe it is probably around 70, I guess.", "Wait, let me re-read.", "I think maybe 72."]
    assert score(argued) > 0.9 > 0.3 > score(rambling)


def test_train_tagger_round_trip(tmp_path, capsys):
    base = write_tiny_encoder(tmp_path / "base", seed=5)
    result = train_tagger(
        DATA, str(base), tmp_path / "tagger", epochs=2, batch_size=16, learning_rate=1e-3, eval_fraction=0.25, seed=0
    )
    printed = capsys.readouterr().out
    n_heldout = round(len(read_labelled(DATA)) * 0.25)
    assert f"held-out F1 per label ({n_heldout} sentences)" in printed and "macro-F1" in printed
    for label in LABELS:
        assert label in printed
    saved = tmp_path / "tagger"
    from safetensors import safe_open

    with safe_open(str(saved / "model.safetensors"), framework="pt") as f:
        keys = set(f.keys())
    assert {"classifier.weight", "classifier.bias"} <= keys and all(
        k.startswith(("deberta.", "classifier.")) for k in keys
    )
    assert json.loads((saved / "config.json").read_text())["id2label"] == {
        str(i): label for i, label in enumerate(LABELS)
    }
    metrics = json.loads((saved / "eval_metrics.json").read_text())
    assert metrics["heldout"] == n_heldout and set(metrics["per_label"]) == set(LABELS)

    loaded = load_tagger(str(saved))
    assert isinstance(loaded, TraceCheckpointTagger)
    sentences = result.train_sentences + result.heldout_sentences
    assert loaded.predict_proba(sentences) == result.tagger.predict_proba(sentences)
    assert len(result.epoch_losses) == 2 and result.epoch_losses[-1] < result.epoch_losses[0]


@pytest.mark.slow
def test_train_tagger_with_a_bert_base_uses_the_bert_prefix(tmp_path, capsys):
    base = write_tiny_encoder(tmp_path / "bert-base", model_type="bert", seed=2)
    result = train_tagger(DATA, str(base), tmp_path / "bert-tagger", epochs=1, batch_size=16, learning_rate=1e-3)
    from safetensors import safe_open

    with safe_open(str(tmp_path / "bert-tagger" / "model.safetensors"), framework="pt") as f:
        keys = set(f.keys())
    assert any(k.startswith("bert.encoder.") for k in keys) and "classifier.weight" in keys
    loaded = load_tagger(str(tmp_path / "bert-tagger"))
    assert isinstance(loaded, TraceCheckpointTagger)
    sentences = result.heldout_sentences
    assert loaded.predict_proba(sentences) == result.tagger.predict_proba(sentences)


def test_train_tagger_cli_rejects_bad_labels(tmp_path):
    from procrl.launch.cli import main

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sentence": "So it is 4.", "labels": ["Claim"]}\n{"sentence": "Hi.", "labels": ["Conclusion"]}\n')
    assert main(["train-tagger", "--data", str(bad), "--base", "unused", "--output-dir", str(tmp_path / "o")]) == 2


def test_model_tagger_loads_whole_under_zero3(tagger_dir):
    """Each rank runs its own tagger: under ZeRO-3 (zero3 init active) it is not partitioned."""
    from transformers.integrations import HfDeepSpeedConfig
    from transformers.integrations.deepspeed import is_deepspeed_zero3_enabled, unset_hf_deepspeed_config

    zero3 = HfDeepSpeedConfig({"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1})  # noqa: F841 (transformers keeps a weak reference)
    try:
        assert is_deepspeed_zero3_enabled()
        tagger = load_tagger(str(tagger_dir))
        assert all(p.numel() > 0 for p in tagger.encoder.parameters())
        assert is_deepspeed_zero3_enabled()  # restored after loading
    finally:
        unset_hf_deepspeed_config()
    reference = load_tagger(str(tagger_dir))
    assert tagger.predict_proba(SENTENCES) == reference.predict_proba(SENTENCES)
