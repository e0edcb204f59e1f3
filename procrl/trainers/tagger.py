"""``procrl train-tagger``: fine-tune a TRACE sentence tagger and save it in the published format.

Rows ``{"sentence": ..., "labels": [...]}`` (labels named exactly as ``trace.LABELS``; the paper
built such data by having strong LLMs label sentences). The model is the base encoder
(``AutoModel.from_pretrained(BASE)``) plus a Linear(hidden, 8) head on the first token's last
hidden state, trained with binary cross-entropy, exactly the architecture the TRACE loader
(:class:`procrl.rewards.scorers.taggers.TraceCheckpointTagger`) runs.

Saved like ``hyyangkisti/TRACE-DeBERTa-v3-base``: ``config.json`` (id2label = the 8 labels),
the tokenizer files, and ``model.safetensors`` with the encoder under ``<prefix>.*`` and
``classifier.weight|bias``. ``<prefix>`` is the encoder class's ``base_model_prefix``:
``deberta`` for DeBERTa(-v2/v3) (the published layout), ``bert`` for BERT, ``roberta`` for
RoBERTa, ...; the loader reads the same attribute from ``AutoModel.from_config(config)``, so
any encoder round-trips. A held-out split (``--eval-fraction``, or a file: ``--eval-data``) gives
per-label F1, printed at the end and written to ``eval_metrics.json``. ``--train-layers N`` trains
only the head and the encoder's last N layers: the tagger is the base plus a small delta (how
``procrl:trace-tagger`` ships, ``benchmarks/trace_tagger/build_asset.py``).

Also here: :func:`write_tiny_tagger` and :func:`write_tiny_encoder`, random-weight checkpoints
with a locally trained WordPiece tokenizer, for tests and benchmarks that cannot reach the Hub.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError
from procrl.core.folders import claim_folder, write_file
from procrl.rewards.trace import LABELS

__all__ = [
    "TaggerTrainingResult",
    "f1_per_label",
    "read_labelled",
    "train_tagger",
    "write_tiny_encoder",
    "write_tiny_tagger",
]


def read_labelled(path: str | Path, option: str = "--data") -> list[dict[str, Any]]:
    """Rows of a labelled JSONL file, validated (clear error naming the line; ``option`` names the flag)."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{option}: file not found: {path}")
    rows = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path}:{number}: not valid JSON ({error.msg})") from None
        sentence = row.get("sentence") if isinstance(row, dict) else None
        labels = row.get("labels") if isinstance(row, dict) else None
        if not isinstance(sentence, str) or not sentence.strip():
            raise ConfigError(f"{path}:{number}: needs a non-empty string 'sentence'")
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise ConfigError(f"{path}:{number}: 'labels' must be a list of label names")
        unknown = sorted(set(labels) - set(LABELS))
        if unknown:
            raise ConfigError(f"{path}:{number}: unknown label(s) {unknown}; labels are {', '.join(LABELS)}")
        rows.append({"sentence": sentence, "labels": sorted(set(labels), key=LABELS.index)})
    if len(rows) < 2:
        raise ConfigError(f"{path}: need at least 2 labelled rows, found {len(rows)}")
    return rows


def f1_per_label(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]
) -> dict[str, dict[str, float | int | None]]:
    """Per label: support, precision, recall, F1 (None when the label is neither gold nor predicted)."""
    out = {}
    for label in LABELS:
        tp = sum(1 for g, p in zip(gold, predicted) if label in g and label in p)
        fp = sum(1 for g, p in zip(gold, predicted) if label not in g and label in p)
        fn = sum(1 for g, p in zip(gold, predicted) if label in g and label not in p)
        f1 = 2 * tp / (2 * tp + fp + fn) if (tp + fp + fn) else None
        out[label] = {
            "support": tp + fn,
            "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None,
            "f1": f1,
        }
    return out


@dataclass
class TaggerTrainingResult:
    output_dir: Path
    per_label: dict[str, dict[str, float | int | None]]
    macro_f1: float | None
    tagger: Any  # the trained TraceCheckpointTagger, in memory
    epoch_losses: list[float]
    train_sentences: list[str]
    heldout_sentences: list[str]


