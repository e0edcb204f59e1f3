"""Starting a recipe the way it asks: ``procrl train`` (and ``python RECIPE.yaml``) honour the
recipe's ``launch:`` section by running ``accelerate launch`` as a subprocess, as ``trl <cmd>
--accelerate_config`` does; inside an already launched process they train in place.

Precedence: accelerate flags given on the command line win over the recipe's ``launch:``
section (``procrl train RECIPE --num_processes 4`` passes ``--num_processes 4`` to accelerate
instead of the recipe's value; ``accelerate launch [flags] RECIPE`` never re-launches). A bare
``accelerate launch RECIPE`` (no flags at all, so none to override) launches as the recipe says.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from procrl.core.config import ConfigError
from procrl.core.interrupts import Terminated
from procrl.core.redaction import redact_argv
from procrl.launch.entry import run_command
from procrl.launch.launched import PLAN_ENV, plan_launch
from procrl.launch.prelaunch import check_before_launch
from procrl.launch.reliability import finished_note
from procrl.launch.run import parser, train_reporting_failure
from procrl.recipe import is_recipe_file, load_recipe
from procrl.recipe.launch import accelerate_command, needs_launcher
from procrl.trainers.checkpoints import find_resume_checkpoint
from procrl.trainers.output_dir import RunLock, check_output_dir

# Imported where used: accelerate's launch parser (it imports torch; only the start-up hook, inside
# `accelerate launch`, needs it).

__all__ = [
    "PLAN_ENV",
    "check_accelerate_launch",
    "inside_launcher",
    "parent_accelerate_flags",
    "plain_accelerate_launch",
    "resume_checkpoint",
    "run_recipe_script",
    "run_train",
    "split_launch_args",
    "train_command",
]

# Variables that only a launcher sets: procrl's plan (PLAN_ENV, procrl/launch/launched.py);
# accelerate's launchers (simple, multi-GPU, DeepSpeed) set ACCELERATE_MIXED_PRECISION /
# ACCELERATE_DYNAMO_BACKEND; torchrun and the DeepSpeed launcher set LOCAL_RANK; torchrun sets
# TORCHELASTIC_RUN_ID.
_LAUNCHER_ENV = (
    PLAN_ENV,
    "LOCAL_RANK",
    "TORCHELASTIC_RUN_ID",
    "ACCELERATE_MIXED_PRECISION",
    "ACCELERATE_DYNAMO_BACKEND",
)


def inside_launcher(env: dict[str, str] | None = None) -> bool:
    """Whether this process was started by accelerate / torchrun / procrl (then: train in place)."""
    env = os.environ if env is None else env
    return any(key in env for key in _LAUNCHER_ENV)


def train_command(
    recipe,
    recipe_path: str,
    overrides: list[str],
    output_dir: str | None,
    resume: bool,
    launch_args: list[str] | None = None,
    overwrite: bool = False,
) -> list[str]:
    """The full command ``procrl train`` runs: accelerate launching ``-m procrl.run`` on the recipe."""
    script = ["-m", "procrl.run", recipe_path]
    for override in overrides:
        script += ["--set", override]
    if output_dir is not None:
        script += ["--output-dir", output_dir]
    if resume:
        script.append("--resume")
    if overwrite:
        script.append("--overwrite")
    return accelerate_command(recipe, launch_args) + script


def launch_training(
    recipe,
    recipe_path: str,
    overrides: list[str],
    output_dir: str | None,
    resume: bool,
    launch_args: list[str] | None = None,
    overwrite: bool = False,
) -> int:
    """Run accelerate as a subprocess and return its exit status."""
    command = train_command(recipe, recipe_path, overrides, output_dir, resume, launch_args, overwrite)
    print("procrl: launching " + shlex.join(redact_argv(command)), file=sys.stderr, flush=True)

    source = "the recipe's launch section"
    if launch_args:
        source += f" and command-line flags {shlex.join(launch_args)}"
    # the plan decided here, once, in the process the user started; the ranks read it (PLAN_ENV)
    plan = plan_launch(recipe, command[3 : command.index("-m", 3)], source)
    env = dict(os.environ, **{PLAN_ENV: plan.to_env()})
    process = subprocess.Popen(command, env=env)
    try:
        return process.wait()
    except KeyboardInterrupt as error:
        # Ctrl-C reached the launched processes too (one process group); SIGTERM is passed on. Their
        # main rank says what is kept; a second interruption kills them.
        if isinstance(error, Terminated):
            process.terminate()
        try:
            code = process.wait()
        except KeyboardInterrupt:
            process.kill()
            code = process.wait()
        if code < 0:  # killed by a signal: as a shell reports it
            return 128 - code
        return code or (143 if isinstance(error, Terminated) else 130)


def parent_accelerate_flags(script: str, cmdline_path: str | None = None) -> list[str] | None:
    """The flags of the ``accelerate launch`` process that started this one as ``script``, read
    from ``/proc/<ppid>/cmdline`` (Linux); None when the parent is not recognisably that."""
    path = Path(cmdline_path or f"/proc/{os.getppid()}/cmdline")
    try:
        argv = [part.decode(errors="replace") for part in path.read_bytes().split(b"\0") if part]
    except OSError:
        return None
    for index, arg in enumerate(argv):
        if arg == "accelerate.commands.launch" or (
            arg == "launch" and index and Path(argv[index - 1]).name.startswith("accelerate")
        ):
            rest = argv[index + 1 :]
            return rest[: rest.index(script)] if script in rest else None
    return None


def plain_accelerate_launch(script: str | None) -> bool:
    """Whether this process is the single process of ``accelerate launch SCRIPT`` given without
    any flag (no torchrun, no procrl launch): then the recipe's launch section applies."""
    if script is None or PLAN_ENV in os.environ or "LOCAL_RANK" in os.environ or "WORLD_SIZE" in os.environ:
        return False
    if "ACCELERATE_MIXED_PRECISION" not in os.environ:
        return False
    return parent_accelerate_flags(script) == []


