"""Mean token log-probability of a target statement after many contexts, with a causal LM.

ReCEval's informativeness (docs/spec.md section 3) needs ``mean log p(t | context)`` for every
prefix of every chain. :class:`TargetLogProbScorer` computes them in batched forward passes:
identical (context, target) sequences run once, sequences are sorted by length and
left-padded (explicit position ids, so padding does not shift positions) so that only the
last ``max target length + 1`` logits are needed.

The LM is either a model named in the recipe (loaded lazily, once) or the trainer's reference
model, which is already in memory: ``trainer.ref_model`` (TRL keeps one when ``beta > 0`` and
the policy has no LoRA adapters), or the policy with its adapters disabled (TRL's own way of
getting the reference under PEFT). A second copy is never loaded.

Under DeepSpeed ZeRO-3 (``lm: reference``, 2+ ranks) every forward pass all-gathers the sharded
parameters, so every rank must make the same number of passes or the others wait in the
all-gather until the collective timeout. :meth:`TargetLogProbScorer.mean_logprobs` therefore
takes its decisions together: the ranks agree on the number of passes (the largest; a rank with
fewer, or none, pads with dummy passes) and on whether the batch failed (a rank whose encoding
or whose forward fails goes on with dummy passes, and after the last pass every rank raises
:class:`CollectiveFailure`). A component that may skip the scorer on a failure before reaching it
calls :meth:`TargetLogProbScorer.settle` after each batch (the reward mix does it for components
that declare ``collective``): a rank that did not join this batch's round joins it then, as failed
or with nothing to score.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["CollectiveFailure", "ReferenceModelError", "TargetLogProbScorer", "reference_lm"]

logger = logging.getLogger(__name__)

REFERENCE = "reference"


class ReferenceModelError(RuntimeError):
    """``lm: reference`` was asked for but the trainer holds no reference model."""


class CollectiveFailure(RuntimeError):
    """Scoring failed on at least one rank of a collective (ZeRO-3) round: every rank gives up
    the batch together (the reward mix counts it as the failure ``exception`` on every rank)."""


def reference_lm(trainer: Any) -> tuple[Any, Callable[[], Any]]:
    """(model to call, context manager factory that makes it the reference) of a TRL trainer.

    ``trainer.ref_model`` when TRL made one (beta > 0, no PEFT); else the PEFT policy with its
    adapters disabled (the ``ref`` adapter when TRL loaded one, as TRL itself does).
    """
    if trainer is None:
        raise ReferenceModelError(
            "lm: reference needs the trainer's reference model, but no trainer is bound (e.g. procrl score); "
            "name a causal LM instead: lm: <hub id or directory>"
        )
    ref_model = getattr(trainer, "ref_model", None)
    if ref_model is not None:
        return ref_model, contextlib.nullcontext
    from accelerate.utils import is_peft_model

    policy = trainer.accelerator.unwrap_model(trainer.model) if hasattr(trainer, "accelerator") else trainer.model
    if is_peft_model(policy):
        from trl.trainer.utils import use_adapter

        adapter = "ref" if "ref" in getattr(policy, "peft_config", {}) else None
        return trainer.model, lambda: use_adapter(policy, adapter_name=adapter)
    beta = getattr(getattr(trainer, "args", None), "beta", None)
    raise ReferenceModelError(
        f"lm: reference, but the trainer has no reference model in memory (trainer.beta={beta}, no LoRA "
        "adapters); set trainer.beta > 0, train with LoRA, or name a causal LM: lm: <hub id or directory>"
    )


def _zero3_world(trainer: Any) -> bool:
    """True when forward passes of the trainer's models are collective (ZeRO-3, 2+ ranks)."""
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is None or accelerator.num_processes < 2:
        return False
    plugin = getattr(accelerator.state, "deepspeed_plugin", None)
    if plugin is None:
        return False
    # the DeepSpeed config's own stage: ``zero_stage`` stays at accelerate's default when the
    # stage comes from a config file or dict (``deepspeed_config_file``, ``hf_ds_config``)
    config = getattr(plugin, "deepspeed_config", None)
    stage = (config.get("zero_optimization") or {}).get("stage") if isinstance(config, dict) else None
    return (stage if stage is not None else getattr(plugin, "zero_stage", None)) == 3