def _split(rows: list[dict], eval_fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    if not 0.0 <= eval_fraction < 1.0:
        raise ConfigError(f"--eval-fraction: must be in [0, 1), got {eval_fraction}")
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_eval = min(len(rows) - 1, max(1, round(len(rows) * eval_fraction))) if eval_fraction > 0 else 0
    return [rows[i] for i in order[n_eval:]], [rows[i] for i in order[:n_eval]]


def train_tagger(
    data: str | Path,
    base: str,
    output_dir: str | Path,
    *,
    epochs: int = 3,
    batch_size: int = 16,
    learning_rate: float = 3e-5,
    weight_decay: float = 0.01,
    eval_fraction: float = 0.2,
    seed: int = 0,
    max_length: int = 512,
    threshold: float = 0.5,
    device: Any = None,
    log: Callable[[str], None] = print,
    overwrite: bool = False,
    train_layers: int | None = None,
    eval_data: str | Path | None = None,
) -> TaggerTrainingResult:
    """Fine-tune ``base`` + a Linear(hidden, 8) first-token head on labelled sentences; save in
    the published TRACE format; evaluate on a held-out split. ``output_dir`` follows procrl's
    folder rule (procrl/core/folders.py): new, empty, an earlier train-tagger's, or ``overwrite``.

    Args:
        train_layers: train only the head and the last ``train_layers`` transformer layers (the
            embeddings and the layers below stay as in ``base``, so the trained tagger is ``base``
            plus a small delta); None trains every parameter.
        eval_data: a labelled file to evaluate on instead of a random ``eval_fraction`` of
            ``data`` (a held-out set split by source, say); all of ``data`` is then trained on.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    from procrl.core.folders import check_folder
    from procrl.core.paths import check_model_path
    from procrl.rewards.scorers.taggers import TraceCheckpointTagger

    for option, value, low in (
        ("--epochs", epochs, 1),
        ("--batch-size", batch_size, 1),
        ("--max-length", max_length, 1),
    ):
        if value < low:
            raise ConfigError(f"{option}: must be >= {low}, got {value}")
    if not (learning_rate > 0 and learning_rate < float("inf")):
        raise ConfigError(f"--learning-rate: must be a positive number, got {learning_rate}")
    if not weight_decay >= 0:
        raise ConfigError(f"--weight-decay: must be >= 0, got {weight_decay}")
    if train_layers is not None and train_layers < 0:
        raise ConfigError(f"--train-layers: must be >= 0, got {train_layers}")
    rows = read_labelled(data)
    if eval_data is not None:
        train_rows, heldout_rows = rows, read_labelled(eval_data, "--eval-data")
    else:
        train_rows, heldout_rows = _split(rows, eval_fraction, seed)
    check_model_path("--base", str(base), allow_gguf=False, what="base encoder")
    check_folder(output_dir, TAGGER, overwrite=overwrite)  # before training, not when saving at the end
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(seed)
    try:
        tokenizer = AutoTokenizer.from_pretrained(base)
        encoder = AutoModel.from_pretrained(base).float().to(device)
    except (OSError, ValueError) as error:  # a Hub id that is not there or not reachable, a config it cannot read
        raise ConfigError(f"--base: cannot load {base} ({' '.join(str(error).split())[:300]})") from None
    hidden = encoder.config.hidden_size
    head = torch.nn.Linear(hidden, len(LABELS)).to(device)
    torch.nn.init.normal_(head.weight, std=getattr(encoder.config, "initializer_range", 0.02))
    torch.nn.init.zeros_(head.bias)
    if train_layers is not None:
        _freeze_below(encoder, train_layers, str(base))
    parameters = [p for p in encoder.parameters() if p.requires_grad] + list(head.parameters())
    optimizer = torch.optim.AdamW(parameters, lr=learning_rate, weight_decay=weight_decay)
    steps_per_epoch = (len(train_rows) + batch_size - 1) // batch_size
    total_steps = epochs * steps_per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, 1.0 - step / total_steps))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    accepted = {"input_ids", "attention_mask", "token_type_ids"}
    generator = random.Random(seed)
    encoder.train()
    head.train()
    epoch_losses: list[float] = []
    trained = "all layers" if train_layers is None else f"the last {train_layers} layer(s) + head"
    log(
        f"train-tagger: {len(train_rows)} training / {len(heldout_rows)} held-out sentences, base {base}, "
        f"{epochs} epoch(s), batch {batch_size}, lr {learning_rate}, {trained}, device {device}"
    )
    for epoch in range(epochs):
        order = list(range(len(train_rows)))
        generator.shuffle(order)
        epoch_loss = 0.0
        for start in range(0, len(order), batch_size):
            chunk = [train_rows[i] for i in order[start : start + batch_size]]
            encoded = tokenizer(
                [r["sentence"] for r in chunk],
                truncation=True,
                max_length=max_length,
                padding=True,
                return_tensors="pt",
            )
            inputs = {k: v.to(device) for k, v in encoded.items() if k in accepted}
            targets = torch.tensor(
                [[1.0 if label in r["labels"] else 0.0 for label in LABELS] for r in chunk], device=device
            )
            logits = head(encoder(**inputs).last_hidden_state[:, 0])
            loss = loss_fn(logits, targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimizer.step()
            scheduler.step()
            epoch_loss += loss.item() * len(chunk)
        epoch_losses.append(epoch_loss / len(train_rows))
        log(f"  epoch {epoch + 1}/{epochs}: loss {epoch_losses[-1]:.4f}")

    encoder.eval()
    head.eval()
    tagger = TraceCheckpointTagger(
        encoder, head, tokenizer, batch_size=max(batch_size, 32), max_length=max_length, device=device
    )
    _save_published(encoder, head, tokenizer, Path(output_dir))

    per_label: dict = {}
    macro = None
    if heldout_rows:
        probabilities = tagger.predict_proba([r["sentence"] for r in heldout_rows])
        predicted = [[LABELS[j] for j, p in enumerate(row) if p >= threshold] for row in probabilities]
        per_label = f1_per_label([r["labels"] for r in heldout_rows], predicted)
        scored = [v["f1"] for v in per_label.values() if v["f1"] is not None]
        macro = sum(scored) / len(scored) if scored else None
        log(_format_f1(per_label, macro, len(heldout_rows)))
    write_file(
        output_dir,
        "eval_metrics.json",
        json.dumps({"heldout": len(heldout_rows), "macro_f1": macro, "per_label": per_label}, indent=2) + "\n",
    )
    log(f"saved the tagger in the published TRACE format to {output_dir}")
    return TaggerTrainingResult(
        output_dir=Path(output_dir),
        per_label=per_label,
        macro_f1=macro,
        tagger=tagger,
        epoch_losses=epoch_losses,
        train_sentences=[r["sentence"] for r in train_rows],
        heldout_sentences=[r["sentence"] for r in heldout_rows],
    )


TAGGER = "train-tagger"  # the command named in the folder marker (procrl/core/folders.py)


def _encoder_layers(encoder) -> Any:
    """The encoder's stack of transformer layers (``encoder.layer`` for BERT, DeBERTa, RoBERTa)."""
    for path in ("encoder.layer", "layers", "layer", "transformer.layer"):
        module = encoder
        for name in path.split("."):
            module = getattr(module, name, None)
            if module is None:
                break
        if module is not None and hasattr(module, "__len__"):
            return module
    return None


def _freeze_below(encoder, train_layers: int, base: str) -> None:
    """Freeze every encoder parameter except those of the last ``train_layers`` layers."""
    layers = _encoder_layers(encoder)
    if layers is None:
        raise ConfigError(f"--train-layers: cannot find the transformer layers of {base} (encoder.layer)")
    if train_layers > len(layers):
        raise ConfigError(f"--train-layers: {base} has {len(layers)} layers, got {train_layers}")
    for parameter in encoder.parameters():
        parameter.requires_grad_(False)
    for layer in list(layers)[len(layers) - train_layers :]:
        for parameter in layer.parameters():
            parameter.requires_grad_(True)


def _save_published(encoder, head, tokenizer, output_dir: Path) -> None:
    from safetensors.torch import save_file

    claim_folder(output_dir, TAGGER)
    prefix = encoder.base_model_prefix
    tensors = {f"{prefix}.{k}": v.detach().cpu().contiguous().clone() for k, v in encoder.state_dict().items()}
    tensors["classifier.weight"] = head.weight.detach().cpu().contiguous().clone()
    tensors["classifier.bias"] = head.bias.detach().cpu().contiguous().clone()
    save_file(tensors, str(output_dir / "model.safetensors"), metadata={"format": "pt"})
    config = encoder.config
    config.id2label = {i: label for i, label in enumerate(LABELS)}
    config.label2id = {label: i for i, label in enumerate(LABELS)}
    config.problem_type = "multi_label_classification"
    config.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)