def run_train(
    recipe_path: str,
    overrides: list[str],
    output_dir: str | None,
    resume: bool,
    launch_args: list[str] | None = None,
    script: str | None = None,
    overwrite: bool = False,
) -> int:
    """``procrl train`` / ``python RECIPE.yaml``: launch through accelerate when the recipe asks for
    it (or accelerate flags were given) and we are not inside a launcher; else train here.

    ``script``: the recipe path as the interpreter got it (the start-up hook); a bare
    ``accelerate launch RECIPE`` (no flags) then launches as the recipe says, since no flag of
    the user's would be overridden."""

    recipe = load_recipe(recipe_path, overrides, output_dir)
    # fail before anything starts (the launched run checks again, and its main process locks)
    check_output_dir(recipe.output_dir, resume=resume, overwrite=overwrite)
    RunLock(recipe.output_dir).check()
    if resume:
        note = finished_note(recipe)
        if note:  # nothing to launch
            print(f"procrl: {note}", file=sys.stderr, flush=True)
            return 0
        resume_checkpoint(recipe.output_dir)
    launching = (needs_launcher(recipe) and plain_accelerate_launch(script)) or (
        not inside_launcher() and (needs_launcher(recipe) or bool(launch_args))
    )
    if (launching or not inside_launcher()) and PLAN_ENV not in os.environ:
        # Checked here, in the process the user started, before any rank: the machine's checks in
        # procrl/launch/prelaunch.py, the recipe's own in procrl/recipe/findable.py. A rank that has a
        # plan was started by a procrl launcher whose checks passed: it does not check again.
        check_before_launch(recipe, launch_args, launching=launching)
        # the recipe's audit.before_training: the reward mix searched for exploits before any step,
        # here, in the process the user started (procrl train, python RECIPE.yaml, accelerate launch)
        from procrl.evaluation.audit.run import audit_before_training

        if status := audit_before_training(recipe_path, overrides, recipe.audit):
            return status
    if launching:
        return launch_training(recipe, recipe_path, overrides, output_dir, resume, launch_args, overwrite)
    if launch_args:
        raise ConfigError(
            f"{' '.join(launch_args)}: accelerate flags have no effect inside an already launched process"
        )

    train_reporting_failure(recipe, resume=resume, overwrite=overwrite)
    return 0


