"""A batched, de-duplicating, caching scorer for any Hugging Face NLI sequence classifier.

Given (premise, hypothesis) pairs it returns P(entailment) and P(contradiction): softmax over
the model's 3 logits, with the label order read from ``config.id2label`` (never assumed; a
model whose labels cannot be mapped is refused). All pairs of a whole batch of chains go
through one call: identical pairs are computed once, pairs already seen come from a bounded
LRU cache keyed by text, and the rest run in length-sorted batches of at most ``batch_size``
pairs and ``max_batch_tokens`` padded tokens (default ``64 * batch_size``: long pairs go in
smaller batches, so that padding stays small and memory bounded; benchmarks/receval_bench.py
measures the gain, docs/receval.md gives it). The model is loaded lazily on first use, once.

Truncation keeps the END of a long premise: ReCEval's premise is the step's premises followed by
all earlier conclusions, so the most recent conclusions (the ones a step builds on) sit at its
end; the tokenizer truncates from the left (``truncation_side = "left"``, longest sequence
first), so the beginning of the premise is what a too-long pair loses.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from procrl.models.standalone import load_scoring_model

__all__ = ["NLILabelError", "NLIScorer", "length_batches", "nli_label_indices", "write_tiny_nli_model"]

Pair = tuple[str, str]

_ENTAILMENT_NAMES = {"entailment", "entail", "entails", "entailed"}
_CONTRADICTION_NAMES = {"contradiction", "contradict", "contradicts", "contradictory"}


class NLILabelError(ValueError):
    """The model's ``config.id2label`` does not name an entailment and a contradiction class."""


def _normalise_label(label: Any) -> str:
    return re.sub(r"[^a-z]", "", str(label).lower())


def nli_label_indices(id2label: dict[Any, Any] | None, num_labels: int | None = None) -> tuple[int, int]:
    """(entailment index, contradiction index) from a model config's ``id2label``.

    Names are matched case-insensitively (``entailment``/``ENTAILMENT``/``entail``,
    ``contradiction``/``contradict``); anything else, including the generic ``LABEL_0``
    names of a config without label names, is refused with an error naming the labels.
    """
    if not id2label:
        raise NLILabelError("NLI model config has no id2label; cannot tell which logit is entailment")
    labels = {int(index): label for index, label in id2label.items()}
    if num_labels is not None and num_labels != 3:
        raise NLILabelError(
            f"NLI model has {num_labels} labels {sorted(labels.items())}; ReCEval needs a 3-way "
            "entailment/neutral/contradiction classifier"
        )
    entailment = [i for i, label in labels.items() if _normalise_label(label) in _ENTAILMENT_NAMES]
    contradiction = [i for i, label in labels.items() if _normalise_label(label) in _CONTRADICTION_NAMES]
    if len(entailment) != 1 or len(contradiction) != 1:
        raise NLILabelError(
            f"cannot map NLI labels {sorted(labels.items())} to entailment/contradiction "
            "(expected names like 'entailment'/'entail' and 'contradiction'/'contradict' in config.id2label)"
        )
    return entailment[0], contradiction[0]


