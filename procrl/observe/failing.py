"""A component that fails on every sample stops the run, instead of training on the rest in silence.

The failure policy gives a failing sample its component's fallback and counts it
(``rewards/<name>/failures/<kind>``). That is right for a timeout here and there. A component that
fails on *every* sample (a judge server that is down, a model name it does not serve, a reward
that raises on everything) leaves the run training on the other components alone, which is not
the recipe the user wrote. :class:`FailingComponentWatch` counts, per component and training step,
the samples it scored and those it failed on; after ``stop_after`` consecutive steps in which a
component failed on all of them it saves a checkpoint, stops training, and :meth:`raise_if_stopped`
ends the run with one line naming the component and its first error.

The decision is taken by all ranks together (a max over the processes), so that no rank stops
alone while the others wait for it in a collective.
"""

from __future__ import annotations

from transformers import TrainerCallback

from procrl.core.config import ConfigError
from procrl.rewards.protocol import RUN_FAILURES

__all__ = ["RUN_FAILURES", "ComponentFailing", "FailingComponentWatch"]


class ComponentFailing(ConfigError):
    """A component failed on every sample for the configured number of steps."""


class FailingComponentWatch(TrainerCallback):
    """Stops training after ``stop_after`` consecutive steps in which a component failed on every
    sample it was given (0: never). Attach with :meth:`attach`; call :meth:`raise_if_stopped`
    after ``trainer.train()`` returns.

    Args:
        stop_after: consecutive all-failed steps that stop the run.

    Example:
        >>> watch = FailingComponentWatch(stop_after=2)
        >>> from procrl.rewards.protocol import RewardOutput
        >>> down = {"judge": RewardOutput(scores=[None, None], failures={"http_error": 2})}
        >>> for _ in range(2):
        ...     watch.observe([0, 1], down, None, None)
        ...     watch.end_step()
        >>> watch.stopped
        'rewards.judge failed on every sample for 2 consecutive steps (http_error)'
    """

    def __init__(self, stop_after: int):
        self.stop_after = stop_after
        self.streaks: dict[str, int] = {}
        self.stopped: str | None = None
        self._scored: dict[str, int] = {}
        self._failed: dict[str, int] = {}
        self._kinds: dict[str, set[str]] = {}
        self._errors: dict[str, str] = {}

    @classmethod
    def attach(cls, mix, stop_after: int) -> FailingComponentWatch:
        watch = cls(stop_after)
        mix.batch_observers.append(watch.observe)
        return watch

    def observe(self, batch, outputs, log_metric, log_extra) -> None:
        """A scored batch (a :class:`procrl.rewards.mix.RewardMix` batch observer)."""
        n = len(batch)
        for name, output in outputs.items():
            failed = sum(output.failures.get(kind, 0) for kind in RUN_FAILURES)
            self._scored[name] = self._scored.get(name, 0) + n
            self._failed[name] = self._failed.get(name, 0) + min(failed, n)
            self._kinds.setdefault(name, set()).update(k for k in RUN_FAILURES if output.failures.get(k))
            if failed and name not in self._errors:
                errors = [d.get("error") for d in output.details or [] if isinstance(d, dict) and d.get("error")]
                if errors:
                    self._errors[name] = str(errors[0]).splitlines()[0][:300]

    def end_step(self) -> bool:
        """Close a training step on this rank: update the streaks; True when one reached ``stop_after``."""
        for name, scored in self._scored.items():
            if scored == 0:
                continue
            if self._failed.get(name, 0) >= scored:
                self.streaks[name] = self.streaks.get(name, 0) + 1
            else:  # it scored a sample: a new streak, whose failure kinds and error are its own
                self.streaks[name] = 0
                self._kinds.pop(name, None)
                self._errors.pop(name, None)
        self._scored, self._failed = {}, {}
        if self.stop_after <= 0:
            return False
        failing = [name for name, streak in self.streaks.items() if streak >= self.stop_after]
        if failing and self.stopped is None:
            name = failing[0]
            kinds = ", ".join(sorted(self._kinds.get(name, ()))) or "failures"
            error = f": {self._errors[name]}" if name in self._errors else ""
            self.stopped = (
                f"rewards.{name} failed on every sample for {self.streaks[name]} consecutive steps ({kinds}{error})"
            )
        return bool(failing)

    def on_step_end(self, args, state, control, **kwargs):
        stop = self.end_step()
        stop = _any_rank(stop)  # every rank stops at the same step, or none does
        if stop:
            if self.stopped is None:
                self.stopped = "a reward component failed on every sample of another rank's batches"
            self.stopped += f"; stopped at step {state.global_step}"
            control.should_save = True  # resumable once the component works again
            control.should_training_stop = True
        return control

    def raise_if_stopped(self, output_dir: str) -> None:
        if self.stopped is not None:
            raise ComponentFailing(
                f"{self.stopped}, its checkpoint saved in {output_dir} (not trained further on the other rewards "
                "alone; trainer.stop_after_failed_steps sets how many such steps stop a run). Fix the component, "
                "then continue with --resume"
            )


def _any_rank(flag: bool) -> bool:
    import torch

    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return flag
    from accelerate import PartialState

    value = torch.tensor([1 if flag else 0], device=PartialState().device)
    torch.distributed.all_reduce(value, op=torch.distributed.ReduceOp.MAX)
    return bool(value.item())
