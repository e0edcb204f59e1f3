"""Process diagnostics during training: :class:`DiagnosticsCallback` (``logging.diagnostics``).

It observes every scored batch through ``RewardMix.batch_observers`` (scalars of
:func:`procrl.observe.stats.batch_scalars` go through TRL's ``log_metric``, so they are averaged
per logging step and land in ``trainer_state.json`` and W&B like TRL's own metrics), and at each
logging step it adds the reward components' share of the step time and, when W&B is active,
logs the first-error histogram, the TRACE transition heatmap and a completions table
(:mod:`procrl.observe.plots`). It also keeps the reward-hacking watch (``procrl/hacking.py``):
``diagnostics/hacking_suspect`` and the ``diagnostics/behaviour/*`` means it is judged on
(steps, length, process reward).

This module imports transformers (the callback is a ``TrainerCallback``); the statistics and
plots do not, so ``procrl evaluate`` and the CLI import them without it.
"""

from __future__ import annotations

import io
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from transformers import TrainerCallback

from procrl.core.redaction import redact
from procrl.observe.plots import figure_png, plot_first_error_histogram, plot_transition_heatmap
from procrl.observe.stats import (
    ACCURACY,
    FIRST_ERROR,
    PREFIX,
    TRACE,
    TRACE_LABELS,
    FirstErrorRecord,
    add_matrices,
    batch_scalars,
    category_counts,
    component_kinds,
    first_error_records,
    first_of_kind,
    learning_signal,
    names_of_kind,
    relative_position,
    step_rows,
    transition_counts,
)
from procrl.rewards.protocol import RewardBatch, RewardOutput

__all__ = ["DiagnosticsCallback", "DiagnosticsWindow"]

logger = logging.getLogger(__name__)

# --- training: accumulate per logging window, log at each logging step ---------------------------


TABLE_ROWS = 16  # most recent completions shown in each W&B completions table
PLOT_TIME_BUDGET = 0.02  # plots and tables may take at most this share of the training wall time
FIRST_PLOT_ESTIMATE_S = 1.0  # what a round of plots is assumed to cost before one has been timed


@dataclass
class DiagnosticsWindow:
    """What accumulates between two W&B plots (plots need more than one batch's worth)."""

    first_errors: dict[str, list[FirstErrorRecord]] = field(default_factory=dict)  # per first-error component
    transitions: dict[str, list[list[float]]] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)
    rows: deque = field(default_factory=lambda: deque(maxlen=TABLE_ROWS))

    def add(self, types: dict[str, str], batch: RewardBatch, outputs: dict[str, RewardOutput], keep_rows: bool) -> None:
        kinds = component_kinds(types, outputs)
        for judge in names_of_kind(kinds, FIRST_ERROR):
            self.first_errors.setdefault(judge, []).extend(first_error_records(outputs[judge]))
        for name, kind in kinds.items():
            if kind == TRACE and (matrix := transition_counts(outputs[name])) is not None:
                self.transitions[name] = add_matrices(self.transitions.get(name), matrix)
                self.labels[name] = list(outputs[name].extras.get("labels") or TRACE_LABELS[: len(matrix)])
        if keep_rows:
            self.rows.extend(step_rows(batch, outputs, types)[-TABLE_ROWS:])


