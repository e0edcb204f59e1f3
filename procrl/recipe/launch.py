"""The recipe's ``launch:`` section as ``accelerate launch`` flags, and its ``launch.config_file``
located: pure functions of the recipe and the command line (no accelerate, no torch), here with the
recipe so that ``procrl check`` (the plan, :mod:`procrl.recipe.plan`) and the launcher
(:mod:`procrl.launch.accelerate`) read the launch section the same way."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError

__all__ = [
    "TYPE_FLAGS",
    "LaunchLayout",
    "LaunchSetup",
    "launch_layout",
    "ZeroSetup",
    "zero_setup",
    "launch_differences",
    "recipe_setup",
    "accelerate_command",
    "flag_names",
    "flag_value",
    "launch_command_text",
    "needs_launcher",
    "resolve_config_file",
]

# accelerate flags that choose the distributed type (or a config file that does): with any of them the
# launch is the user's, and the recipe adds neither its config file nor --multi_gpu
TYPE_FLAGS = ("--config_file", "--cpu", "--multi_gpu", "--use_deepspeed", "--use_fsdp", "--tpu", "--use_megatron_lm")


def resolve_config_file(config_file: str, recipe_path: str | None) -> Path:
    """The accelerate config file: absolute, else relative to the cwd, the recipe's directory or
    one of its parents (recipes name ``launch/accelerate/zero3.yaml`` relative to the repo root)."""
    path = Path(config_file).expanduser()
    if path.is_absolute():
        candidates = [path]
    else:
        candidates = [Path.cwd() / path]
        if recipe_path:
            here = Path(recipe_path).resolve().parent
            candidates += [directory / path for directory in (here, *here.parents)]
    for candidate in candidates:
        if candidate.is_file():
            _check_accelerate_config(candidate, config_file)
            return candidate
    raise ConfigError(
        f"launch.config_file: {config_file} not found (looked relative to the working directory"
        " and to the recipe's directory and its parents)"
    )


def _check_accelerate_config(path: Path, given: str) -> None:
    """An accelerate config file is a YAML (or JSON) mapping of settings; anything else (a text
    file, a list) is refused here rather than read as one further on."""
    import yaml  # accelerate's own format, read the way accelerate reads it

    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        reason = getattr(error, "strerror", None) or type(error).__name__
        raise ConfigError(f"launch.config_file: cannot read {given} as an accelerate config file ({reason})") from None
    if config is not None and not isinstance(config, dict):
        raise ConfigError(
            f"launch.config_file: {given} is not an accelerate config file (a YAML mapping of accelerate "
            f"settings, e.g. launch/accelerate/zero2.yaml); it holds a {type(config).__name__}"
        )


def accelerate_command(recipe, launch_args: list[str] | None = None, python: str | None = None) -> list[str]:
    """``python -m accelerate.commands.launch`` flags from the recipe's ``launch:`` section, with
    ``launch_args`` (accelerate flags from the command line) replacing any flag they repeat."""
    launch = recipe.launch
    user = list(launch_args or [])
    given = flag_names(user)
    flags: list[str] = []
    # a distributed type chosen on the command line (--multi_gpu, --use_deepspeed, --cpu ...) replaces the
    # recipe's config file as a whole: a DeepSpeed config under --multi_gpu would launch neither as asked
    if launch.config_file is not None and not given.intersection(TYPE_FLAGS):
        flags += ["--config_file", str(resolve_config_file(launch.config_file, recipe.path))]
    if launch.num_processes is not None and "--num_processes" not in given:
        flags += ["--num_processes", str(launch.num_processes)]
    if launch.num_machines != 1 and "--num_machines" not in given:
        flags += ["--num_machines", str(launch.num_machines)]
    if launch.main_process_port is not None and "--main_process_port" not in given:
        flags += ["--main_process_port", str(launch.main_process_port)]
    processes = int(flag_value(user, "--num_processes") or launch.num_processes or 1)
    machines = int(flag_value(user, "--num_machines") or launch.num_machines)
    if not given.intersection(TYPE_FLAGS) and launch.config_file is None and (processes > 1 or machines > 1):
        flags.append("--multi_gpu")  # N processes without a config file: plain DDP (gloo on CPU)
    return [python or sys.executable, "-m", "accelerate.commands.launch", *flags, *user]


def flag_names(args: list[str]) -> set[str]:
    return {arg.split("=", 1)[0] for arg in args if arg.startswith("--")}


def flag_value(args: list[str], name: str) -> str | None:
    """The last value given to ``name`` (``--name V`` or ``--name=V``) in ``args``."""
    value = None
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            value = args[index + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def needs_launcher(recipe) -> bool:
    """Whether the recipe's ``launch:`` section asks for more than one plain process."""
    launch = recipe.launch
    return launch.config_file is not None or (launch.num_processes or 1) > 1 or launch.num_machines > 1


def launch_command_text(recipe) -> str:
    """What ``procrl train`` runs for this recipe (or that it trains in place)."""
    import shlex

    if not needs_launcher(recipe):
        return "none: trains in the calling process (one process)"
    try:
        flags = accelerate_command(recipe)[3:]
    except ConfigError as error:
        return f"unresolved: {error}"
    return shlex.join(["accelerate", "launch", *flags, "-m", "procrl.run", recipe.path or "RECIPE"])


