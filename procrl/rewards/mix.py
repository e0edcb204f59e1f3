"""The reward mix: the components of a recipe, their TRL reward functions, the failure policy.

Components follow :mod:`procrl.rewards.protocol`; their specs come from
:mod:`procrl.rewards.spec`. The :class:`RewardMix` owns the components of a recipe; for each one
it hands TRL a reward function named after the component (so TRL logs
``rewards/<name>/mean|std``), and caches the outputs of the current batch so that gating and
process credit see every component's result without scoring twice.

Failure policy ("nothing is lost"): an exception, a wrong-length result or a non-finite score
never reaches the trainer. The affected samples get no opinion (None), the failure kind is
counted and logged as ``rewards/<name>/failures/<kind>``, and every None is resolved by the
component's ``fallback`` before it reaches a total (:mod:`procrl.rewards.fallback`): by default
``group_mean``, the mean of the component's scores in the sample's generation group (where the
groups are known: the trainers, ``procrl score``); a number is substituted at once; ``null``
leaves TRL's None. A completion over the segmentation caps (:mod:`procrl.core.text`: characters,
lines, steps) is never given to a component: it is such a failure, of kind ``too_long``, so
that every component's cost per completion is bounded.

Deadline: a component with ``deadline_s`` (custom components: 600 s by default; built-ins: none,
they bound their own work) is run in a daemon worker thread and waited for at most that long. A
call past its deadline is abandoned: its samples get the fallback, counted as ``timeout``. A
thread cannot be killed, so the abandoned call runs on in the background (a daemon thread: the
process still exits at the end); until it returns, the component is not called again and each
batch gets its fallback at once (one stuck call, not one more thread per batch). An async
component past its deadline is cancelled (a coroutine that blocks the event loop without
awaiting cannot be).

Collectives: a component whose scoring is a collective of all ranks (a reference model sharded
by ZeRO-3: every forward pass all-gathers its parameters) declares ``collective = True`` and a
``settle_collectives(failed)`` method. Every rank then calls it on every batch, with an empty
batch when all its completions are over the caps or it has none, runs it without a deadline (a
call abandoned on one rank would leave the others in its collectives), and settles it after the
call, failed or not: a rank whose call failed before reaching the collectives joins them there,
and the component takes the decision that the batch failed together on every rank
(:mod:`procrl.rewards.scorers.info_gain`).

One scoring path: :meth:`RewardMix._scoring` is the whole of it (claim the batch, leave out the
completions over the caps, score, sanitize, spread back, gate, store) written once as a
generator that *yields* the three things that may block (waiting for another caller scoring the
same component, running the component, scoring the gate's component). :meth:`RewardMix.compute`
performs them blocking, :meth:`RewardMix.acompute` awaits them; nothing else differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from procrl.core.config import ConfigError
from procrl.core.text import check_segmentation
from procrl.rewards.fallback import FallbackResult, resolve_fallback
from procrl.rewards.protocol import (
    FunctionComponent,
    RewardBatch,
    RewardComponent,
    RewardOutput,
    RuntimeContext,
    _one_line,
    _prompt_text,
    completion_text,
)
from procrl.rewards.spec import ComponentSpec, check_gate_cycles, parse_rewards

logger = logging.getLogger(__name__)

__all__ = ["DeadlineExceeded", "RewardMix"]


class ComponentEnded(Exception):
    """A component raised a BaseException that is not an Exception (GeneratorExit, a subclass of
    its own): a failure like any other, never the end of ``score`` or ``train``."""


@contextlib.contextmanager
def _contained():
    """Around a component's call: ``os._exit`` refused (procrl/core/processes.py), and a
    BaseException other than Ctrl-C or SystemExit (which the failure policy catches) turned
    into :class:`ComponentEnded`."""
    from procrl.core.processes import refuse_process_exit

    try:
        with refuse_process_exit():
            yield
    except (Exception, SystemExit, KeyboardInterrupt):
        raise
    except BaseException as error:  # noqa: BLE001 - GeneratorExit, a reward's own BaseException subclass
        raise ComponentEnded(_one_line(error)) from None


class DeadlineExceeded(TimeoutError):
    """A component's call took longer than its ``deadline_s`` (counted as the failure ``timeout``)."""