class DiagnosticsCallback(TrainerCallback):
    """Observes the reward mix's batches and logs the diagnostics (``logging.diagnostics``).

    :meth:`attach` adds the batch observer to the mix; pass the callback to the trainer. Scalars
    of each batch go through TRL's ``log_metric``; at each logging step
    ``diagnostics/time_share/<name>`` (reward time over step time in the window) is added to the
    log record. With W&B active on the main process, first-error histograms are logged at every
    logging step; the rendered plots (first-error histogram, TRACE heatmap) and the completions
    table whenever one more round of them (its cost estimated from the last one) keeps their
    total under ``PLOT_TIME_BUDGET`` of the wall time so far, and
    once more at the end of training, so that they never cost more than a few percent.
    """

    def __init__(self, types: dict[str, str], weights: dict[str, float] | None = None):
        from procrl.observe.hacking import BehaviourTracker

        self.types = dict(types)
        self.weights = dict(weights or {})
        self._behaviour = BehaviourTracker()
        self._lock = threading.Lock()
        self._window = DiagnosticsWindow()
        self._reward_seconds: dict[str, float] = {}
        self._last_step = 0
        self._keep_rows = False  # set once W&B is known to be active (the table is only for W&B)
        self._started = time.perf_counter()
        self._plot_seconds = 0.0
        self._plot_estimate = FIRST_PLOT_ESTIMATE_S
        self._overhead_seconds = 0.0
        self.wandb_logged: list[str] = []  # keys sent to W&B (read by tests and benchmarks)

    @classmethod
    def attach(cls, mix) -> DiagnosticsCallback:
        callback = cls(
            {name: spec.type for name, spec in mix.specs.items()},
            {name: spec.weight for name, spec in mix.specs.items()},
        )
        mix.batch_observers.append(callback.observe)
        return callback

    def _wandb_active(self, args) -> Any:
        if not args.report_to or "wandb" not in args.report_to:
            return None
        try:
            import wandb
        except ImportError:
            return None
        return wandb if wandb.run is not None else None

    def observe(
        self,
        batch: RewardBatch,
        outputs: dict[str, RewardOutput],
        log_metric: Callable[[str, float], None] | None,
        log_extra: Callable[[str, list], None] | None,
    ) -> None:
        """Called by the mix once every component has scored a batch."""
        started = time.perf_counter()
        kinds = component_kinds(self.types, outputs)
        judges = names_of_kind(kinds, FIRST_ERROR)
        # step counts only matter for a judge that leaves num_steps out; segmenting is not free
        num_steps = [len(s.steps) for s in batch.segmentations] if judges else None
        if log_metric is not None:
            for key, value in batch_scalars(self.types, outputs, num_steps).items():
                log_metric(key, value)
            accuracy = first_of_kind(kinds, ACCURACY)
            if judges and accuracy is not None:
                correct = [None if s is None else s >= 1.0 for s in outputs[accuracy].scores]
                totals = [
                    sum(self.weights.get(n, 0.0) * o.scores[i] for n, o in outputs.items() if o.scores[i] is not None)
                    for i in range(len(batch))
                ]
                groups = batch.prompts if batch.prompts is not None else batch.questions
                signal = learning_signal(groups, correct, first_error_records(outputs[judges[0]], num_steps), totals)
                for key, value in signal.items():
                    log_metric(key, value)
        if log_extra is not None:
            for judge in judges:
                column = f"first_error/{judge}" if len(judges) > 1 else "first_error"
                log_extra(column, [r.index for r in first_error_records(outputs[judge], num_steps)])
        watch = self._batch_behaviour(batch, outputs, kinds, num_steps)
        with self._lock:
            self._behaviour.add(watch)
            for name, output in outputs.items():
                self._reward_seconds[name] = self._reward_seconds.get(name, 0.0) + output.seconds
            if kinds or self._keep_rows:
                self._window.add(self.types, batch, outputs, keep_rows=self._keep_rows)
            self._overhead_seconds += time.perf_counter() - started

    def _batch_behaviour(
        self, batch: RewardBatch, outputs: dict[str, RewardOutput], kinds: dict[str, str], num_steps: list[int] | None
    ):
        """This batch's steps, length, process reward and accuracy for the reward-hacking watch."""
        from procrl.observe.hacking import behaviour, process_totals

        if num_steps is None and "segmentations" in batch.__dict__:  # only when a component segmented already
            num_steps = [len(s.steps) for s in batch.segmentations]
        totals = process_totals({n: o.scores for n, o in outputs.items()}, self.types, self.weights)
        accuracy = first_of_kind(kinds, ACCURACY)
        return behaviour(batch.completions, num_steps, totals, outputs[accuracy].scores if accuracy else None)

    def on_train_begin(self, args, state, control, **kwargs):
        self._last_step = state.global_step
        self._started = time.perf_counter()
        self._keep_rows = self._wandb_active(args) is not None and state.is_world_process_zero

    def on_log(self, args, state, control, logs=None, **kwargs):
        with self._lock:
            reward_seconds, self._reward_seconds = self._reward_seconds, {}
            overhead, self._overhead_seconds = self._overhead_seconds, 0.0
        steps = max(state.global_step - self._last_step, 1)
        self._last_step = state.global_step
        with self._lock:
            added: dict[str, float] = self._behaviour.scalars(PREFIX)
        step_time = (logs or {}).get("step_time")
        if step_time:
            for name, seconds in reward_seconds.items():
                added[f"{PREFIX}/time_share/{name}"] = seconds / (step_time * steps)
            # what the diagnostics themselves cost: observing this window's batches plus the
            # previous logging step's W&B work, over this window's step time
            added[f"{PREFIX}/overhead_share"] = overhead / (step_time * steps)
        if added and logs is not None:
            logs.update(added)
            # the Trainer appended a copy of ``logs`` to log_history just before calling us
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(added)
        elapsed = time.perf_counter() - self._started
        plots = self._plot_seconds + self._plot_estimate <= PLOT_TIME_BUDGET * elapsed
        self._log_wandb(args, state, added, plots=plots)

    def on_train_end(self, args, state, control, **kwargs):
        self._log_wandb(args, state, {}, plots=True)

    def _log_wandb(self, args, state, scalars: dict[str, float], plots: bool) -> None:
        wandb = self._wandb_active(args)
        if wandb is None or not state.is_world_process_zero:
            return
        started = time.perf_counter()
        try:
            payload = self._wandb_payload(wandb, scalars, plots, state.global_step)
            if payload:
                payload["train/global_step"] = state.global_step
                wandb.log(payload)
                self.wandb_logged.extend(k for k in payload if k not in self.wandb_logged)
        except Exception as error:  # diagnostics must never stop training
            logger.warning("diagnostics: W&B logging failed: %s: %s", type(error).__name__, error)
        spent = time.perf_counter() - started
        with self._lock:
            self._overhead_seconds += spent
        if plots:
            self._plot_seconds += spent
            self._plot_estimate = spent

    def _wandb_payload(self, wandb, scalars: dict[str, float], plots: bool, step: int) -> dict[str, Any]:
        # same key names as transformers' WandbCallback gives the scalars logged through the trainer
        payload: dict[str, Any] = {f"train/{k}": v for k, v in scalars.items()}
        with self._lock:
            window = self._window
            if plots:
                self._window = DiagnosticsWindow()
        judges = list(window.first_errors)
        # one judge: diagnostics/first_error/...; several: diagnostics/first_error/<name>/... each
        prefixes = {judge: f"{PREFIX}/first_error" + (f"/{judge}" if len(judges) > 1 else "") for judge in judges}
        for judge, records in window.first_errors.items():
            found = [r for r in records if r.index is not None and r.index >= 0]
            if found:
                payload[f"train/{prefixes[judge]}/index_hist"] = wandb.Histogram([r.index for r in found])
                payload[f"train/{prefixes[judge]}/relative_hist"] = wandb.Histogram(
                    [relative_position(r.index, r.num_steps) for r in found]
                )
            counts = category_counts(records)
            if counts:  # the judge's error categories, ReTraceQA's: a bar chart of the window's errors
                table = wandb.Table(columns=["category", "errors"], data=[[k, v] for k, v in counts.items()])
                payload[f"train/{prefixes[judge]}/categories"] = wandb.plot.bar(
                    table, "category", "errors", title="error categories"
                )
        if not plots:
            return payload
        from PIL import Image

        for judge, records in window.first_errors.items():
            if records:
                title = f"{judge if len(judges) > 1 else 'first error'} (to step {step})"
                figure = plot_first_error_histogram(records, title=title)
                payload[f"train/{prefixes[judge]}/histogram"] = wandb.Image(Image.open(io.BytesIO(figure_png(figure))))
        for name, matrix in window.transitions.items():
            figure = plot_transition_heatmap(
                matrix, window.labels.get(name), title=f"{name}: transitions (to step {step})"
            )
            payload[f"train/{PREFIX}/{name}/transition_heatmap"] = wandb.Image(
                Image.open(io.BytesIO(figure_png(figure)))
            )
        if window.rows:
            columns = list(window.rows[-1])
            table = wandb.Table(columns=["step", *columns])
            for row in window.rows:  # completions can quote a prompt's secrets: the one redaction, as every output
                table.add_data(step, *[_table_value(redact(row.get(c))) for c in columns])
            payload[f"train/{PREFIX}/completions"] = table
        return payload


def _table_value(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
