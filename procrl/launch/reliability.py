"""The reliability machinery of a training run, which :func:`procrl.launch.run.train` calls: the
output dir's lock and the line an interrupt ends the run with (:class:`OutputDirHeld`), ``--resume``
(the run finished or not, the recipe's changes, the checkpoint continued from, a final save that did
not complete), the run's artifacts (``recipe.yaml``, ``run_info.json``), the failing-component watch
and the launch check. Everything here prints on stderr as ``procrl: ...`` (:func:`tell`), on rank 0
where one line is enough.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from procrl.core.config import ConfigError
from procrl.core.interrupts import interrupted
from procrl.launch.launched import note_launch, rank_setup, recipe_launch_flags
from procrl.launch.prelaunch import gpu_memory_bytes, guarded
from procrl.observe.wandb import set_wandb_run_id
from procrl.recipe import Recipe
from procrl.recipe.memory import fit_problem
from procrl.trainers.checkpoints import (
    find_resume_checkpoint,
    holds_model,
    interrupted_final_save,
    kept,
    save_final_model,
    set_aside,
)
from procrl.trainers.output_dir import (
    RECIPE_FILE,
    RunLock,
    clear_previous_run,
    discard_staging,
    finished_note,
    finished_run,
    recipe_changes,
)

# Imported where used: torch, transformers, trl and the procrl modules that import them
# (procrl.observe.console, procrl.observe.failing): `procrl check` and `procrl train`'s launching process
# import this module and must not load the trainer stack (tests/test_startup.py).

__all__ = [
    "RECIPE_FILE",
    "OutputDirHeld",
    "check_launch_fits",
    "connect_wandb",
    "continue_from",
    "failing_watch",
    "find_resume",
    "finished_note",
    "finished_run",
    "is_global_main",
    "recipe_changes",
    "report_finished",
    "save_final_from_checkpoint",
    "tell",
]


def is_global_main() -> bool:
    """Whether this process is rank 0 of the launch (or not launched): the one that prints a run's notes."""
    return int(os.environ.get("RANK", "0")) == 0


def tell(message: str) -> None:
    """Print ``procrl: MESSAGE`` on stderr, at once (ranks interleave their output)."""
    print(f"procrl: {message}", file=sys.stderr, flush=True)


def report_finished(recipe: Recipe) -> bool:
    """``--resume`` of a finished run with its final model: rank 0 says so (:func:`finished_note`)."""
    note = finished_note(recipe)
    if note and is_global_main():
        tell(note)
    return note is not None


def find_resume(recipe: Recipe):
    """``--resume``: (the checkpoint to continue from, ``(what, step, max_steps)`` when the run trained
    to the end but its final model is missing, else None); rank 0 lists the keys in which the recipe
    differs from the run's ``recipe.yaml``."""
    resume_point = find_resume_checkpoint(recipe.output_dir)
    finished = finished_run(recipe)
    changes = recipe_changes(recipe)
    if changes and is_global_main():
        tell(
            f"--resume: the recipe differs from the run's {RECIPE_FILE} in {len(changes)} key(s) (kept; this recipe "
            f"is saved as recipe-resumed-at-step-{resume_point.step}.yaml):"
        )
        for change in changes:
            tell(f"  {change}")
    return resume_point, finished


def check_launch_fits(recipe: Recipe) -> None:
    """Rank 0 says in one line where the launch differs from the recipe's launch section
    (:func:`procrl.launch.launched.note_launch`); on a GPU, every rank stops before loading any
    model when the memory plan of the launch it was given does not fit its GPU (one line)."""

    note_launch(recipe)
    # a memory query that raises (a driver error) is one warning line, as in the launcher: the rank trains
    cards = guarded("GPU memory", lambda: [gpu_memory_bytes()])
    if not cards or cards[0] is None:
        return
    problem = fit_problem(recipe, rank_setup(), *cards[0])
    if problem:
        wanted = " ".join(["accelerate", "launch", *recipe_launch_flags(recipe), recipe.path or "RECIPE"])
        raise ConfigError(f"launch: {problem}; nothing was loaded. The recipe's launch: {wanted}")


def _prepare_output_dir(recipe: Recipe, resume: bool, overwrite: bool):
    """Main process: take the output dir's lock, clear what a killed save left (and, with
    ``--overwrite``, the earlier run's checkpoints). Returns the lock."""

    lock = RunLock(recipe.output_dir)
    try:
        note = lock.acquire()
    except OSError as error:
        raise ConfigError(f"output_dir: cannot write to {recipe.output_dir} ({error.strerror or error})") from None
    if note:
        tell(note)
    staged = discard_staging(recipe.output_dir)
    if staged:
        tell(f"discarded the interrupted save of {', '.join(staged)} in {recipe.output_dir}")
    if overwrite:
        removed = clear_previous_run(recipe.output_dir)
        if removed:
            tell(f"--overwrite: removed {', '.join(removed)} from {recipe.output_dir}")
    return lock


