"""What a launch gives a run against what its recipe asks for.

``accelerate launch`` decides a run's processes and distributed type from, in order: its own
flags, ``--config_file``, accelerate's default config (``accelerate config``), and, with none of
those, the devices it finds (N GPUs: N plain data-parallel processes). A recipe's ``launch:``
section is a fourth source that accelerate does not know. This module describes each of them as
one :class:`LaunchSetup` so that they can be compared:

* :func:`recipe_setup`: what the recipe's ``launch:`` section (and its config file) asks for;
* :func:`predicted_setup`: what accelerate will launch for a list of flags, computed by
  accelerate's own resolution (``_validate_launch_command``) in the ``accelerate launch`` process,
  before any rank starts, so that nothing here re-implements accelerate's precedence;
* :func:`rank_setup`: what the launcher gave this process (the variables accelerate and torchrun
  set in every rank).

:func:`launch_differences` lists where two setups differ, in words, for the one line rank 0
prints and for ``run_info.json``.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from procrl.recipe.launch import TYPE_FLAGS, accelerate_command, flag_names

__all__ = [
    "LAUNCH_SOURCE_ENV",
    "LaunchSetup",
    "decide_launch",
    "default_accelerate_config",
    "launch_differences",
    "launch_report",
    "note_launch",
    "predicted_setup",
    "rank_setup",
    "recipe_launch_flags",
    "recipe_setup",
    "user_launch_source",
]

# Set by procrl in the ``accelerate launch`` process (the start-up hook) and inherited by every
# rank: where the launch came from ("the recipe's launch section", "command-line flags ...",
# "accelerate's default config ..."), for the note rank 0 prints and run_info.json.
LAUNCH_SOURCE_ENV = "PROCRL_LAUNCH_SOURCE"

_KIND_WORDS = {
    "NO": "one process",
    "CPU": "CPU processes",
    "MULTI_GPU": "plain data parallel (DDP)",
    "MULTI_CPU": "plain data parallel (DDP)",
    "DEEPSPEED": "DeepSpeed",
    "FSDP": "FSDP",
    "MEGATRON_LM": "Megatron-LM",
}


@dataclass(frozen=True)
class LaunchSetup:
    """One launch, as the memory plan and the comparison need it.

    Args:
        distributed_type: accelerate's name: ``NO``, ``MULTI_GPU``, ``DEEPSPEED``, ``FSDP``, ``CPU``...
        world_size: processes over all machines.
        machines: machines (nodes).
        zero_stage: the DeepSpeed ZeRO stage; None without DeepSpeed.
        mixed_precision: accelerate's ``mixed_precision`` (``no``, ``bf16``, ``fp16``).
        offload_optimizer: DeepSpeed moves the optimizer states to CPU memory.
        offload_param: DeepSpeed (stage 3) moves the weights to CPU memory.
    """

    distributed_type: str
    world_size: int
    machines: int = 1
    zero_stage: int | None = None
    mixed_precision: str = "no"
    offload_optimizer: bool = False
    offload_param: bool = False

    @property
    def kind(self) -> str:
        """The distributed type in words; plain DDP over CPU ranks reads as DDP too."""
        if self.distributed_type == "DEEPSPEED":
            return f"DeepSpeed ZeRO-{self.zero_stage if self.zero_stage is not None else '?'}"
        if self.distributed_type in ("NO", "CPU", "MULTI_CPU", "MULTI_GPU") and self.world_size > 1:
            return _KIND_WORDS["MULTI_GPU"]
        if self.distributed_type in ("NO", "CPU", "MULTI_CPU", "MULTI_GPU"):
            return _KIND_WORDS["NO"]
        return _KIND_WORDS.get(self.distributed_type, self.distributed_type)

    def describe(self) -> str:
        """``DeepSpeed ZeRO-3 over 8 processes`` (machines and precision when they say something)."""
        if self.kind == _KIND_WORDS["NO"]:
            return self.kind
        text = f"{self.kind} over {self.world_size} process{'es' if self.world_size != 1 else ''}"
        if self.machines > 1:
            text += f" on {self.machines} machines"
        return text

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _config_values(path: Path) -> dict[str, Any]:
    import yaml  # accelerate's own format, read the way accelerate reads it

    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return values if isinstance(values, dict) else {}


def recipe_setup(recipe) -> LaunchSetup:
    """The launch the recipe's ``launch:`` section asks for (its config file's distributed type,
    ZeRO stage and precision; processes from the section, else the config file, else 1)."""
    from procrl.core.config import ConfigError
    from procrl.recipe.launch import resolve_config_file
    from procrl.recipe.memory import zero_setup

    launch = recipe.launch
    zero = zero_setup(recipe)
    config: dict[str, Any] = {}
    if launch.config_file is not None:
        try:
            config = _config_values(resolve_config_file(launch.config_file, recipe.path))
        except ConfigError:
            config = {}
    world = int(launch.num_processes or config.get("num_processes") or 1)
    machines = int(launch.num_machines if launch.num_machines != 1 else config.get("num_machines") or 1)
    kind = zero.distributed_type if launch.config_file is not None else ("MULTI_GPU" if world > 1 else "NO")
    return LaunchSetup(
        distributed_type=kind,
        world_size=world,
        machines=machines,
        zero_stage=zero.zero_stage if kind == "DEEPSPEED" else None,
        mixed_precision=str(config.get("mixed_precision") or "no"),
        offload_optimizer=zero.offload_optimizer,
        offload_param=zero.offload_param,
    )


def default_accelerate_config() -> Path | None:
    """accelerate's default config file (written by ``accelerate config``; under ``$HF_HOME``)
    when it exists: accelerate reads it for every launch given no ``--config_file``."""
    # accelerate.commands.config.config_args computes the same path once, at its import
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    path = Path(os.path.expanduser(home)) / "accelerate" / "default_config.yaml"
    return path if path.is_file() else None


def predicted_setup(flags: list[str]) -> LaunchSetup | None:
    """What ``accelerate launch FLAGS SCRIPT`` will launch on this machine, by accelerate's own
    resolution (flags, then the config file or the default config, then the devices it finds).
    None when accelerate's resolution cannot be run (an accelerate without it, a flag it refuses:
    accelerate reports those itself)."""
    try:
        from accelerate.commands import launch as accelerate_launch

        args = accelerate_launch.launch_command_parser().parse_args([*flags, "procrl-recipe.yaml"])
        resolve = accelerate_launch._validate_launch_command  # private, but it IS accelerate's precedence
        logger = logging.getLogger(accelerate_launch.__name__)
        level = logger.level
        logger.setLevel(logging.ERROR)  # its "values were not passed" warning comes again when it launches
        try:
            args, _, _ = resolve(args)
        finally:
            logger.setLevel(level)
    except (Exception, SystemExit):  # noqa: BLE001 - accelerate reports its own usage errors when it runs
        return None
    if getattr(args, "use_deepspeed", False) and not args.cpu:
        kind = "DEEPSPEED"
    elif getattr(args, "use_fsdp", False) and not args.cpu:
        kind = "FSDP"
    elif getattr(args, "use_megatron_lm", False) and not args.cpu:
        kind = "MEGATRON_LM"
    elif args.multi_gpu and not args.cpu:
        kind = "MULTI_GPU"
    elif args.cpu:
        kind = "CPU"
    else:
        kind = "NO"
    processes = int(args.num_processes or 1)
    stage = getattr(args, "zero_stage", None)

    def offloaded(name: str) -> bool:
        return str(getattr(args, name, None) or "none").lower() not in ("none", "")

    return LaunchSetup(
        distributed_type=kind,
        world_size=processes if kind not in ("NO",) or processes > 1 else 1,
        machines=int(args.num_machines or 1),
        zero_stage=int(stage) if kind == "DEEPSPEED" and stage is not None else None,
        mixed_precision=str(args.mixed_precision or "no"),
        offload_optimizer=kind == "DEEPSPEED" and offloaded("offload_optimizer_device"),
        offload_param=kind == "DEEPSPEED" and offloaded("offload_param_device"),
    )


def rank_setup(env: dict[str, str] | None = None) -> LaunchSetup:
    """What the launcher gave this process, from the variables accelerate's launchers and
    torchrun set in every rank (``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``ACCELERATE_USE_DEEPSPEED``,
    ``ACCELERATE_DEEPSPEED_ZERO_STAGE``, ``ACCELERATE_USE_FSDP``, ``ACCELERATE_MIXED_PRECISION``)."""
    env = os.environ if env is None else env
    world = int(env.get("WORLD_SIZE") or 1)
    local = int(env.get("LOCAL_WORLD_SIZE") or world)
    machines = max(1, world // max(local, 1))
    if env.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true":
        stage = env.get("ACCELERATE_DEEPSPEED_ZERO_STAGE")
        return LaunchSetup(
            "DEEPSPEED",
            world,
            machines,
            int(stage) if stage not in (None, "", "None") else None,
            env.get("ACCELERATE_MIXED_PRECISION", "no"),
            env.get("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "none").lower() not in ("none", ""),
            env.get("ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "none").lower() not in ("none", ""),
        )
    if env.get("ACCELERATE_USE_FSDP", "").lower() == "true":
        kind = "FSDP"
    else:
        kind = "MULTI_GPU" if world > 1 else "NO"
    return LaunchSetup(kind, world, machines, None, env.get("ACCELERATE_MIXED_PRECISION", "no"))


def launch_differences(launched: LaunchSetup, wanted: LaunchSetup) -> list[str]:
    """Where ``launched`` differs from ``wanted`` (the recipe's), one phrase each: distributed
    type and ZeRO stage, world size, machines, mixed precision, offloading."""
    out = []
    if launched.kind != wanted.kind:
        out.append(f"{launched.kind} instead of {wanted.kind}")
    if launched.world_size != wanted.world_size:
        out.append(f"{launched.world_size} processes instead of {wanted.world_size}")
    if launched.machines != wanted.machines:
        out.append(f"{launched.machines} machine(s) instead of {wanted.machines}")
    if launched.mixed_precision != wanted.mixed_precision:
        out.append(f"mixed precision {launched.mixed_precision} instead of {wanted.mixed_precision}")
    for name, words in (("offload_optimizer", "optimizer states"), ("offload_param", "weights")):
        got, want = getattr(launched, name), getattr(wanted, name)
        if launched.distributed_type == "DEEPSPEED" and wanted.distributed_type == "DEEPSPEED" and got != want:
            where = {True: "offloaded to CPU", False: "on the GPU"}
            out.append(f"{words} {where[got]} instead of {where[want]}")
    return out


# --- the launch of `accelerate launch RECIPE`, and the one line rank 0 prints --------------------


def recipe_launch_flags(recipe, launch_args: list[str] | None = None) -> list[str]:
    """The ``accelerate launch`` flags that give the recipe's launch (``launch_args`` winning per
    flag), always with a process count, so that accelerate never counts the devices itself (on a
    node with 8 GPUs it would start 8 plain data-parallel processes)."""
    flags = accelerate_command(recipe, launch_args)[3:]
    if "--num_processes" not in flag_names(flags) and recipe.launch.config_file is None:
        flags = ["--num_processes", "1", *flags]
    return flags


def user_launch_source(launch_args: list[str]) -> str | None:
    """Where the user chose the launch of ``accelerate launch [FLAGS] RECIPE``, or None when they
    did not: a flag naming the distributed type or a config file (``--config_file``, ``--multi_gpu``,
    ``--use_deepspeed``, ``--cpu`` ...), else accelerate's default config (``accelerate config``),
    which accelerate reads for every launch without ``--config_file`` and which procrl takes as the
    user's choice for this machine. Other flags alone (``--main_process_port``, ``--num_processes``,
    the multi-node flags) choose where and how many, and the recipe's launch supplies the rest."""
    given = flag_names(launch_args)
    if given.intersection(TYPE_FLAGS):
        return "command-line flags " + shlex.join(launch_args)
    default = default_accelerate_config()
    if default is not None:
        return f"accelerate's default config {default}" + (
            f" and command-line flags {shlex.join(launch_args)}" if launch_args else ""
        )
    return None


