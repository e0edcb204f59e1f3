"""The recipe's ``launch:`` section as ``accelerate launch`` flags, and its ``launch.config_file``
located: pure functions of the recipe and the command line (no accelerate, no torch), here with the
recipe so that ``procrl check`` (the plan, :mod:`procrl.recipe.plan`) and the launcher
(:mod:`procrl.launch.accelerate`) read the launch section the same way."""

from __future__ import annotations

import sys
from pathlib import Path

from procrl.core.config import ConfigError

__all__ = [
    "TYPE_FLAGS",
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