def _format_f1(per_label: dict, macro: float | None, n: int) -> str:
    def cell(value):
        return f"{value:.3f}" if isinstance(value, float) else ("-" if value is None else str(value))

    lines = [
        f"held-out F1 per label ({n} sentences):",
        f"  {'label':<16}{'support':>8}{'precision':>11}{'recall':>8}{'f1':>8}",
    ]
    for label, values in per_label.items():
        lines.append(
            f"  {label:<16}{values['support']:>8}{cell(values['precision']):>11}"
            f"{cell(values['recall']):>8}{cell(values['f1']):>8}"
        )
    lines.append(f"  macro-F1 (labels present in gold or predictions): {cell(macro)}")
    return "\n".join(lines)


# --- tiny local checkpoints (tests, benchmarks, offline smoke runs) ----------------------------


def _wordpiece_tokenizer(corpus: Sequence[str], vocab_size: int = 400):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.train_from_iterator(
        list(corpus), trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=special)
    )
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )


def _default_corpus() -> list[str]:
    from procrl.data.synthetic import generate_problems

    corpus = []
    for problem in generate_problems(300, seed=7):
        corpus += [problem["question"], problem["answer"]]
    return corpus + [
        "Let me check the calculation again. Wait, I made a mistake. This answer makes sense.",
        "Recall that there are 60 minutes in an hour. However, maybe the price includes tax.",
        "Therefore, the total is correct. We know that each box holds 12 pencils.",
    ]