class RewardMix:
    """The components of a recipe, their TRL reward functions and the current batch's outputs."""

    def __init__(self, specs: list[ComponentSpec]):
        check_gate_cycles(specs)  # specs built without parse_rewards too: a cycle would deadlock compute()
        # every component reads steps or sentences of this one segmentation: one that cannot run is
        # a one-line error now, never "no steps" on every completion later
        check_segmentation()
        self.specs = {s.name: s for s in specs}
        self.components: dict[str, RewardComponent] = {}
        for spec in specs:
            try:
                if inspect.isclass(spec.target) and issubclass(spec.target, RewardComponent):
                    self.components[spec.name] = spec.target(spec.settings, name=spec.name)
                elif inspect.isclass(spec.target):
                    instance = spec.target(**spec.settings)
                    self.components[spec.name] = FunctionComponent(instance, {}, name=spec.name)
                else:
                    self.components[spec.name] = FunctionComponent(spec.target, spec.settings, name=spec.name)
            except ConfigError:
                raise
            except (Exception, SystemExit) as error:
                raise ConfigError(f"rewards.{spec.name}: {spec.type} could not be set up: {_one_line(error)}") from None
        self._lock = threading.RLock()
        self._batch_key: Any = None
        self._outputs: dict[str, RewardOutput] = {}
        self._inflight: dict[str, threading.Event] = {}
        self.last_batch: RewardBatch | None = None
        # called once per TRL batch, after its last component scored: f(batch, outputs, log_metric, log_extra)
        self.batch_observers: list[Callable] = []
        self._observed_key: Any = None
        self._abandoned: dict[str, threading.Thread] = {}  # calls past their deadline that have not returned

    @classmethod
    def from_recipe_rewards(cls, raw: Any) -> RewardMix:
        return cls(parse_rewards(raw))

    @property
    def names(self) -> list[str]:
        return list(self.specs)

    @property
    def weights(self) -> list[float]:
        return [s.weight for s in self.specs.values()]

    def bind(self, context: RuntimeContext) -> None:
        for component in self.components.values():
            component.bind(context)

    # -- scoring --

    def _start_batch(self, batch: RewardBatch, key: Any) -> RewardBatch:
        with self._lock:
            if key is None or key is not self._batch_key:
                self._batch_key = key if key is not None else object()
                self._outputs = {}
                self._inflight = {}
                self.last_batch = batch
            return self.last_batch

    def _immediate_fallback(self, name: str) -> float | None:
        """A numeric fallback is substituted at once; ``group_mean`` and null keep None here
        (the group mean is taken where the groups are known: :meth:`resolve`)."""
        fallback = self.specs[name].fallback
        return fallback if isinstance(fallback, float) else None

    def _sanitize(self, name: str, output: Any, n: int) -> RewardOutput:
        fallback = self._immediate_fallback(name)
        if not isinstance(output, RewardOutput):
            output = RewardOutput(scores=list(output))
        failures = dict(output.failures)
        if len(output.scores) != n:
            failures["wrong_length"] = failures.get("wrong_length", 0) + n
            return RewardOutput(scores=[fallback] * n, failures=failures)
        scores: list[float | None] = []
        for value in output.scores:
            if value is None:
                scores.append(fallback)
                continue
            try:
                value = float(value)
            except (TypeError, ValueError):
                value = math.nan
            if not math.isfinite(value):
                failures["non_finite"] = failures.get("non_finite", 0) + 1
                scores.append(fallback)
            else:
                scores.append(value)
        output.scores = scores
        if output.step_scores is not None:
            # A None or non-finite step score is no opinion about that step; read as 0 it would be
            # the best step of a penalty. The completion then gets no step credit from this
            # component (its scalar, resolved by the fallback, still counts).
            cleaned: list[list[float] | None] = []
            for steps in output.step_scores:
                values = None if steps is None else [_finite(v) for v in steps]
                if values is not None and any(v is None for v in values):
                    failures["non_finite_step"] = failures.get("non_finite_step", 0) + 1
                    values = None
                cleaned.append(values)
            if len(cleaned) != n:
                failures["wrong_length"] = failures.get("wrong_length", 0) + n
                cleaned = [None] * n
            output.step_scores = cleaned
        output.failures = failures
        return output

    @staticmethod
    def _within_caps(batch: RewardBatch) -> tuple[RewardBatch | None, list[int]]:
        """The batch without its ``too_long`` completions (:mod:`procrl.core.text`'s caps; None when
        none is left) and their indices: no component is given text over the caps, so every
        component's cost per completion is bounded."""
        too_long = [i for i, segmentation in enumerate(batch.segmentations) if segmentation.too_long]
        if not too_long:
            return batch, []
        skip = set(too_long)
        kept = [i for i in range(len(batch)) if i not in skip]
        return (batch.subset(kept) if kept else None), too_long

    def _spread(self, name: str, output: RewardOutput, n: int, too_long: list[int]) -> RewardOutput:
        """``output`` of the batch without ``too_long`` back at full length: those samples get the
        component's fallback, no step scores, and the failure kind ``too_long``."""
        if not too_long:
            return output
        skip = set(too_long)
        fallback = self._immediate_fallback(name)
        kept = iter(range(len(output.scores)))
        scores, steps, details = [], [], []
        for i in range(n):
            if i in skip:
                scores.append(fallback)
                steps.append(None)
                details.append({"failure": "too_long"})
                continue
            j = next(kept)
            scores.append(output.scores[j])
            steps.append(output.step_scores[j] if output.step_scores is not None else None)
            details.append(output.details[j] if output.details is not None else {})
        failures = dict(output.failures)
        failures["too_long"] = failures.get("too_long", 0) + len(too_long)
        return dataclasses.replace(
            output,
            scores=scores,
            step_scores=steps if output.step_scores is not None or not output.scores else None,
            details=details,
            failures=failures,
        )

    def _failed(self, name: str, error: BaseException, n: int) -> RewardOutput:
        logger.warning("reward component %r failed on a batch of %d: %s", name, n, _one_line(error))
        kind = "timeout" if isinstance(error, DeadlineExceeded) else "exception"
        return RewardOutput(
            scores=[self._immediate_fallback(name)] * n,
            failures={kind: n},
            details=[{"error": _one_line(error)} for _ in range(n)],
        )

    def _score_blocking(self, name: str, batch: RewardBatch) -> Any:
        """The component on ``batch``, in this thread, or within its deadline in a worker thread."""
        component = self.components[name]

        def run() -> Any:
            if not component.is_async:
                return component.score(batch)
            return asyncio.run(component.ascore(batch)) if not _loop_running() else _run_in_thread(component, batch)

        deadline = self.specs[name].deadline_s
        if deadline is None or _collective(component):  # abandoning a collective call would leave the other ranks in it
            return run()
        with self._lock:
            stuck = self._abandoned.get(name)
            if stuck is not None and not stuck.is_alive():
                del self._abandoned[name]
                stuck = None
        if stuck is not None:
            raise DeadlineExceeded(
                f"its call abandoned at the {deadline:g} s deadline (rewards.{name}.deadline_s) "
                f"has not returned; not called again until it does"
            )
        outcome: dict[str, Any] = {}
        grad_mode = _caller_grad_mode()

        def target() -> None:
            try:
                with grad_mode():
                    outcome["value"] = run()
            except BaseException as error:  # re-raised in the caller, whose failure policy applies
                outcome["error"] = error

        worker = threading.Thread(target=target, name=f"procrl-reward-{name}", daemon=True)
        worker.start()
        worker.join(deadline)
        if worker.is_alive():
            with self._lock:
                self._abandoned[name] = worker
            raise DeadlineExceeded(
                f"no result within its {deadline:g} s deadline (rewards.{name}.deadline_s); the call was abandoned"
            )
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    async def _score_awaited(self, name: str, batch: RewardBatch) -> Any:
        """The component on ``batch``, awaited; cancelled at its deadline."""
        deadline = self.specs[name].deadline_s
        if deadline is None or _collective(self.components[name]):
            return await self.components[name].ascore(batch)
        try:
            return await asyncio.wait_for(self.components[name].ascore(batch), deadline)
        except asyncio.TimeoutError:
            raise DeadlineExceeded(
                f"no result within its {deadline:g} s deadline (rewards.{name}.deadline_s); the call was cancelled"
            ) from None

    def _apply_gate(self, name: str, batch: RewardBatch, output: RewardOutput) -> RewardOutput:
        gate = self.specs[name].gate
        if gate is None:
            return output
        gate_scores = self.compute(gate.on, batch).scores
        closed = 0
        for i, value in enumerate(gate_scores):
            if value is None or value < gate.min:
                output.scores[i] = gate.value
                if output.step_scores is not None and output.step_scores[i] is not None:
                    output.step_scores[i] = [0.0] * len(output.step_scores[i])
                closed += 1
        output.metrics["gate_closed_fraction"] = closed / max(len(gate_scores), 1)
        return output

    def _claim(self, name: str) -> tuple[RewardOutput | None, threading.Event | None, bool]:
        with self._lock:
            if name in self._outputs:
                return self._outputs[name], None, False
            event = self._inflight.get(name)
            if event is not None:
                return None, event, False
            event = threading.Event()
            self._inflight[name] = event
            return None, event, True

    def _store(self, name: str, output: RewardOutput, event: threading.Event) -> RewardOutput:
        with self._lock:
            self._outputs[name] = output
        event.set()
        return output

    def _scoring(self, name: str, batch: RewardBatch, key: Any):
        """The one scoring core of :meth:`compute` and :meth:`acompute`: a generator that yields
        what must be waited for (:class:`_Wait`, :class:`_Score`, :class:`_Gate`), is sent the
        result (or has the error thrown in) and returns the component's output for this batch
        (computed once, cached until the next batch)."""
        if key is not None:
            batch = self._start_batch(batch, key)
        elif self.last_batch is not batch:
            batch = self._start_batch(batch, None)
        cached, event, owner = self._claim(name)
        if cached is not None:
            return cached
        if not owner:
            yield _Wait(event)
            return self._outputs[name]
        started = time.perf_counter()
        collective = _collective(self.components[name])
        failed = False
        try:
            scored, too_long = self._within_caps(batch)
            if scored is None and collective:  # the other ranks' collectives need this rank's call
                scored = batch.subset([])
            if scored is None:
                output = self._spread(name, RewardOutput(scores=[]), len(batch), too_long)
            else:
                n = len(scored)  # before the component runs: code that empties the batch's lists changes nothing
                raw = yield _Score(name, scored)
                output = self._spread(name, self._sanitize(name, raw, n), len(batch), too_long)
        except (Exception, SystemExit) as error:  # a component must never crash (or quietly end) training
            output = self._failed(name, error, len(batch))
            failed = True
        if collective:
            try:  # joins the batch's collective round if the call did not; raises when any rank failed
                self.components[name].settle_collectives(failed)
            except Exception as error:
                if not failed:
                    output = self._failed(name, error, len(batch))
        output.seconds = time.perf_counter() - started
        try:
            if self.specs[name].gate is not None:
                output = yield _Gate(name, batch, output)
        except Exception as error:
            output = self._failed(name, error, len(batch))
        return self._store(name, output, event)

    def _perform(self, request: _Wait | _Score | _Gate) -> Any:
        """What :meth:`_scoring` waits for, done blocking."""
        if isinstance(request, _Wait):
            return request.event.wait()
        if isinstance(request, _Score):
            with _contained():
                return self._score_blocking(request.name, request.batch)
        return self._apply_gate(request.name, request.batch, request.output)

    async def _aperform(self, request: _Wait | _Score | _Gate) -> Any:
        """What :meth:`_scoring` waits for, awaited (blocking work in a thread)."""
        if isinstance(request, _Wait):
            return await asyncio.to_thread(request.event.wait)
        if isinstance(request, _Score):
            with _contained():
                return await self._score_awaited(request.name, request.batch)
        return await asyncio.to_thread(self._apply_gate, request.name, request.batch, request.output)

    def compute(self, name: str, batch: RewardBatch, key: Any = None) -> RewardOutput:
        """The component's output for this batch (computed once, cached until the next batch)."""
        steps = self._scoring(name, batch, key)
        try:
            request = next(steps)
            while True:
                try:
                    result = self._perform(request)
                except BaseException as error:  # thrown into the core, which applies the failure policy
                    request = steps.throw(error)
                else:
                    request = steps.send(result)
        except StopIteration as done:
            return done.value

    async def acompute(self, name: str, batch: RewardBatch, key: Any = None) -> RewardOutput:
        """:meth:`compute` for the event loop: the same core, its waits awaited."""
        steps = self._scoring(name, batch, key)
        try:
            request = next(steps)
            while True:
                try:
                    result = await self._aperform(request)
                except BaseException as error:
                    request = steps.throw(error)
                else:
                    request = steps.send(result)
        except StopIteration as done:
            return done.value

    def score_all(self, batch: RewardBatch, log_metric=None, log_extra=None) -> dict[str, RewardOutput]:
        """Every component on one batch (``procrl score``, ``check``, PPO rollouts); the batch
        observers see it like a TRL batch, logging through ``log_metric`` / ``log_extra``."""
        self._start_batch(batch, None)
        outputs = {name: self.compute(name, batch) for name in self.specs}
        with self._lock:
            self._observed_key = self._batch_key
        self._notify(batch, outputs, log_metric, log_extra)
        return outputs

    def resolve(
        self, outputs: dict[str, RewardOutput], groups: list, batch_level: bool = True
    ) -> tuple[dict[str, RewardOutput], dict[str, FallbackResult]]:
        """Outputs whose None scores are resolved by each component's ``fallback``
        (:mod:`procrl.rewards.fallback`; ``groups[i]``: the generation group of sample i), and
        per component how many were filled. The cached outputs are left as they are."""
        resolved: dict[str, RewardOutput] = {}
        results: dict[str, FallbackResult] = {}
        for name, output in outputs.items():
            result = resolve_fallback(output.scores, self.specs[name].fallback, groups, batch_level)
            resolved[name] = dataclasses.replace(output, scores=result.scores)
            results[name] = result
        return resolved, results

    def total(self, outputs: dict[str, RewardOutput]) -> list[float | None]:
        """Weighted sum per sample, skipping None (as TRL's nansum); None when all are None.
        Resolve the fallbacks first (:meth:`resolve`): a None left here is one no group or
        batch could fill."""
        n = len(next(iter(outputs.values())).scores) if outputs else 0
        totals: list[float | None] = []
        for i in range(n):
            parts = [(self.specs[k].weight, o.scores[i]) for k, o in outputs.items() if o.scores[i] is not None]
            totals.append(sum(w * v for w, v in parts) if parts else None)
        return totals

    @property
    def last_outputs(self) -> dict[str, RewardOutput]:
        """Outputs of the most recent batch (process credit and diagnostics read them)."""
        with self._lock:
            return dict(self._outputs)

    # -- TRL adapter --

    def _batch_from_trl(self, prompts, completions, completion_ids, kwargs) -> RewardBatch:
        columns = {
            k: v
            for k, v in kwargs.items()
            if k not in ("trainer_state", "log_extra", "log_metric", "environments") and isinstance(v, list)
        }
        n = len(completions)
        return RewardBatch(
            completions=[completion_text(c) for c in completions],
            questions=list(columns.get("question", [None] * n)),
            golds=list(columns.get("answer", [None] * n)),
            prompts=[_prompt_text(p) for p in prompts],
            completion_ids=completion_ids,
            columns=columns,
        )

    def _notify_if_complete(self, kwargs: dict) -> None:
        """Hand the batch to the observers once every component has scored it (once per batch)."""
        with self._lock:
            if (
                not self.batch_observers
                or self._observed_key is self._batch_key
                or len(self._outputs) < len(self.specs)
            ):
                return
            self._observed_key = self._batch_key
            batch, outputs = self.last_batch, dict(self._outputs)
        self._notify(batch, outputs, kwargs.get("log_metric"), kwargs.get("log_extra"))

    def _notify(self, batch: RewardBatch, outputs: dict[str, RewardOutput], log_metric, log_extra) -> None:
        for observer in self.batch_observers:
            try:
                observer(batch, outputs, log_metric, log_extra)
            except Exception as error:  # an observer (diagnostics) must never crash training
                logger.warning("batch observer %r failed: %s: %s", observer, type(error).__name__, error)

    def reward_function(self, name: str) -> Callable:
        """A TRL reward function for one component, named after it."""
        mix = self

        if self.components[name].is_async:

            async def reward(prompts, completions, completion_ids=None, **kwargs):
                batch = mix._batch_from_trl(prompts, completions, completion_ids, kwargs)
                output = await mix.acompute(name, batch, key=completions)
                output.log(name, kwargs.get("log_metric"))
                mix._notify_if_complete(kwargs)
                return list(output.scores)

        else:

            def reward(prompts, completions, completion_ids=None, **kwargs):
                batch = mix._batch_from_trl(prompts, completions, completion_ids, kwargs)
                output = mix.compute(name, batch, key=completions)
                output.log(name, kwargs.get("log_metric"))
                mix._notify_if_complete(kwargs)
                return list(output.scores)

        reward.__name__ = name
        reward.__qualname__ = name
        return reward

    def reward_functions(self) -> list[Callable]:
        return [self.reward_function(name) for name in self.specs]