def check_accelerate_launch(argv: list[str]) -> tuple[int | None, list[str] | None]:
    """In the ``accelerate launch`` process itself, when its training script is a procrl recipe
    (called by the start-up hook before accelerate parses its arguments): decide the launch and run
    the pre-launch checks before accelerate starts any process.

    The launch: when the user chose none (no flag naming a distributed type or config file, no
    default accelerate config: :func:`user_launch_source`), the recipe's ``launch:`` section is
    turned into accelerate flags and put in front of the user's (:func:`procrl.launch.launched.recipe_launch_flags`), so
    that accelerate launches as the recipe says on any machine; else accelerate launches as the
    user chose and rank 0 says where that differs from the recipe (:func:`procrl.launch.launched.note_launch`).

    Returns ``(exit status, None)`` after printing the problems, or ``(None, argv)`` with the
    arguments accelerate is to parse (``argv`` itself when nothing is added). Sets
    PROCRL_LAUNCH_PLAN (the plan: the ranks read it and do not check again)."""
    from accelerate.commands.launch import launch_command_parser

    try:
        parsed, _ = launch_command_parser().parse_known_args(argv)
    except SystemExit:  # accelerate reports its own usage errors
        return None, argv
    if parsed.module and parsed.training_script == "procrl.run" and parsed.training_script_args:
        recipe_path, script_args = parsed.training_script_args[0], parsed.training_script_args[1:]
    elif not parsed.module and not parsed.no_python:
        recipe_path, script_args = parsed.training_script, parsed.training_script_args
    else:
        return None, argv
    if not is_recipe_file(recipe_path):
        return None, argv
    script_at = len(argv) - len(parsed.training_script_args) - 1
    flags = [f for f in argv[:script_at] if f not in ("-m", "--module")]
    args, _ = parser().parse_known_args([recipe_path, *script_args])
    try:
        recipe = load_recipe(args.recipe, args.overrides, args.output_dir)
        plan = plan_launch(recipe, flags)
        launch_flags = list(plan.flags)
    except ConfigError as error:
        print(f"procrl: error: {error}", file=sys.stderr, flush=True)
        return 2, None
    except Exception as error:  # noqa: BLE001 - fail-closed: a launch procrl cannot decide is not started
        # (letting accelerate read its own arguments would count the GPUs and start N plain ranks)
        print(
            f"procrl: error: cannot decide the launch of {recipe_path} ({type(error).__name__}: "
            f"{str(error).strip().splitlines()[0] if str(error).strip() else 'no message'}); nothing was started",
            file=sys.stderr,
            flush=True,
        )
        return 2, None
    try:
        # the user's own flags, as `procrl train` checks them: a launch the recipe asks for that this
        # machine cannot run (DeepSpeed without a GPU) is the recipe's problem, named by its key.
        # A check that raises is one warning line inside (prelaunch.guarded): the launch stays decided.
        check_before_launch(recipe, flags, launching=True, launch_flags=launch_flags)
    except ConfigError as error:
        print(f"procrl: error: {error}", file=sys.stderr, flush=True)
        return 2, None
    os.environ[PLAN_ENV] = plan.to_env()  # decided and checked: the ranks inherit it, and read it
    if launch_flags == flags:
        return None, argv
    module = ["-m"] if parsed.module else []
    print(
        "procrl: launching as the recipe's launch section says: "
        + shlex.join(["accelerate", "launch", *launch_flags, *module, recipe_path]),
        file=sys.stderr,
        flush=True,
    )
    # The argv rewrite: the plan's flags in front of the script and its arguments, the user's own flags
    # among them (they win flag by flag). accelerate has not parsed anything yet (the hook runs at
    # interpreter start), so it launches exactly this, by its own rules, and procrl launches nothing.
    return None, [*launch_flags, *module, *argv[script_at:]]


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


# --- resume -------------------------------------------------------------------------------------


def resume_checkpoint(output_dir: str) -> str:
    """The newest complete ``checkpoint-N`` directory of ``output_dir`` (a clear error when there
    is none; :func:`procrl.trainers.checkpoints.find_resume_checkpoint` says what it skipped)."""

    return find_resume_checkpoint(output_dir).checkpoint


# --- the start-up hook's entry point -------------------------------------------------------------


def run_recipe_script(script: str, argv: list[str]) -> int:
    """``python RECIPE.yaml ARGS`` (also as started by accelerate / torchrun): ``procrl train``, its
    arguments as ``python -m procrl.run`` takes them, any other flag passed on to accelerate launch.
    ``script``: the recipe path as the interpreter got it; returns the exit status."""

    def build_parser():
        recipe_parser = parser(prog=f"python {script}")
        recipe_parser.set_defaults(handler=lambda args: _train_recipe_script(script, args))
        return recipe_parser

    return run_command(
        build_parser,
        [script, *argv],
        passes_unknown_flags=lambda args: True,
        show_interrupt=os.environ.get("RANK", "0") == "0",  # every rank gets Ctrl-C; the first prints the line
    )


def _train_recipe_script(script: str, args) -> int:
    return run_train(
        args.recipe,
        args.overrides,
        args.output_dir,
        args.resume,
        split_launch_args(args.launch_args),
        script=script,
        overwrite=args.overwrite,
    )
