"""W&B integration: the resolved recipe as run config (secrets already redacted by the caller),
and transformers' own run config (TrainingArguments) redacted too (:func:`redact_wandb_config`).
What W&B records of the command line is redacted where procrl parses it (``sys.argv``:
:func:`procrl.core.redaction.redact_argv`)."""

from __future__ import annotations

from transformers import TrainerCallback

__all__ = [
    "RecipeConfigCallback",
    "console_line",
    "print_run_summary",
    "redact_wandb_config",
    "run_summary_line",
    "use_compact_console",
]


class RecipeConfigCallback(TrainerCallback):
    """Adds the resolved recipe to the W&B run config under ``procrl``.

    Runs after transformers' WandbCallback has started the run (callbacks are called in order
    and ours is added after the default ones). Environment values are never read here.
    """

    def __init__(self, resolved_recipe: dict):
        self.resolved_recipe = resolved_recipe
        self._done = False

    def on_train_begin(self, args, state, control, **kwargs):
        if self._done or not state.is_world_process_zero:
            return
        try:
            import wandb
        except ImportError:
            return
        if getattr(wandb, "run", None) is not None:
            wandb.config.update({"procrl": self.resolved_recipe}, allow_val_change=True)
            self._done = True


class _RedactedArgs:
    """TrainingArguments as transformers' WandbCallback reads them for the run config: every
    attribute as it is, ``to_dict()`` redacted (transformers hides ``*_token`` keys only; URL
    credentials, nested secrets and any other secret key are hidden here)."""

    def __init__(self, args):
        self._args = args

    def __getattr__(self, name):
        return getattr(self._args, name)

    def to_dict(self):
        from procrl.core.redaction import redact

        return redact(self._args.to_dict())


def redact_wandb_config(trainer) -> None:
    """Make the trainer's WandbCallback (if any) give W&B redacted TrainingArguments."""
    from transformers.integrations import WandbCallback

    for callback in trainer.callback_handler.callbacks:
        if isinstance(callback, WandbCallback) and not getattr(callback, "_procrl_redacted", False):
            setup = callback.setup

            def redacted_setup(args, state, model, _setup=setup, **kwargs):
                return _setup(_RedactedArgs(args), state, model, **kwargs)

            callback.setup = redacted_setup
            callback._procrl_redacted = True


# --- the terminal: one short line per logging step ----------------------------------------------

_CONSOLE_KEYS = (  # (log key, label) in print order; every metric stays in trainer_state.json / W&B
    ("loss", "loss"),
    ("reward", "reward"),
    ("diagnostics/reasoning_aware_accuracy", "reasoning-aware"),
    ("diagnostics/inflation", "inflation"),
    ("diagnostics/hacking_suspect", "hacking_suspect"),
    ("eval_answer_accuracy", "eval answer"),
    ("eval_reasoning_aware_accuracy", "eval reasoning-aware"),
)


def _number(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def run_summary_line(step: int, runtime: float, output_dir=None) -> str:
    """The last line of a run: its steps and time, and where the model and every metric are."""
    steps = f"{step} step" if step == 1 else f"{step} steps"
    where = f"; the model is in {output_dir}" if output_dir is not None else ""
    return (
        f"done: {steps} in {runtime:.0f} s{where} (every metric: trainer_state.json in the output dir, "
        "and W&B when report_to has it)"
    )


def console_line(logs: dict, step: int, max_steps: int) -> str:
    """The log record of one logging step as one short line: loss, total reward, each reward
    component's mean, reasoning-aware accuracy, inflation, the hacking flag, seconds per step.
    (TRL prints the whole record, ~100 keys, as a dict.)"""
    if "train_runtime" in logs:
        return run_summary_line(step, logs["train_runtime"])
    parts = [f"step {step}/{max_steps}"]
    known = dict(_CONSOLE_KEYS)
    for key, label in _CONSOLE_KEYS[:2]:
        if key in logs:
            parts.append(f"{label} {_number(logs[key])}")
    for key, value in logs.items():  # reward components, in the mix's order
        if key.startswith("rewards/") and key.endswith("/mean") and key.count("/") == 2:
            parts.append(f"{key.split('/')[1]} {_number(value)}")
    for key, label in _CONSOLE_KEYS[2:]:
        if key in logs:
            parts.append(f"{label} {_number(logs[key])}")
    if "step_time" in logs:
        parts.append(f"{logs['step_time']:.2g} s/step")
    if len(parts) == 1:  # a record with none of the keys above (an evaluation, another trainer): its numbers
        parts += [f"{k} {_number(v)}" for k, v in logs.items() if isinstance(v, (int, float)) and k not in known][:8]
    return " | ".join(parts)


def use_compact_console(trainer) -> None:
    """Replace transformers' console printers (the progress bar's dict dump, or the plain
    printer when tqdm is off) with :func:`console_line`. The run's summary record ("done: ...")
    is kept for :func:`print_run_summary`: transformers logs it before the final model is saved,
    and a terminal saying "done" while a 7B model is still being written invites a Ctrl-C."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    def compact(callback, logs, state) -> str | None:
        if "train_runtime" in logs:
            callback.run_summary = (state.global_step, logs["train_runtime"])
            return None
        return console_line(logs, state.global_step, state.max_steps)

    class CompactProgressCallback(ProgressCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and self.training_bar is not None and logs:
                line = compact(self, logs, state)
                if line is not None:
                    self.training_bar.write(line)

    class CompactPrinterCallback(PrinterCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and logs:
                line = compact(self, logs, state)
                if line is not None:
                    print(line, flush=True)

    for old, new in ((ProgressCallback, CompactProgressCallback), (PrinterCallback, CompactPrinterCallback)):
        if trainer.pop_callback(old) is not None:
            trainer.add_callback(new)


def print_run_summary(trainer, output_dir) -> None:
    """The run's summary line, once its final model is saved, naming where it is (main process;
    nothing when the run logged no summary)."""
    for callback in trainer.callback_handler.callbacks:
        summary = getattr(callback, "run_summary", None)
        if summary is not None and trainer.state.is_world_process_zero:
            print(run_summary_line(*summary, output_dir), flush=True)
            callback.run_summary = None