@dataclass(frozen=True)
class _Wait:
    """Another caller is scoring this component on this batch: wait for its result."""

    event: threading.Event


@dataclass(frozen=True)
class _Score:
    """Run the named component on the batch (within the caps)."""

    name: str
    batch: RewardBatch


@dataclass(frozen=True)
class _Gate:
    """Close the gate of the samples whose gating component scored below its ``min``."""

    name: str
    batch: RewardBatch
    output: RewardOutput


def _collective(component: RewardComponent) -> bool:
    """Whether the component's scoring is a collective of all ranks (see the module docstring)."""
    return bool(getattr(component, "collective", False))


def _finite(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _caller_grad_mode() -> Callable[[], Any]:
    """A context that gives a worker thread the caller's torch grad mode (thread-local: a reward
    model called under ``torch.no_grad()`` keeps it); nothing when torch is not loaded."""
    torch = sys.modules.get("torch")
    if torch is None:
        return contextlib.nullcontext
    enabled = torch.is_grad_enabled()
    return lambda: torch.set_grad_enabled(enabled)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False


def _run_in_thread(component: RewardComponent, batch: RewardBatch) -> Any:
    result: dict[str, Any] = {}

    def target():
        try:
            result["value"] = asyncio.run(component.ascore(batch))
        except BaseException as error:  # re-raised in the caller
            result["error"] = error

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]
