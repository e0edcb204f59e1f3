"""The launch plan, decided once, and what a launch gives a run against what its recipe asks for.

``accelerate launch`` decides a run's processes and distributed type from, in order: its own
flags, ``--config_file``, accelerate's default config (``accelerate config``), and, with none of
those, the devices it finds (N GPUs: N plain data-parallel processes). A recipe's ``launch:``
section is a fourth source that accelerate does not know. :func:`decide_launch` chooses between
them, :func:`plan_launch` freezes the choice as a :class:`LaunchPlan` that the ranks read
(:data:`PLAN_ENV`), and each source is described as one :class:`procrl.recipe.launch.LaunchSetup`
so that they can be compared:

* :func:`procrl.recipe.launch.recipe_setup`: what the recipe's ``launch:`` section (and its config file) asks for;
* :func:`predicted_setup`: what accelerate will launch for a list of flags, computed by
  accelerate's own resolution (``_validate_launch_command``) in the ``accelerate launch`` process,
  before any rank starts, so that nothing here re-implements accelerate's precedence;
* :func:`rank_setup`: what the launcher gave this process (the variables accelerate and torchrun
  set in every rank).

:func:`procrl.recipe.launch.launch_differences` lists where two setups differ, in words, for the one line rank 0
prints and for ``run_info.json``.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from procrl.recipe.launch import (
    TYPE_FLAGS,
    LaunchSetup,
    accelerate_command,
    flag_names,
    launch_differences,
    recipe_setup,
)

__all__ = [
    "PLAN_ENV",
    "LaunchPlan",
    "decide_launch",
    "default_accelerate_config",
    "launch_report",
    "note_launch",
    "predicted_setup",
    "rank_setup",
    "recipe_launch_flags",
    "user_launch_source",
]

# The one variable procrl hands to the ranks it launches: the launch plan (JSON, :class:`LaunchPlan`),
# decided once in the process the user started (`procrl train`, or the `accelerate launch` process
# through the start-up hook) and inherited by every rank through accelerate and torchrun. Its
# presence says "a procrl launcher decided this launch and its pre-launch checks passed": a rank
# neither checks again nor launches again, and compares what it was given with the plan's recipe
# launch instead of deriving it anew.
PLAN_ENV = "PROCRL_LAUNCH_PLAN"


@dataclass(frozen=True)
class LaunchPlan:
    """The launch, decided once: where it came from (``source``), the accelerate flags it gets
    (``flags``), the launch the recipe asks for (``recipe``) and what accelerate makes of the flags
    (``launched``, accelerate's own resolution; None where it cannot be run)."""

    source: str
    flags: tuple[str, ...]
    recipe: LaunchSetup
    launched: LaunchSetup | None = None

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> LaunchPlan | None:
        """The plan handed to this process, or None (not launched by procrl, or a value that is not
        one: a launch procrl did not decide)."""
        text = (os.environ if env is None else env).get(PLAN_ENV)
        try:
            values = json.loads(text) if text else None
            return cls(
                str(values["source"]),
                tuple(values["flags"]),
                LaunchSetup(**values["recipe"]),
                LaunchSetup(**values["launched"]) if values.get("launched") else None,
            )
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
            return None


def plan_launch(recipe, flags: list[str], source: str | None = None) -> LaunchPlan:
    """The plan of a launch with ``flags`` (the user's; :func:`decide_launch` adds the recipe's),
    or exactly ``flags`` from ``source`` when the caller decided them (``procrl train``)."""
    if source is None:
        flags, source = decide_launch(recipe, flags)
    return LaunchPlan(source, tuple(flags), recipe_setup(recipe), predicted_setup(list(flags)))


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
    # accelerate's own order: --cpu wins over every distributed type, then DeepSpeed, FSDP, Megatron, DDP
    types = (("use_deepspeed", "DEEPSPEED"), ("use_fsdp", "FSDP"), ("use_megatron_lm", "MEGATRON_LM"))
    types += (("multi_gpu", "MULTI_GPU"),)
    kind = "CPU" if args.cpu else next((kind for name, kind in types if getattr(args, name, False)), "NO")
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
    plan = LaunchPlan.from_env()
    launched, wanted = rank_setup(), plan.recipe if plan is not None else recipe_setup(recipe)
    return {
        "source": plan.source if plan is not None else "a launcher procrl did not start (torchrun or another)",
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
