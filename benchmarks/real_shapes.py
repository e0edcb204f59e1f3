"""Real-architecture random-weight models for the benchmarks (no download): the configurations,
locally built stand-ins for the tokenizers, and writers that save each model in the on-disk
format procrl loads, so that the benchmarks run procrl's real loading and scoring code.

Configurations, written here from the published ``config.json`` files (nothing fetched):

* ``deberta-v3-large``: microsoft/deberta-v3-large, the architecture of ReCEval's NLI model
  ``MoritzLaurer/DeBERTa-v3-large-mnli-fever-anli-ling-wanli`` (435M parameters, 3 labels);
* ``deberta-v3-base``: microsoft/deberta-v3-base, the encoder of the published TRACE tagger
  ``hyyangkisti/TRACE-DeBERTa-v3-base`` (184M parameters + Linear(768, 8));
* ``qwen2.5-0.5b`` / ``1.5b`` / ``7b``: Qwen/Qwen2.5-*-Instruct (decoder-only LMs).

Tokenizers (simplified; the real ones cannot be downloaded here). Token counts decide the cost,
so the stand-ins imitate how the real tokenizers cut text, and are trained on GSM8K train
problems *other than* the ones the benchmarks score:

* DeBERTa-v3 uses a 128k SentencePiece unigram model; the stand-in is a BPE model over
  SentencePiece-style pieces (whitespace marker ``▁``, numbers and punctuation split from
  letters), ``[CLS] A [SEP] B [SEP]`` pairs (with a vocabulary that covers the domain's words,
  either model cuts GSM8K text into about one token per piece);
* Qwen2.5 uses a 151k byte-level BPE whose pre-tokenizer puts every digit in its own token; the
  stand-in is a byte-level BPE with that pre-tokenizer and Qwen's special tokens.

Both vocabularies are far smaller than the real ones (the models keep their real vocabulary
size; ids only index the embedding). Both count at least one token per pre-tokenizer piece, a
hard lower bound that the real tokenizers share; :func:`token_stats` reports both, so a reader
sees how far above the bound the stand-in lands. Pass a real tokenizer (a Hub id or a
directory) where one is available, and the benchmarks use it instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from procrl.models.parameters import KNOWN_ARCHITECTURES

REPO = Path(__file__).resolve().parent.parent


def _find_gsm8k() -> Path:
    """``shared/data/gsm8k/train.jsonl`` next to the repository (or next to a folder holding it, as
    for a git worktree); $PROCRL_GSM8K_TRAIN wins."""
    if os.environ.get("PROCRL_GSM8K_TRAIN"):
        return Path(os.environ["PROCRL_GSM8K_TRAIN"])
    for parent in REPO.parents:
        candidate = parent / "shared" / "data" / "gsm8k" / "train.jsonl"
        if candidate.is_file():
            return candidate
    return REPO.parent / "shared" / "data" / "gsm8k" / "train.jsonl"


GSM8K_TRAIN = _find_gsm8k()
TRACE_LABELS = ("Claim", "Data/Evidence", "Warrant", "Backing", "Qualifier", "Rebuttal", "Monitoring", "Evaluation")

# --- configurations -----------------------------------------------------------------------------

_DEBERTA_V3 = {
    "model_type": "deberta-v2",
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-7,
    "max_position_embeddings": 512,
    "max_relative_positions": -1,
    "norm_rel_ebd": "layer_norm",
    "pad_token_id": 0,
    "pos_att_type": ["p2c", "c2p"],
    "position_biased_input": False,
    "position_buckets": 256,
    "relative_attention": True,
    "share_att_key": True,
    "type_vocab_size": 0,
    "vocab_size": 128100,
}
DEBERTA_V3_LARGE = {
    **_DEBERTA_V3,
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
}
DEBERTA_V3_BASE = {
    **_DEBERTA_V3,
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
}
# Hidden-32 versions of the same architectures: the benchmarks' code paths in seconds (tests).
TINY_DEBERTA_V3 = {
    **_DEBERTA_V3,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
}
NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}  # MoritzLaurer/...-wanli's id2label

_QWEN25 = {
    "model_type": "qwen2",
    "hidden_act": "silu",
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "use_sliding_window": False,
    "attention_dropout": 0.0,
    "initializer_range": 0.02,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
}
# the shapes procrl check plans with (procrl/models/parameters.py), completed to a loadable config
QWEN25 = {size: {**_QWEN25, **KNOWN_ARCHITECTURES[f"qwen2.5-{size}"]} for size in ("0.5b", "1.5b", "7b")}
TINY_QWEN25_LM = {
    **_QWEN25,
    "vocab_size": 151936,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "tie_word_embeddings": True,
}
# The tiny policy of --shape tiny: procrl's embedded CPU model (hidden 64, 2 layers, 512-token vocab).
TINY_QWEN2 = {
    **_QWEN25,
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": True,
    "max_position_embeddings": 2048,
}


def cache_dir() -> Path:
    """Where built models and tokenizers are kept between runs ($PROCRL_CACHE/bench-models)."""
    root = Path(os.environ.get("PROCRL_CACHE", Path.home() / ".cache" / "procrl"))
    return root / "bench-models"


# --- data ---------------------------------------------------------------------------------------


def gsm8k_rows(skip: int = 0, count: int | None = None) -> list[dict]:
    """GSM8K train rows ``skip .. skip+count`` (:data:`GSM8K_TRAIN`)."""
    if not GSM8K_TRAIN.is_file():
        raise FileNotFoundError(f"GSM8K train data not found at {GSM8K_TRAIN}")
    rows = []
    with GSM8K_TRAIN.open() as handle:
        for index, line in enumerate(handle):
            if index < skip:
                continue
            if count is not None and len(rows) == count:
                break
            rows.append(json.loads(line))
    return rows


def _tokenizer_corpus(skip: int) -> list[str]:
    """GSM8K train questions and solutions after the first ``skip`` rows (the scored ones)."""
    return [text for row in gsm8k_rows(skip=skip) for text in (row["question"], row["answer"])]


# --- tokenizers ---------------------------------------------------------------------------------

# Qwen2's pre-tokenizer pattern (tokenizer.json of Qwen2.5): single digits, letter runs, punctuation runs.
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# SentencePiece-style pieces after the whitespace marker: letter runs, digit runs, punctuation runs.
SPM_PATTERN = r"▁?[^\W\d_]+|▁?\d+|▁?[^\w\s▁]+|▁"


def _build_deberta_like(directory: Path, corpus: Sequence[str], vocab_size: int) -> None:
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]  # DeBERTa-v3's ids 0..3 (+ mask)
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.NFKC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False),
            pre_tokenizers.Split(Regex(SPM_PATTERN), behavior="isolated"),
        ]
    )
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.train_from_iterator(list(corpus), trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special))
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)]
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    ).save_pretrained(directory)


def _build_qwen_like(directory: Path, corpus: Sequence[str], vocab_size: int) -> None:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from procrl.models.loading import CHAT_TEMPLATE

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokenizer.train_from_iterator(
        list(corpus),
        trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        model_max_length=32768,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(directory)


def local_tokenizer(kind: str, *, skip: int = 256, vocab_size: int = 32000) -> Path:
    """Directory of the stand-in tokenizer ``kind`` ('deberta-v3' or 'qwen2.5'), built once from
    GSM8K train rows after the first ``skip`` (those are the ones the benchmarks score)."""
    builders = {"deberta-v3": _build_deberta_like, "qwen2.5": _build_qwen_like}
    if kind not in builders:
        raise ValueError(f"kind must be one of {sorted(builders)}, got {kind!r}")
    directory = cache_dir() / f"tokenizer-{kind}-v2-skip{skip}-{vocab_size}"
    if not (directory / "tokenizer.json").is_file():
        temporary = directory.with_name(directory.name + f".tmp{os.getpid()}")
        builders[kind](temporary, _tokenizer_corpus(skip), vocab_size)
        _publish(temporary, directory)
    return directory


def _publish(temporary: Path, directory: Path) -> None:
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        temporary.rename(directory)
    except OSError:  # another process built it first
        shutil.rmtree(temporary, ignore_errors=True)


def pretokenized_pieces(kind: str, text: str) -> int:
    """Pieces of the real tokenizer's pre-tokenization: a lower bound on its token count."""
    if kind == "qwen2.5":
        import regex

        return len(regex.findall(QWEN2_PATTERN, text))
    spaced = "▁" + re.sub(r"\s+", " ", text).strip().replace(" ", "▁")
    return len(re.findall(SPM_PATTERN, spaced))


