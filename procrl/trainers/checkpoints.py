"""Checkpoints that are complete or absent, and resuming from the newest complete one.

transformers writes ``checkpoint-N/`` file by file (weights, optimizer, scheduler, RNG states,
``trainer_state.json`` last); a run killed during that write would leave a directory that
``--resume`` picks and fails on. procrl's trainers (:func:`atomic_checkpoints`) run
transformers' / TRL's own save path unchanged but point it at ``<output_dir>/.partial/``;
once every rank has written its part, the main process renames
``.partial/checkpoint-N`` to ``checkpoint-N`` (one ``rename``, atomic on a POSIX file system)
and only then rotates old checkpoints. A kill at any moment leaves either the complete
``checkpoint-N`` or none, plus debris in ``.partial/`` that the next start removes.

:func:`find_resume_checkpoint` takes the newest checkpoint that passes :func:`checkpoint_problem`
(it also catches checkpoints written by other tools or copied half-way, and weights or torch
files that are truncated or garbled, from their headers and sizes) and says which ones it
skipped and why; :func:`set_aside` renames the skipped ones to ``incomplete-checkpoint-N`` so
that neither transformers' rotation nor a later resume can mistake them for checkpoints.

Guarantee: against a killed process (kill -9, OOM killer, a lost node), not against power loss
(files are not fsync'ed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from procrl.core.config import ConfigError

__all__ = [
    "CheckpointWriteError",
    "FINAL_MARKER",
    "INCOMPLETE_PREFIX",
    "STAGING_DIR",
    "ResumePoint",
    "atomic_checkpoints",
    "checkpoint_problem",
    "final_model_problem",
    "find_resume_checkpoint",
    "gather_zero3_weights",
    "holds_model",
    "interrupted_final_save",
    "kept",
    "list_checkpoints",
    "newest_complete_checkpoint",
    "save_final_model",
    "set_aside",
]

STAGING_DIR = ".partial"
INCOMPLETE_PREFIX = "incomplete-"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
# What holds the model in a checkpoint: transformers' weights (full or sharded), a PEFT adapter,
# or (DeepSpeed) the engine's own checkpoint named by the ``latest`` tag file.
_WEIGHTS = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "adapter_model.safetensors",
    "adapter_model.bin",
)


def list_checkpoints(output_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(step, path)`` of every ``checkpoint-N`` directory, newest (highest N) first."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    found = []
    for entry in folder.iterdir():
        match = _CHECKPOINT.match(entry.name)
        if match and entry.is_dir():
            found.append((int(match.group(1)), entry))
    return sorted(found, key=lambda item: item[0], reverse=True)


def checkpoint_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` is not a complete checkpoint (a short phrase), or None when it is one."""
    folder = Path(path)
    if not folder.is_dir():
        return "not a directory"
    names = {entry.name for entry in folder.iterdir()}
    if not names:
        return "empty (a save was interrupted)"
    if "trainer_state.json" not in names:
        return "no trainer_state.json (a save was interrupted; transformers writes it last)"
    try:
        step = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))["global_step"]
    except (OSError, ValueError, KeyError, TypeError):
        return "trainer_state.json is unreadable or truncated"
    match = _CHECKPOINT.match(folder.name)
    if match and step != int(match.group(1)):
        return f"trainer_state.json says global step {step}"
    if not names.intersection(_WEIGHTS):
        if "latest" not in names:
            return "no model weights"
        tag = (folder / "latest").read_text(encoding="utf-8", errors="replace").strip()
        if not tag or not (folder / tag).is_dir():
            return f"DeepSpeed's latest tag names {tag!r}, which is missing"
    return _damaged_file(folder, names)


def _damaged_file(folder: Path, names: set[str]) -> str | None:
    """Why one of the checkpoint's weight or state files cannot be loaded (truncated, not what
    its name says), from their headers and sizes only (no tensor is read); None when all look whole."""
    for name in sorted(names):
        path = folder / name
        if name.endswith(".safetensors"):
            problem = _safetensors_problem(path)
        elif name.endswith((".pt", ".pth", ".bin")) and path.is_file():
            problem = _torch_file_problem(path)
        else:
            continue
        if problem:
            return f"{name} is damaged ({problem})"
    for name in sorted(names.intersection(_STATE_CONTENT)):
        problem = _state_content_problem(folder / name, _STATE_CONTENT[name])
        if problem:
            return f"{name} is damaged ({problem})"
    if "config.json" in names and names.intersection({"model.safetensors", "model.safetensors.index.json"}):
        return _weights_cover_model(folder, names)
    return None