class TargetLogProbScorer:
    """Mean token log p(target | context) for many (context, target) pairs.

    ``lm``: a Hub id / directory (``procrl:tiny-qwen2`` works), or ``"reference"`` to use the
    bound trainer's reference model with the policy's tokenizer.
    """

    def __init__(
        self,
        lm: str,
        *,
        batch_size: int = 16,
        max_length: int = 1024,
        dtype: str = "auto",
        gguf_file: str | None = None,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.lm = lm
        self.gguf_file = gguf_file
        self.batch_size = batch_size
        self.max_length = max_length
        self.dtype = dtype
        self.device: Any = "cpu"
        self.trainer: Any = None
        self._tokenizer: Any = None
        self._model: Any = None
        self._activate: Callable[[], Any] = contextlib.nullcontext
        self._accepts: set[str] = set()
        self._joined = False  # this batch's collective round already made (settle() resets it)
        self.stats = {"sequences": 0, "unique": 0, "forward_passes": 0, "dummy_passes": 0, "collective_failures": 0}

    @property
    def collective(self) -> bool:
        """True when a forward pass is a collective of all ranks (``lm: reference`` under ZeRO-3)."""
        return self.lm == REFERENCE and _zero3_world(self.trainer)

    def bind(self, device: Any, tokenizer: Any, trainer: Any) -> None:
        self.device = device
        self.trainer = trainer
        if self.lm == REFERENCE:
            self._tokenizer = tokenizer
            self._model = None  # resolved at first score (TRL may wrap the models after bind)

    def _load(self) -> None:
        if self._model is not None:
            return
        if self.lm == REFERENCE:
            model, activate = reference_lm(self.trainer)
            if self._tokenizer is None:
                self._tokenizer = getattr(self.trainer, "processing_class", None)
            if self._tokenizer is None:
                raise ReferenceModelError("lm: reference needs the policy's tokenizer, but none is bound")
            self._model, self._activate = model, activate
        else:
            from transformers import AutoModelForCausalLM

            from procrl.models.loading import load_tokenizer_from, model_source
            from procrl.models.standalone import load_scoring_model

            source = model_source(self.lm, self.gguf_file)
            self._tokenizer = load_tokenizer_from(source)
            self._model = load_scoring_model(AutoModelForCausalLM, source, dtype=self.dtype, device=self.device)
        if self._tokenizer.pad_token_id is None:
            self._tokenizer.pad_token = self._tokenizer.eos_token
        unwrapped = self._model
        if self.trainer is not None and hasattr(self.trainer, "accelerator"):
            unwrapped = self.trainer.accelerator.unwrap_model(self._model)
        self._accepts = set(inspect.signature(unwrapped.forward).parameters)

    def _encode(self, context: str, target: str) -> tuple[list[int], int]:
        """Token ids of context + target (each tokenized alone, so the target's tokens do not
        depend on the context) and the target length; the context is cut from the left."""
        context_ids = self._tokenizer(context, add_special_tokens=False)["input_ids"]
        target_ids = self._tokenizer(target, add_special_tokens=False)["input_ids"]
        if not target_ids:
            raise ValueError(f"target {target!r} has no tokens")
        prefix = self._bos_prefix()
        room = max(self.max_length - len(target_ids) - len(prefix), 1)
        context_ids = context_ids[-room:]
        return prefix + context_ids + target_ids, len(target_ids)

    def _bos_prefix(self) -> list[int]:
        """The BOS the tokenizer itself puts first (Llama's ``<s>``, Llama 3's
        ``<|begin_of_text|>``), else nothing: SmolLM2's ``bos_token`` is the chat-turn opener
        ``<|im_start|>``, which its tokenizer never adds and which, put before plain text, makes
        the text read as a role name."""
        if not hasattr(self, "_prefix"):
            bos = self._tokenizer.bos_token_id
            first = self._tokenizer("a")["input_ids"][:1]
            self._prefix = [bos] if bos is not None and first == [bos] else []
        return self._prefix

    def _forward(self, rows: list[tuple[list[int], int]]) -> list[float]:
        import torch

        pad = self._tokenizer.pad_token_id
        length = max(len(ids) for ids, _ in rows)
        keep = max(t for _, t in rows) + 1
        input_ids = torch.full((len(rows), length), pad, dtype=torch.long)
        attention = torch.zeros((len(rows), length), dtype=torch.long)
        for i, (ids, _) in enumerate(rows):  # left padding: every target ends at the last column
            input_ids[i, length - len(ids) :] = torch.tensor(ids)
            attention[i, length - len(ids) :] = 1
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        kwargs: dict[str, Any] = {"input_ids": input_ids.to(self.device), "attention_mask": attention.to(self.device)}
        if "position_ids" in self._accepts:
            kwargs["position_ids"] = positions.to(self.device)
        if "logits_to_keep" in self._accepts:
            kwargs["logits_to_keep"] = keep
        if "use_cache" in self._accepts:
            kwargs["use_cache"] = False
        logits = self._model(**kwargs).logits[:, -keep:, :].float()
        logprobs = torch.log_softmax(logits[:, :-1, :], dim=-1)  # column j predicts token length-keep+1+j
        targets = input_ids[:, length - keep + 1 :].to(logprobs.device)
        token_logprobs = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        self.stats["forward_passes"] += 1
        return [token_logprobs[i, keep - 1 - t :].mean().item() for i, (_, t) in enumerate(rows)]

    def _dummy_forward(self) -> None:
        self._forward([([self._tokenizer.pad_token_id, self._tokenizer.pad_token_id], 1)])
        self.stats["forward_passes"] -= 1
        self.stats["dummy_passes"] += 1

    def _agree(self, values: list[int]) -> list[list[int]]:
        """Every rank's ``values`` (one all-gather: every rank must call it, in the same order)."""
        import torch

        accelerator = self.trainer.accelerator
        local = torch.tensor(values, dtype=torch.long, device=accelerator.device)
        return accelerator.gather(local).view(-1, len(values)).tolist()

    def _give_up(self, flags: list[list[int]], error: BaseException | None) -> None:
        """Raise :class:`CollectiveFailure` on every rank when a rank's ``flags[rank][-1]`` is set."""
        failed = [rank for rank, row in enumerate(flags) if row[-1]]
        if not failed:
            return
        self.stats["collective_failures"] += 1
        here = f": {type(error).__name__}: {error}" if error is not None else ""
        raise CollectiveFailure(
            f"reference-model scoring failed on rank(s) {failed}{here}; every rank gives up this batch"
        ) from error

    def settle(self, failed: bool = False) -> None:
        """End of a batch: a rank that did not join the batch's collective round (its component
        failed before calling :meth:`mean_logprobs`, or did not need it) joins it now, as failed
        or with nothing to score, so that the other ranks are not left waiting. Raises
        :class:`CollectiveFailure` when any rank failed that round. Nothing to do outside ZeRO-3."""
        joined, self._joined = self._joined, False
        if joined or not self.collective:
            return
        self._round([], RuntimeError("the component failed before scoring") if failed else None)
        self._joined = False

    def mean_logprobs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Mean token log p(target | context) for each (context, target), in order.

        Under ZeRO-3 (:attr:`collective`) every rank makes the same collective calls whatever
        happens on it: see the module docstring. Raises :class:`CollectiveFailure` on every rank
        when one rank failed."""
        error: BaseException | None = None
        unique: list[tuple[str, str]] = []
        try:
            self._load()
            unique = list(dict.fromkeys(pairs))
            rows = [self._encode(c, t) for c, t in unique]
        except Exception as caught:  # under ZeRO-3 the other ranks still need this rank's passes
            if not self.collective:
                raise
            error, rows = caught, []
        self.stats["sequences"] += len(pairs)
        self.stats["unique"] += len(unique)
        values = self._round(rows, error)
        by_pair = {pair: values[i] for i, pair in enumerate(unique)}
        return [by_pair[pair] for pair in pairs]

    def _round(self, rows: list[tuple[list[int], int]], error: BaseException | None) -> dict[int, float]:
        """The forward passes of ``rows`` (batched, shortest first): {row index: mean log-prob}.
        Collective: the ranks agree on the number of passes and on failure, before and after."""
        import torch

        collective = self.collective
        self._joined = True
        order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
        chunks = [order[s : s + self.batch_size] for s in range(0, len(order), self.batch_size)]
        passes = len(chunks)
        if collective:  # every rank must gather the shards the same number of times
            flags = self._agree([passes, int(error is not None)])
            self._give_up(flags, error)
            passes = max(row[0] for row in flags)
        values: dict[int, float] = {}
        with torch.no_grad(), self._activate():
            for k in range(passes):
                if error is None and k < len(chunks):
                    try:
                        for i, value in zip(chunks[k], self._forward([rows[i] for i in chunks[k]])):
                            values[i] = value
                        continue
                    except Exception as caught:  # e.g. out of memory in one forward
                        if not collective:
                            raise
                        error = caught
                try:  # a failed or finished rank keeps the other ranks' all-gathers company
                    self._dummy_forward()
                except Exception as caught:
                    logger.warning("dummy forward pass failed: %s: %s", type(caught).__name__, caught)
                    error = error or caught
        if collective:
            self._give_up(self._agree([int(error is not None)]), error)
        return values