class OutputDirHeld:
    """``with``: the main process holds the output dir's lock (:func:`_prepare_output_dir`) until the
    block ends; Ctrl-C or SIGTERM inside it ends the run with one line saying what is kept (the
    checkpoints, or what an interrupted final save left)."""

    def __init__(self, recipe: Recipe, resume: bool, overwrite: bool) -> None:
        self.recipe, self.resume, self.overwrite = recipe, resume, overwrite
        self.saving = None  # the trainer, once its final save has begun

    def __enter__(self) -> OutputDirHeld:
        self.lock = _prepare_output_dir(self.recipe, self.resume, self.overwrite) if is_global_main() else None
        return self

    def final_save(self, trainer) -> None:
        """The final model (complete or absent) and the run's summary on the terminal."""
        from procrl.observe.console import print_run_summary

        self.saving = trainer
        save_final_model(trainer, self.recipe.output_dir)
        # "the model is in DIR" only when from_pretrained can load it there
        where = self.recipe.output_dir if holds_model(self.recipe.output_dir) else None
        print_run_summary(trainer, where)

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if isinstance(error, KeyboardInterrupt):  # Ctrl-C, SIGTERM (procrl/core/interrupts.py)
                output_dir = self.recipe.output_dir
                if self.saving is not None:
                    raise interrupted(
                        error, interrupted_final_save(output_dir, self.saving.state.global_step)
                    ) from None
                raise interrupted(error, kept(output_dir)) from None
        finally:
            if self.lock is not None:
                self.lock.release()


def continue_from(trainer, resume_point) -> str | None:
    """The checkpoint ``trainer.train`` resumes from (None: a fresh run); the main process says what
    it continues from and sets aside the incomplete checkpoints it skipped."""
    if resume_point is None:
        return None
    if trainer.accelerator.is_main_process:
        for line in resume_point.describe():
            tell(line)
        moved = set_aside([path for path, _ in resume_point.skipped])
        if moved:
            tell(f"renamed the skipped checkpoint(s) to {', '.join(Path(m).name for m in moved)}")
    return resume_point.checkpoint


def connect_wandb(trainer, recipe: Recipe, args, resume: bool) -> None:
    """With ``report_to: wandb``: the run's W&B id (the same run when resuming) and a redacted config."""
    if "wandb" not in (args.report_to or []):
        return
    from procrl.observe.console import redact_wandb_config

    set_wandb_run_id(recipe.output_dir, resume=resume, is_main=trainer.accelerator.is_main_process)
    redact_wandb_config(trainer)


def failing_watch(trainer):
    """The trainer's failing-component watch (:class:`procrl.observe.failing.FailingComponentWatch`; one
    that never stops when the trainer has none)."""
    from procrl.observe.failing import FailingComponentWatch

    for callback in trainer.callback_handler.callbacks:
        if isinstance(callback, FailingComponentWatch):
            return callback
    return FailingComponentWatch(0)


def save_final_from_checkpoint(trainer, recipe: Recipe, checkpoint: str, finished: tuple[str, int, int]) -> None:
    """``--resume`` of a run that trained to ``max_steps`` but whose final save did not complete:
    the final model is saved from the last checkpoint (training it again would go one step past
    ``max_steps``: transformers steps once before it checks)."""
    from transformers.trainer_callback import TrainerState

    _, step, target = finished
    if getattr(trainer, "is_deepspeed_enabled", False) or getattr(trainer, "is_fsdp_enabled", False):
        raise ConfigError(
            f"--resume: the run in {recipe.output_dir} trained to step {step} of max_steps {target}"
            " but its final save did "
            f"not complete; {checkpoint} holds the finished model (its weights are what the final save writes): use it"
        )
    trainer._load_from_checkpoint(checkpoint)
    trainer.state = TrainerState.load_from_json(str(Path(checkpoint) / "trainer_state.json"))
    save_final_model(trainer, recipe.output_dir)
    if trainer.accelerator.is_main_process:
        tell(
            f"--resume: the run had trained to step {step} of max_steps {target},"
            " but its final save had not completed: "
            f"saved the final model from {checkpoint}; nothing to train"
        )