def decide_launch(recipe, flags: list[str]) -> tuple[list[str], str]:
    """The accelerate flags of ``accelerate launch [FLAGS] RECIPE`` and where the launch comes
    from: the user's choice as given (:func:`user_launch_source`), else the recipe's launch
    section with the user's other flags winning per flag (:func:`recipe_launch_flags`)."""
    source = user_launch_source(flags)
    if source is not None:
        return list(flags), source
    source = "the recipe's launch section" + (f" and command-line flags {shlex.join(flags)}" if flags else "")
    return recipe_launch_flags(recipe, flags), source


def launch_report(recipe) -> dict:
    """This rank's launch against the recipe's: ``{"source", "launched", "recipe", "differences"}``
    (recorded in run_info.json; rank 0 prints the differences in one line: :func:`note_launch`)."""
    launched, wanted = rank_setup(), recipe_setup(recipe)
    return {
        "source": os.environ.get(LAUNCH_SOURCE_ENV) or "a launcher procrl did not start (torchrun or another)",
        "launched": launched.as_dict(),
        "recipe": wanted.as_dict(),
        "differences": launch_differences(launched, wanted),
        "launched_text": launched.describe(),
        "recipe_text": wanted.describe(),
    }


def note_launch(recipe) -> dict:
    """On the global main process, one line when the launch differs from the recipe's launch
    section: what was launched, from where, what differs, and the command that gives the recipe's
    launch. Returns :func:`launch_report`."""
    report = launch_report(recipe)
    if report["differences"] and os.environ.get("RANK", "0") == "0":
        wanted = shlex.join(["accelerate", "launch", *recipe_launch_flags(recipe), recipe.path or "RECIPE"])
        print(
            f"procrl: note: launched as {report['launched_text']} (from {report['source']}); the recipe's launch "
            f"section asks for {report['recipe_text']} ({'; '.join(report['differences'])}). For the recipe's "
            f"launch: {wanted}",
            file=sys.stderr,
            flush=True,
        )
    return report