class NLIScorer:
    """P(entailment), P(contradiction) for text pairs with a sequence-classification NLI model.

    ``model`` is a Hub id or a local directory (or an already built model together with
    ``tokenizer``). ``cache_size`` bounds the text-keyed LRU cache (0 disables it).
    """

    def __init__(
        self,
        model: Any,
        *,
        tokenizer: Any = None,
        device: Any = "cpu",
        batch_size: int = 64,
        max_length: int = 512,
        cache_size: int = 100_000,
        dtype: str = "auto",
        max_batch_tokens: int | None = None,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.max_batch_tokens = max_batch_tokens if max_batch_tokens is not None else 64 * batch_size
        if self.max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")
        self.source = model
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self.cache_size = cache_size
        self.dtype = dtype
        self._model = None if isinstance(model, (str, Path)) else model
        self._tokenizer = tokenizer
        self._indices: tuple[int, int] | None = None
        self._cache: OrderedDict[Pair, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = {"pairs": 0, "unique": 0, "cache_hits": 0, "computed": 0, "forward_passes": 0}

    # -- loading (lazily, once) --

    def _load(self) -> None:
        if self._model is not None and self._tokenizer is not None and self._indices is not None:
            return
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if self._model is None:
            model = load_scoring_model(AutoModelForSequenceClassification, str(self.source), dtype=self.dtype)
        else:
            model = self._model
        indices = nli_label_indices(getattr(model.config, "id2label", None), getattr(model.config, "num_labels", None))
        if self._tokenizer is None:
            self._tokenizer = AutoTokenizer.from_pretrained(str(self.source))
        if self._tokenizer.pad_token is None:
            self._tokenizer.pad_token = self._tokenizer.eos_token or self._tokenizer.unk_token
        self._tokenizer.truncation_side = "left"  # keep the end of a long premise (module docstring)
        self._model = model.to(self.device).eval()
        self._indices = indices

    # -- scoring --

    def _forward(self, encodings: list[dict[str, list[int]]]) -> list[tuple[float, float]]:
        import torch

        padded = self._tokenizer.pad(encodings, padding=True, return_tensors="pt")
        inputs = {k: v.to(self.device) for k, v in padded.items()}
        with torch.no_grad():
            logits = self._model(**inputs).logits.float()
        probabilities = torch.softmax(logits, dim=-1)
        entailment, contradiction = self._indices
        self.stats["forward_passes"] += 1
        return list(zip(probabilities[:, entailment].tolist(), probabilities[:, contradiction].tolist()))

    def score(self, pairs: Iterable[Pair]) -> dict[Pair, tuple[float, float]]:
        """{(premise, hypothesis): (P(entailment), P(contradiction))} for every pair given."""
        pairs = [(str(p), str(h)) for p, h in pairs]
        unique = list(dict.fromkeys(pairs))
        results: dict[Pair, tuple[float, float]] = {}
        with self._lock:
            self.stats["pairs"] += len(pairs)
            self.stats["unique"] += len(unique)
            missing = []
            for pair in unique:
                cached = self._cache.get(pair)
                if cached is None:
                    missing.append(pair)
                else:
                    self._cache.move_to_end(pair)
                    results[pair] = cached
            self.stats["cache_hits"] += len(unique) - len(missing)
            if missing:
                rows = self.encode(missing)
                lengths = [len(row["input_ids"]) for row in rows]
                for chunk in length_batches(lengths, self.batch_size, self.max_batch_tokens):
                    for i, value in zip(chunk, self._forward([rows[i] for i in chunk])):
                        results[missing[i]] = value
                        self._remember(missing[i], value)
                self.stats["computed"] += len(missing)
        return results

    def encode(self, pairs: Sequence[Pair]) -> list[dict[str, list[int]]]:
        """Token ids (and the tokenizer's other inputs) of each pair, at most ``max_length``
        tokens, a long premise losing its beginning."""
        self._load()
        encoded = self._tokenizer(
            [p for p, _ in pairs], [h for _, h in pairs], truncation="longest_first", max_length=self.max_length
        )
        return [{k: encoded[k][i] for k in encoded.keys()} for i in range(len(pairs))]

    def score_one_by_one(self, pairs: Sequence[Pair]) -> list[tuple[float, float]]:
        """One forward pass per pair, no cache: the naive baseline of the benchmark (and of the
        released ReCEval code)."""
        import torch

        self._load()
        entailment, contradiction = self._indices
        out = []
        for premise, hypothesis in pairs:
            inputs = self._tokenizer(
                premise, hypothesis, truncation="longest_first", max_length=self.max_length, return_tensors="pt"
            )
            with torch.no_grad():
                logits = self._model(**{k: v.to(self.device) for k, v in inputs.items()}).logits.float()
            probabilities = torch.softmax(logits[0], dim=-1)
            self.stats["forward_passes"] += 1
            out.append((probabilities[entailment].item(), probabilities[contradiction].item()))
        return out

    def _remember(self, pair: Pair, value: tuple[float, float]) -> None:
        if self.cache_size <= 0:
            return
        self._cache[pair] = value
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


def length_batches(lengths: Sequence[int], max_items: int, max_tokens: int) -> list[list[int]]:
    """Indices of ``lengths`` sorted by length and cut into batches of at most ``max_items``
    items and ``max_tokens`` padded tokens (items x the batch's longest length); an item longer
    than ``max_tokens`` gets a batch of its own."""
    batches: list[list[int]] = []
    current: list[int] = []
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if current and (len(current) == max_items or (len(current) + 1) * lengths[index] > max_tokens):
            batches.append(current)
            current = []
        current.append(index)
    return batches + ([current] if current else [])


def write_tiny_nli_model(
    directory: str | Path,
    *,
    id2label: dict[int, str] | None = None,
    force_label: str | None = None,
    seed: int = 0,
    hidden_size: int = 32,
    num_layers: int = 2,
) -> Path:
    """Write a tiny random-weight DeBERTa-v2 NLI classifier with the shipped tiny tokenizer.

    For tests, benchmarks and CPU demos (the Hub is not needed). ``force_label`` names one
    label of ``id2label``: the classifier then ignores its input (zero weights) and puts a
    large bias on that class, so its probability is ~0.9999 for every pair.
    """
    import torch
    from transformers import AutoTokenizer, DebertaV2Config, DebertaV2ForSequenceClassification

    from procrl.models.loading import TOKENIZER_ASSET

    id2label = id2label or {0: "entailment", 1: "neutral", 2: "contradiction"}
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_ASSET)
    config = DebertaV2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        intermediate_size=hidden_size * 2,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        num_labels=len(id2label),
        id2label={int(k): v for k, v in id2label.items()},
        label2id={v: int(k) for k, v in id2label.items()},
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    model = DebertaV2ForSequenceClassification(config)
    torch.random.set_rng_state(state)
    if force_label is not None:
        index = {v: int(k) for k, v in id2label.items()}[force_label]
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.zero_()
            model.classifier.bias[index] = 10.0
    directory = Path(directory)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