def token_stats(tokenizer: Any, kind: str, texts: Sequence[str]) -> dict[str, float]:
    """Tokens per text (without special tokens), per word, and the pre-tokenizer lower bound."""
    tokens = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    words = sum(len(t.split()) for t in texts)
    bound = sum(pretokenized_pieces(kind, t) for t in texts)
    n = max(len(texts), 1)
    return {
        "tokens_per_text": tokens / n,
        "tokens_per_word": tokens / max(words, 1),
        "lower_bound_per_text": bound / n,
        "above_lower_bound": tokens / max(bound, 1) - 1.0,
    }


# --- models -------------------------------------------------------------------------------------


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _tokenizer_files(tokenizer_dir: str | Path) -> Path:
    """A tokenizer as a local directory (a Hub id is saved to a temporary directory first)."""
    path = Path(tokenizer_dir)
    if path.is_dir():
        return path
    from transformers import AutoTokenizer

    target = cache_dir() / f"tokenizer-hub-{_key(str(tokenizer_dir))}"
    if not target.is_dir():
        AutoTokenizer.from_pretrained(str(tokenizer_dir)).save_pretrained(target)
    return target


def _write(directory: Path, build, tokenizer_dir: str | Path) -> Path:
    """Build with ``build(temporary_dir)``, copy the tokenizer in, publish atomically (cached)."""
    if (directory / "config.json").is_file():
        return directory
    temporary = directory.with_name(directory.name + f".tmp{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    build(temporary)
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(str(_tokenizer_files(tokenizer_dir))).save_pretrained(temporary)
    _publish(temporary, directory)
    return directory


def _seeded(seed: int):
    import torch

    torch.manual_seed(seed)


def write_nli_model(tokenizer_dir: str | Path, *, config: dict | None = None, seed: int = 0) -> Path:
    """ReCEval's NLI model: DeBERTa-v3-large sequence classifier, 3 labels, random fp32 weights
    (the published checkpoint is fp32), saved with ``save_pretrained`` (what NLIScorer loads)."""
    config = dict(config or DEBERTA_V3_LARGE)
    directory = cache_dir() / f"nli-{_key(config, str(tokenizer_dir), seed)}"

    def build(path: Path) -> None:
        from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

        _seeded(seed)
        model = DebertaV2ForSequenceClassification(
            DebertaV2Config(**config, num_labels=3, id2label=NLI_LABELS, label2id={v: k for k, v in NLI_LABELS.items()})
        )
        model.save_pretrained(path)

    return _write(directory, build, tokenizer_dir)


def write_trace_tagger(tokenizer_dir: str | Path, *, config: dict | None = None, seed: int = 0) -> Path:
    """The TRACE tagger in the published format (hyyangkisti/TRACE-DeBERTa-v3-base): DeBERTa-v3-base
    encoder under ``deberta.*``, ``pooler.*``, ``classifier.weight|bias`` = Linear(768, 8), the
    8 labels in ``config.id2label``; what ``load_tagger`` detects as the 'trace' format."""
    config = dict(config or DEBERTA_V3_BASE)
    directory = cache_dir() / f"tagger-{_key(config, str(tokenizer_dir), seed)}"

    def build(path: Path) -> None:
        from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

        _seeded(seed)
        labels = dict(enumerate(TRACE_LABELS))
        model = DebertaV2ForSequenceClassification(
            DebertaV2Config(
                **config, num_labels=len(labels), id2label=labels, label2id={v: k for k, v in labels.items()}
            )
        )
        model.save_pretrained(path)

    return _write(directory, build, tokenizer_dir)


def write_causal_lm(
    config: dict,
    tokenizer_dir: str | Path,
    *,
    dtype: str = "bfloat16",
    seed: int = 0,
    device: str = "cpu",
    name: str = "lm",
) -> Path:
    """A Qwen2-architecture causal LM with random weights in ``dtype`` (Qwen2.5 checkpoints are
    bf16), built on ``device`` (a GPU builds a 7B in seconds) and saved with ``save_pretrained``."""
    config = dict(config)
    directory = cache_dir() / f"{name}-{_key(config, str(tokenizer_dir), dtype, seed)}"

    def build(path: Path) -> None:
        import torch
        from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

        tokenizer = AutoTokenizer.from_pretrained(str(_tokenizer_files(tokenizer_dir)))
        values = {k: v for k, v in config.items() if k != "model_type"}
        values.update(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
        qwen_config = Qwen2Config(**values)
        _seeded(seed)
        default = torch.get_default_dtype()
        torch.set_default_dtype(getattr(torch, dtype))  # initialise in the target dtype: no fp32 copy
        try:
            with torch.device(device):
                model = Qwen2ForCausalLM(qwen_config)
        finally:
            torch.set_default_dtype(default)
        model.generation_config.eos_token_id = tokenizer.eos_token_id
        model.generation_config.pad_token_id = tokenizer.pad_token_id
        model.save_pretrained(path)
        del model

    return _write(directory, build, tokenizer_dir)


def parameter_count(directory: str | Path) -> int:
    """Parameters stored in a saved checkpoint (safetensors headers only; nothing is loaded)."""
    from safetensors import safe_open

    total = 0
    root = Path(directory)
    for file in sorted(root.glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as handle:
            for key in handle.keys():
                shape = handle.get_slice(key).get_shape()
                count = 1
                for size in shape:
                    count *= size
                total += count
    return total