# what transformers' _load_optimizer_and_scheduler indexes into: the keys each file must hold (the RNG
# states hold numpy's, which a weights-only load refuses: their archive is checked, as above)
_STATE_CONTENT = {"optimizer.pt": ("state", "param_groups"), "scheduler.pt": ()}


def _state_content_problem(path: Path, keys: tuple[str, ...]) -> str | None:
    """A torch file that loads but is not the state it is named after (``{}`` or a string as
    ``optimizer.pt``): loaded as transformers loads it (``weights_only``), memory-mapped so no
    tensor is read, and its shape checked."""
    import zipfile

    import torch

    if not zipfile.is_zipfile(path):
        return None  # torch.save's legacy format: left to transformers
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as error:  # noqa: BLE001 - any reason torch cannot load it makes it unusable
        return f"not loadable: {type(error).__name__}"
    if not isinstance(state, dict):
        return f"holds a {type(state).__name__}, not a state dict"
    missing = [key for key in keys if key not in state]
    if missing:
        return f"holds no {', '.join(repr(key) for key in missing)}"
    return None


def _weights_cover_model(folder: Path, names: set[str]) -> str | None:
    """Whether the weights hold every tensor of the model the checkpoint's ``config.json``
    describes (tensor names from the safetensors header or index, the model built on the meta
    device: no memory, no weights read). Tied tensors are saved once and count once. None when
    the config names no model transformers builds (the check cannot be made)."""
    try:
        from accelerate import init_empty_weights
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(str(folder))
        with init_empty_weights():
            model = AutoModelForCausalLM.from_config(config)
        model.tie_weights()  # as loading does: a tied tensor is saved once (lm_head.weight is the embedding)
        expected = {name for name, _ in model.named_parameters()}  # duplicates (tied) left out
    except Exception:  # noqa: BLE001 - not a causal LM transformers knows: nothing to compare with
        return None
    try:
        if "model.safetensors.index.json" in names:
            from procrl.core.jsonl import read_small_json

            present = set(read_small_json(folder / "model.safetensors.index.json", 64 << 20)["weight_map"])
            weights = "model.safetensors.index.json"
        else:
            with (folder / "model.safetensors").open("rb") as handle:
                length = int.from_bytes(handle.read(8), "little")
                present = set(json.loads(handle.read(length))) - {"__metadata__"}
            weights = "model.safetensors"
    except (OSError, ValueError, KeyError, TypeError):
        return "model.safetensors.index.json is unreadable"
    missing = sorted(expected - present)
    if expected and len(missing) == len(expected):
        return f"{weights} holds none of the {len(expected)} tensors of the model its config.json describes"
    if missing:
        return f"{weights} lacks {len(missing)} of the {len(expected)} tensors of the model ({missing[0]}, ...)"
    return None