# --- one launch described, to compare the recipe's with what a rank was given ----------------------

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


@dataclass
class ZeroSetup:
    """What the accelerate config says about sharding."""

    distributed_type: str  # NO | MULTI_GPU | DEEPSPEED | FSDP | ...
    zero_stage: int | None  # DeepSpeed ZeRO stage; None without DeepSpeed
    offload_optimizer: bool
    offload_param: bool
    config_processes: int | None
    source: str


def zero_setup(recipe) -> ZeroSetup:
    """Read the recipe's accelerate config file (launch.config_file), if any."""
    import yaml

    launch = recipe.launch
    if launch.config_file is None:
        kind = "MULTI_GPU" if (launch.num_processes or 1) > 1 or launch.num_machines > 1 else "NO"
        return ZeroSetup(kind, None, False, False, None, "no accelerate config file")
    try:
        path = resolve_config_file(launch.config_file, recipe.path)
        config = yaml.safe_load(path.read_text()) or {}
    except (ConfigError, OSError, yaml.YAMLError) as error:
        return ZeroSetup("UNKNOWN", None, False, False, None, f"{launch.config_file}: {error}")
    kind = str(config.get("distributed_type", "NO"))
    processes = config.get("num_processes")
    if kind != "DEEPSPEED":
        return ZeroSetup(kind, None, False, False, processes, launch.config_file)
    deepspeed = config.get("deepspeed_config") or {}
    if not isinstance(deepspeed, dict):
        return ZeroSetup(
            kind, None, False, False, processes, f"{launch.config_file}: deepspeed_config is not a mapping"
        )
    stage = deepspeed.get("zero_stage")
    offload_optimizer = str(deepspeed.get("offload_optimizer_device", "none")).lower() not in ("none", "")
    offload_param = str(deepspeed.get("offload_param_device", "none")).lower() not in ("none", "")
    json_file = deepspeed.get("deepspeed_config_file")
    if json_file:
        try:
            zero = json.loads(resolve_config_file(json_file, str(path)).read_text()).get("zero_optimization", {})
            stage = zero.get("stage", stage)
            offload_optimizer = str((zero.get("offload_optimizer") or {}).get("device", "none")) != "none"
            offload_param = str((zero.get("offload_param") or {}).get("device", "none")) != "none"
        except (ConfigError, OSError, ValueError) as error:
            return ZeroSetup(kind, None, False, False, processes, f"{json_file}: {error}")
    return ZeroSetup(
        kind, int(stage) if stage is not None else 0, offload_optimizer, offload_param, processes, launch.config_file
    )


_TYPE_FLAG_KINDS = {
    "--cpu": "CPU",
    "--multi_gpu": "MULTI_GPU",
    "--use_deepspeed": "DEEPSPEED",
    "--use_fsdp": "FSDP",
    "--use_megatron_lm": "MEGATRON_LM",
}


@dataclass
class LaunchLayout:
    """The launch as the pre-launch checks need it, read without accelerate (the hook runs before
    accelerate has parsed anything): where the process count and the distributed type come from
    names the key or flag a problem line tells the user to change."""

    processes: int
    machines: int
    distributed_type: str  # NO | CPU | MULTI_GPU | DEEPSPEED | FSDP | ...
    processes_key: str  # where the process count came from (recipe key or flag)
    type_source: str  # "command line", "recipe" (launch.config_file) or "default"
    config_file: str | None

    @property
    def per_machine(self) -> int:
        return math.ceil(self.processes / max(self.machines, 1))


def launch_layout(recipe, launch_args: list[str] | None = None) -> LaunchLayout:
    """How many processes on how many machines, and which distributed type, the launch will use:
    command-line accelerate flags first, then the recipe's launch section, then its config file."""
    args = list(launch_args or [])
    given = {arg.split("=", 1)[0] for arg in args if arg.startswith("--")}
    config_name, type_source = flag_value(args, "--config_file"), "command line"
    if config_name is None and recipe.launch.config_file is not None:
        config_name, type_source = recipe.launch.config_file, "recipe"
    config: dict[str, Any] = {}
    if config_name is not None:
        try:
            config = _config_values(resolve_config_file(config_name, recipe.path))
        except ConfigError:
            config = {}
    if flag_value(args, "--num_processes") is not None:
        processes, processes_key = int(flag_value(args, "--num_processes")), "--num_processes"
    elif recipe.launch.num_processes is not None:
        processes, processes_key = recipe.launch.num_processes, "launch.num_processes"
    elif config.get("num_processes"):
        processes, processes_key = int(config["num_processes"]), "launch.config_file"
    else:
        processes, processes_key = 1, "launch.num_processes"
    machines = int(
        flag_value(args, "--num_machines")
        or (recipe.launch.num_machines if recipe.launch.num_machines != 1 else config.get("num_machines") or 1)
    )
    flagged = [kind for flag, kind in _TYPE_FLAG_KINDS.items() if flag in given]
    if flagged:
        kind, type_source = flagged[0], "command line"
    elif config:
        kind = "CPU" if config.get("use_cpu") else str(config.get("distributed_type", "NO"))
    else:
        kind, type_source = ("MULTI_GPU" if processes > 1 or machines > 1 else "NO"), "default"
    return LaunchLayout(processes, machines, kind, processes_key, type_source, config_name)
