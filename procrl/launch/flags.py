"""The command-line helpers of the launch layer: ``accelerate launch`` flags (read, checked) and
the recipe's ``launch.config_file`` located. Pure functions, imported by :mod:`procrl.launch.prelaunch`,
:mod:`procrl.launch.accelerate`, :mod:`procrl.launch.memory` and :mod:`procrl.launch.check` (here so
that none of them imports another just for these)."""

from __future__ import annotations

import sys
from pathlib import Path

from procrl.core.config import ConfigError

__all__ = ["TYPE_FLAGS", "accelerate_command", "flag_value", "resolve_config_file", "split_launch_args"]

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
    given = _flag_names(user)
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


def split_launch_args(extra: list[str]) -> list[str]:
    """Check that ``extra`` (what ``procrl train`` did not recognise) are ``accelerate launch`` flags."""
    if not extra:
        return []
    from accelerate.commands.launch import launch_command_parser

    parsed, unknown = launch_command_parser().parse_known_args([*extra, "procrl-recipe.yaml"])
    if unknown or parsed.training_script != "procrl-recipe.yaml" or parsed.training_script_args:
        bad = unknown or parsed.training_script_args or [parsed.training_script]
        raise ConfigError(f"{' '.join(bad)}: neither a procrl train option nor an accelerate launch flag")
    for name in ("num_processes", "num_machines"):  # as the recipe's launch section refuses them
        value = getattr(parsed, name, None)
        if value is not None and value < 1:
            raise ConfigError(f"--{name}: must be >= 1, got {value}")
    return list(extra)


def _flag_names(args: list[str]) -> set[str]:
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
