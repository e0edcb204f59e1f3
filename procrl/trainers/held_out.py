"""Evaluation during training on a held-out split, through the Trainer's own evaluation loop.

``trainer.eval_steps: N`` (transformers' field; procrl sets ``eval_strategy: steps`` with it)
makes the Trainer call ``evaluate()`` every N steps on ``data.eval_split`` (default ``test``,
at most ``data.eval_limit`` problems). The generation and scoring are the trainer's own:
TRL's GRPO evaluation loop (``num_generations_eval`` completions per prompt, sampled with the
training generation settings, vLLM when the trainer uses it), or PPO's ``prediction_step``
(one sampled completion per prompt). :class:`HeldOutEvaluation` wraps ``evaluation_loop``: while
it runs, the reward mix's batch observers are replaced by an :class:`OutcomeCollector` (so the
training diagnostics never see held-out batches), the per-completion outcomes of every rank are
gathered, and ``procrl/observe/eval_metrics.py`` adds answer accuracy, reasoning-aware accuracy,
inflation, process error rate and pass@k / maj@k, each with its standard error, to the
loop's metrics. The Trainer then logs them like its own ``eval_loss``: ``eval_answer_accuracy``
in ``trainer_state.json``, ``eval/answer_accuracy`` in W&B (transformers' prefix rewriting),
and they can drive ``metric_for_best_model`` and early stopping. Reasoning-aware accuracy uses
the recipe's ``data.eval_judge`` when it names one (the mix's ``evaluation_judge``), else the
first first_error component.
"""

from __future__ import annotations

import threading
from typing import Any

from procrl.observe import stats as diag
from procrl.observe.eval_metrics import SampleOutcome, summarize
from procrl.rewards.protocol import RewardBatch, RewardOutput

__all__ = ["HeldOutEvaluation", "OutcomeCollector", "held_out_metrics"]


class OutcomeCollector:
    """A batch observer recording, per scored completion: its question, whether the answer is
    right, the first-error verdict, the predicted answer, its gold answer, each component's score."""

    def __init__(self, types: dict[str, str], judge: str | None = None):
        self.types = dict(types)
        self.judge = judge  # the recipe's data.eval_judge (default: the first first_error component)
        self.rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def observe(self, batch: RewardBatch, outputs: dict[str, RewardOutput], log_metric=None, log_extra=None) -> None:
        from procrl.core.choices import gold_answer, predict
        from procrl.rewards.accuracy import AccuracyReward

        kinds = diag.component_kinds(self.types, outputs)
        accuracy = next((n for n, k in kinds.items() if k == diag.ACCURACY), None)
        judge = diag.evaluation_judge(kinds, self.judge)
        if accuracy is not None:
            correct_scores = outputs[accuracy].scores
        else:  # no accuracy component in the mix: check answers with its default settings
            correct_scores = AccuracyReward(AccuracyReward.Settings(), name="accuracy").score(batch).scores
        records = diag.first_error_records(outputs[judge]) if judge is not None else None
        rows = []
        for i, completion in enumerate(batch.completions):
            score = correct_scores[i]
            rows.append(
                {
                    "question": batch.questions[i] if batch.questions[i] is not None else batch.prompts[i],
                    "correct": None if score is None else score >= 1.0,
                    "verdict": records[i].index if records is not None else None,
                    "answer": predict(completion, batch.answer_specs[i])[0],  # a number, an option, yes/no
                    "gold": gold_answer(batch.golds[i], batch.answer_specs[i]),
                    "scores": {name: output.scores[i] for name, output in outputs.items()},
                }
            )
        with self._lock:
            self.rows.extend(rows)
            self.judged = judge is not None


def held_out_metrics(
    rows: list[dict[str, Any]], judged: bool, samples_per_problem: int | None = None
) -> dict[str, float]:
    """The accuracies (with standard errors) and component means of the collected completions;
    completions of the same question are samples of one problem, at most ``samples_per_problem``
    of them (the distributed sampler pads the last batch with repeats of the first prompts, whose
    extra samples are dropped)."""
    problems: dict[str, int] = {}
    counts: dict[str, int] = {}
    outcomes, golds, kept = [], [], []
    for row in rows:
        if row["question"] not in problems:
            problems[row["question"]] = len(problems)
            golds.append(row["gold"])
        counts[row["question"]] = counts.get(row["question"], 0) + 1
        if samples_per_problem is not None and counts[row["question"]] > samples_per_problem:
            continue
        kept.append(row)
        outcomes.append(
            SampleOutcome(
                problem=problems[row["question"]], correct=row["correct"], verdict=row["verdict"], answer=row["answer"]
            )
        )
    summary = summarize(outcomes, judged=judged, golds=golds)
    metrics = {k: float(v) for k, v in summary.items() if v is not None and k != "samples_per_problem"}
    names = {name for row in kept for name in row["scores"]}
    for name in sorted(names):
        present = [row["scores"].get(name) for row in kept if row["scores"].get(name) is not None]
        if present:
            metrics[f"rewards/{name}/mean"] = sum(present) / len(present)
    return metrics


class HeldOutEvaluation:
    """Mixin for procrl's trainers (put it before the Trainer class); needs ``self.reward_mix``."""

    reward_mix: Any

    @property
    def held_out_samples_per_prompt(self) -> int:
        """Completions the evaluation loop samples per held-out prompt (GRPO: num_generations_eval)."""
        return int(getattr(self, "num_generations_eval", None) or 1)

    def evaluation_loop(
        self, dataloader, description, prediction_loss_only=None, ignore_keys=None, metric_key_prefix: str = "eval"
    ):
        mix = self.reward_mix
        collector = OutcomeCollector(
            {name: spec.type for name, spec in mix.specs.items()}, getattr(mix, "evaluation_judge", None)
        )
        collector.judged = False
        observers = mix.batch_observers
        mix.batch_observers = [collector.observe]  # held-out batches stay out of the training diagnostics
        try:
            output = super().evaluation_loop(
                dataloader,
                description,
                prediction_loss_only=prediction_loss_only,
                ignore_keys=ignore_keys,
                metric_key_prefix=metric_key_prefix,
            )
        finally:
            mix.batch_observers = observers
        from accelerate.utils import gather_object

        rows = collector.rows
        judged = collector.judged
        if self.accelerator.num_processes > 1:  # every rank scored its shard of the split
            rows = gather_object(rows)
            judged = any(gather_object([judged]))
        if rows:
            metrics = held_out_metrics(rows, judged, self.held_out_samples_per_prompt)
            output.metrics.update({f"{metric_key_prefix}_{key}": value for key, value in metrics.items()})
        return output