def _safetensors_problem(path: Path) -> str | None:
    """A safetensors file is an 8-byte header length, a JSON header naming each tensor's byte
    range, then the data: its size must reach the end of the last range."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            length = int.from_bytes(handle.read(8), "little")
            if size < 8 or length > size - 8:
                return f"truncated: {size:,} bytes"
            header = json.loads(handle.read(length))
    except (OSError, ValueError) as error:
        return f"unreadable header: {type(error).__name__}"
    if not isinstance(header, dict):
        return "unreadable header"
    ends = [
        entry["data_offsets"][1]
        for key, entry in header.items()
        if key != "__metadata__" and isinstance(entry, dict) and isinstance(entry.get("data_offsets"), list)
    ]
    expected = 8 + length + max(ends, default=0)
    if size < expected:
        return f"truncated: {size:,} of {expected:,} bytes"
    return None


def _torch_file_problem(path: Path) -> str | None:
    """``torch.save`` writes a zip archive: its directory at the end must be readable and every
    member must lie within the file (a truncated or garbled file fails at ``torch.load``)."""
    import zipfile

    try:
        size = path.stat().st_size
        if not zipfile.is_zipfile(path):
            with path.open("rb") as handle:
                if handle.read(1) == b"\x80":  # torch.save's legacy format is a pickle: nothing to check cheaply
                    return None
        with zipfile.ZipFile(path) as archive:
            for member in archive.infolist():
                if member.header_offset + member.compress_size > size:
                    return f"truncated: {member.filename} ends past {size:,} bytes"
    except (OSError, zipfile.BadZipFile, ValueError) as error:
        return f"not a torch.save file: {' '.join(str(error).split()) or type(error).__name__}"
    return None


@dataclass
class ResumePoint:
    """The checkpoint a resumed run starts from, and the newer ones it passed over."""

    checkpoint: str
    step: int
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)

    def describe(self) -> list[str]:
        """What ``--resume`` reports: one line for the choice, one per skipped checkpoint."""
        lines = [f"resuming from {self.checkpoint} (global step {self.step}): the newest complete checkpoint"]
        lines += [f"skipped {path}: {reason}" for path, reason in self.skipped]
        return lines


def find_resume_checkpoint(output_dir: str | os.PathLike) -> ResumePoint:
    """The newest complete ``checkpoint-N`` of ``output_dir``; ConfigError when there is none."""
    skipped: list[tuple[str, str]] = []
    for step, path in list_checkpoints(output_dir):
        problem = checkpoint_problem(path)
        if problem is None:
            return ResumePoint(str(path), step, skipped)
        skipped.append((str(path), problem))
    if not skipped:
        raise ConfigError(f"--resume: no checkpoint-* directory in {output_dir}")
    reasons = "; ".join(f"{Path(path).name}: {reason}" for path, reason in skipped)
    raise ConfigError(f"--resume: no complete checkpoint in {output_dir} ({reasons})")


def set_aside(paths: list[str]) -> list[str]:
    """Rename incomplete checkpoints to ``incomplete-checkpoint-N`` (kept for inspection, out of
    reach of rotation and resume); returns the new paths."""
    moved = []
    for path in paths:
        source = Path(path)
        target = source.with_name(INCOMPLETE_PREFIX + source.name)
        suffix = 1
        while target.exists():
            suffix += 1
            target = source.with_name(f"{INCOMPLETE_PREFIX}{source.name}.{suffix}")
        source.rename(target)
        moved.append(str(target))
    return moved


# --- the trainer hook --------------------------------------------------------------------------


class AtomicCheckpoints:
    """Mixin for a transformers ``Trainer`` (TRL's GRPOTrainer, procrl's PPOTrainer): the
    trainer's own ``_save_checkpoint`` writes into ``.partial/`` and the finished checkpoint is
    renamed into the output dir. Everything transformers and TRL save (weights, optimizer,
    DeepSpeed shards of every rank, RNG states, trainer state, TRL's extra files) keeps its
    layout and its code path."""

    _procrl_staging = False

    def create_model_card(self, *args, **kwargs):
        """TRL's model card, written by TRL into a staging folder and then renamed onto
        ``README.md`` of the run: a file a library writes into the run goes in by procrl's one rule,
        so a link planted under the name is replaced, never written through. A card that cannot
        be written (a name the card cannot hold) is a warning, not the end of the run."""
        import logging

        if not self.is_world_process_zero():
            return
        run_dir = self.args.output_dir
        staging = os.path.join(run_dir, STAGING_DIR, "model-card")
        try:
            shutil.rmtree(staging, ignore_errors=True)
            os.makedirs(staging)
            self.args.output_dir = staging
            try:
                super().create_model_card(*args, **kwargs)
            finally:
                self.args.output_dir = run_dir
            from procrl.core.atomic import write_bytes

            for name in sorted(os.listdir(staging)):  # the one write: a link under the name is replaced, not followed
                write_bytes(os.path.join(run_dir, name), Path(staging, name).read_bytes())
        except (OSError, ValueError) as error:  # UnicodeError is a ValueError
            logging.getLogger(__name__).warning("the model card was not written to %s: %s", run_dir, _first_line(error))
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def log(self, logs, *args, **kwargs):
        """TRL's ``log``, with the completions it keeps for its table (``completions/*.parquet``,
        the W&B and trackio ``completions`` tables, the console sample) redacted first: a
        registered secret quoted by a training question or a completion is no less a secret there."""
        from procrl.core.redaction import redact

        kept_logs = getattr(self, "_logs", None)
        if isinstance(kept_logs, dict):
            columns = [kept_logs.get("prompt"), kept_logs.get("completion")]
            columns += list((kept_logs.get("extra") or {}).values())
            for column in columns:
                if column is not None and hasattr(column, "clear"):
                    values = [redact(value) for value in column]
                    column.clear()
                    column.extend(values)
        return super().log(logs, *args, **kwargs)

    def _get_output_dir(self, trial):
        run_dir = super()._get_output_dir(trial)
        return os.path.join(run_dir, STAGING_DIR) if self._procrl_staging else run_dir

    def _save_checkpoint(self, model, trial):
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, rotate_checkpoints

        run_dir = super()._get_output_dir(trial)
        name = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
        staged = os.path.join(run_dir, STAGING_DIR, name)
        final = os.path.join(run_dir, name)
        self._procrl_staging = True
        try:
            super()._save_checkpoint(model, trial)
        except Exception as error:
            reason = _write_failure(error)
            if reason is None:
                raise
            raise CheckpointWriteError(
                f"writing {name} to {run_dir} failed ({reason});"
                f" it was not published, {kept(run_dir, _remedy(error, run_dir))}"
            ) from None
        finally:
            self._procrl_staging = False
        self.accelerator.wait_for_everyone()  # every rank has written its shards and RNG state
        if self.args.should_save:
            publish(staged, final)
            if self.state.best_model_checkpoint and os.path.dirname(self.state.best_model_checkpoint) == os.path.join(
                run_dir, STAGING_DIR
            ):
                self.state.best_model_checkpoint = os.path.join(
                    run_dir, os.path.basename(self.state.best_model_checkpoint)
                )
            rotate_checkpoints(
                output_dir=run_dir,
                save_total_limit=self.args.save_total_limit,
                best_model_checkpoint=self.state.best_model_checkpoint,
                use_mtime=True,
            )
        self.accelerator.wait_for_everyone()


class CheckpointWriteError(ConfigError):
    """A checkpoint could not be written (full disk, quota, read-only file system): one line."""


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[-1].strip() if text else type(error).__name__


_WRITE_MARKS = ("I/O error", "file write failed", "No space left", "File too large", "Disk quota")
# what torch.save's zip writer raises when a write fails (a full disk, a file size limit): no errno
_TORCH_WRITE_MARKS = ("iostream error", "unexpected pos")


def _write_failure(error: BaseException) -> str | None:
    """The reason, when ``error`` (or what it was raised from) is an I/O failure while saving: an
    OSError, or the same wrapped by safetensors / torch.save; None otherwise."""
    chain, seen = [error], set()
    while chain:
        current = chain.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError):
            return current.strerror or _first_line(current)
        if any(mark in str(current) for mark in _WRITE_MARKS):
            return _first_line(current)
        chain += [current.__cause__, current.__context__]
    if any(mark in str(part) for part in (error, error.__context__) for mark in _TORCH_WRITE_MARKS):
        return "torch.save could not write its file: a full disk or a file size limit"
    return None


def _remedy(error: BaseException, folder: str | os.PathLike) -> str:
    """What to do before continuing, from the failure: a permission error asks for write access,
    anything else (a full disk, a quota, a file size limit) for space."""
    import errno

    chain, seen = [error], set()
    while chain:
        current = chain.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return f"make {folder} writable and "
        chain += [current.__cause__, current.__context__]
    return "free space and "


def newest_complete_checkpoint(output_dir: str | os.PathLike) -> str | None:
    """The newest ``checkpoint-N`` of ``output_dir`` that passes :func:`checkpoint_problem`."""
    return next((str(path) for _, path in list_checkpoints(output_dir) if checkpoint_problem(path) is None), None)


def interrupted_final_save(output_dir: str | os.PathLike, step: int) -> str:
    """What a run stopped during its final save (at global step ``step``) leaves, in words."""
    newest = newest_complete_checkpoint(output_dir)
    if newest and Path(newest).name == f"checkpoint-{step}":
        return (
            f"training had finished, but the final model was not published in {output_dir}; {newest} holds it: "
            "use it, or procrl train --resume publishes it from there"
        )
    return f"the final model was not published in {output_dir}; {kept(output_dir)}"


def kept(output_dir: str | os.PathLike, first: str = "") -> str:
    """What a run stopped now leaves to continue from, and how (for the one-line messages);
    ``first``: what to do before (``"free space and "``)."""
    newest = newest_complete_checkpoint(output_dir)
    if newest:
        return f"{newest} is the newest complete checkpoint: {first}continue with --resume"
    return f"no checkpoint was saved yet, so there is nothing to resume: {first}train again"


def publish(staged: str, final: str) -> None:
    """Move a finished checkpoint into place. A stale directory under the final name (left by a
    killed run that did not save atomically) is replaced, never merged into."""
    from procrl.core.atomic import replace_directory
    from procrl.core.interrupts import deferred

    if not os.path.isdir(staged):
        raise FileNotFoundError(f"checkpoint was not written: {staged}")
    if os.path.islink(final):  # not procrl's: never renamed aside or deleted
        raise CheckpointWriteError(
            f"{final} is a symlink, not a checkpoint of this run; move it away and continue with --resume"
        )
    with deferred():
        replace_directory(staged, final, os.path.join(os.path.dirname(staged), "replaced-" + os.path.basename(final)))
    try:
        os.rmdir(os.path.dirname(staged))  # .partial/ exists only while a save is under way
    except OSError:
        pass


# --- the final model ---------------------------------------------------------------------------

FINAL_STAGING = "final"  # <output_dir>/.partial/final while the final model is being written
FINAL_MARKER = "final-save-incomplete.json"  # at the top of the output dir while it is being published
# written last when the final model is published: its presence (without the marker) means complete
_FINAL_LAST = "trainer_state.json"


def _publish_order(names: list[str]) -> list[str]:
    """Everything else first, then the weights, then trainer_state.json."""

    def rank(name: str) -> tuple[int, str]:
        if name == _FINAL_LAST:
            return 2, name
        weights = name in _WEIGHTS or name.endswith((".safetensors", ".bin")) and name != "training_args.bin"
        return (1 if weights else 0), name

    return sorted(names, key=rank)


def final_model_problem(output_dir: str | os.PathLike) -> str | None:
    """Why the top of a run's output dir holds no complete final model (a short phrase), or None
    when it does. Only for directories that hold a procrl run (checkpoints, run_info.json)."""
    folder = Path(output_dir)
    if (folder / FINAL_MARKER).exists():
        return f"its final save was interrupted ({FINAL_MARKER} is there)"
    has_run = (folder / "run_info.json").is_file() or bool(list_checkpoints(folder))
    if has_run and not (folder / _FINAL_LAST).is_file():
        return "it holds no final model (its run is still training, or was stopped before its final save completed)"
    return None


def gather_zero3_weights(trainer) -> bool:
    """Under DeepSpeed ZeRO-3, have the final save gather the sharded weights into one 16-bit model
    (``stage3_gather_16bit_weights_on_model_save``), whatever launched the run: accelerate's
    ``--use_deepspeed --zero_stage 3`` flags leave it off (the recipes' zero3.yaml turns it on), and
    without it transformers writes only DeepSpeed's shards, which ``from_pretrained`` cannot load.
    Set on the engine for this save only, so checkpoints stay as the config says. Returns whether
    it was turned on here."""
    engine = getattr(trainer, "deepspeed", None)
    zero = getattr(getattr(engine, "_config", None), "zero_config", None)
    if zero is None or not engine.zero_optimization_partition_weights():
        return False
    if zero.gather_16bit_weights_on_model_save:
        return False
    zero.gather_16bit_weights_on_model_save = True
    return True


def holds_model(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds what ``from_pretrained`` loads: a config and transformers' weights
    (or a PEFT adapter with its config); a DeepSpeed engine checkpoint alone does not count."""
    names = {entry.name for entry in Path(folder).iterdir()} if Path(folder).is_dir() else set()
    if {"adapter_config.json"} <= names and names.intersection({"adapter_model.safetensors", "adapter_model.bin"}):
        return True
    return "config.json" in names and bool(names.intersection(_WEIGHTS[:4]))


def save_final_model(trainer, output_dir: str | os.PathLike) -> None:
    """The end of a run: the model (``trainer.save_model``, transformers' and TRL's own code,
    every rank taking part under DeepSpeed / FSDP) and ``trainer_state.json`` are written into
    ``.partial/final/`` and then moved to the top of ``output_dir``, with :data:`FINAL_MARKER`
    there during the moves, so the top is the previous content or the complete final model.
    A full disk is a one-line error naming the checkpoint to continue from; nothing is published."""
    from procrl.core.atomic import replace_directory, replace_file
    from procrl.core.interrupts import deferred

    folder = Path(output_dir)
    staged = folder / STAGING_DIR / FINAL_STAGING
    main = trainer.args.should_save
    if main:
        shutil.rmtree(staged, ignore_errors=True)
    trainer.accelerator.wait_for_everyone()  # no rank writes its shards into what is being removed
    gather_zero3_weights(trainer)
    try:
        trainer.save_model(str(staged), _internal_call=True)
        if main:
            trainer.state.save_to_json(str(staged / _FINAL_LAST))
    except BaseException as error:
        if main:
            shutil.rmtree(staged, ignore_errors=True)  # what was written of it: give the space back
            try:
                staged.parent.rmdir()
            except OSError:
                pass
        reason = _write_failure(error) if isinstance(error, Exception) else None
        if reason is None:
            raise
        raise CheckpointWriteError(
            f"writing the final model to {folder} failed ({reason});"
            f" nothing was published there, {kept(folder, _remedy(error, folder))}"
        ) from None
    trainer.accelerator.wait_for_everyone()
    if main:
        marker = folder / FINAL_MARKER
        try:
            with deferred():
                marker.write_text(
                    json.dumps(
                        {
                            "what": "procrl is moving the final model from .partial/final to here;"
                            " if this file stays, that "
                            "was interrupted and the files here are a mix: use the newest checkpoint",
                            "newest_checkpoint": newest_complete_checkpoint(folder),
                        },
                        indent=2,
                    )
                    + "\n"
                )
                for name in _publish_order([entry.name for entry in staged.iterdir()]):
                    source, target = staged / name, folder / name
                    if source.is_dir():  # a DeepSpeed engine checkpoint (global_stepN) when weights are not gathered
                        replace_directory(source, target, staged.parent / f"replaced-{name}")
                    else:
                        replace_file(source, target, "output_dir", within=folder)
                marker.unlink()
        except (OSError, ConfigError) as error:
            raise CheckpointWriteError(
                f"publishing the final model in {folder} failed ({_first_line(error)}); {FINAL_MARKER} marks its top "
                f"as incomplete, {kept(folder)}"
            ) from None
    if main:
        for empty in (staged, staged.parent):
            try:
                empty.rmdir()
            except OSError:
                pass
    trainer.accelerator.wait_for_everyone()
    if trainer.args.push_to_hub:  # as save_model(output_dir) would have (it writes the same files again, then uploads)
        trainer.push_to_hub(commit_message="Model save", revision=trainer.args.hub_revision)


_ATOMIC_CLASSES: dict[type, type] = {}


def atomic_checkpoints(trainer_class: type) -> type:
    """``trainer_class`` with :class:`AtomicCheckpoints` mixed in (same name, cached)."""
    if issubclass(trainer_class, AtomicCheckpoints):
        return trainer_class
    if trainer_class not in _ATOMIC_CLASSES:
        _ATOMIC_CLASSES[trainer_class] = type(
            trainer_class.__name__,
            (AtomicCheckpoints, trainer_class),
            {"__module__": trainer_class.__module__, "__doc__": trainer_class.__doc__},
        )
    return _ATOMIC_CLASSES[trainer_class]