def _tiny_config(model_type: str, vocab_size: int, hidden_size: int, num_layers: int, pad_token_id: int):
    from transformers import BertConfig, DebertaV2Config

    common = dict(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        intermediate_size=hidden_size * 2,
        max_position_embeddings=512,
        pad_token_id=pad_token_id,
        id2label={i: label for i, label in enumerate(LABELS)},
        label2id={label: i for i, label in enumerate(LABELS)},
    )
    if model_type == "deberta-v2":
        # DeBERTa-v3 style: relative attention, no absolute position input.
        return DebertaV2Config(
            relative_attention=True,
            position_biased_input=False,
            pos_att_type=["p2c", "c2p"],
            max_relative_positions=-1,
            position_buckets=32,
            **common,
        )
    if model_type == "bert":
        return BertConfig(**common)
    raise ValueError(f"model_type must be 'deberta-v2' or 'bert', got {model_type!r}")


def write_tiny_tagger(
    directory: str | Path,
    *,
    model_type: str = "deberta-v2",
    hidden_size: int = 32,
    num_layers: int = 2,
    seed: int = 0,
    corpus: Sequence[str] | None = None,
) -> Path:
    """A random-weight checkpoint in the published TRACE format: ``config.json``, tokenizer files,
    ``model.safetensors`` with ``<prefix>.*``, ``pooler.*`` and ``classifier.*`` tensors (written
    by the HF sequence-classification class, exactly the layout of the published checkpoint)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    directory = Path(directory)
    tokenizer = _wordpiece_tokenizer(corpus or _default_corpus())
    torch.manual_seed(seed)
    config = _tiny_config(model_type, len(tokenizer), hidden_size, num_layers, tokenizer.pad_token_id)
    model = AutoModelForSequenceClassification.from_config(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def write_tiny_encoder(
    directory: str | Path,
    *,
    model_type: str = "deberta-v2",
    hidden_size: int = 32,
    num_layers: int = 2,
    seed: int = 0,
    corpus: Sequence[str] | None = None,
) -> Path:
    """A random-weight bare encoder (``AutoModel``) + tokenizer: a base for ``train-tagger``."""
    import torch
    from transformers import AutoModel

    directory = Path(directory)
    tokenizer = _wordpiece_tokenizer(corpus or _default_corpus())
    torch.manual_seed(seed)
    config = _tiny_config(model_type, len(tokenizer), hidden_size, num_layers, tokenizer.pad_token_id)
    AutoModel.from_config(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
