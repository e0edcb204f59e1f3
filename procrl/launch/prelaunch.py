"""Pre-launch checks of the machine: what can be known about "can this machine run this recipe's
launch" before any rank starts. Run by ``procrl train`` and, for ``accelerate launch RECIPE.yaml``,
by the start-up hook inside the ``accelerate`` process itself (procrl_recipe_hook.py), so that a
recipe the machine cannot run ends in a few one-line errors (exit status 2) instead of N ranks'
tracebacks: vLLM installed, in TRL's range, and a GPU for colocate (unless a CPU build); no more
processes per machine than GPUs, and no GPU distributed type from the recipe's config file on a
machine without any; the memory plan of the launch against this GPU; warnings for node-local
storage and idle GPUs of a multi-node launch. The recipe's own checks (models, data, W&B
credentials) are :mod:`procrl.recipe.findable`; each check runs :func:`guarded`, so that one that
raises never changes the launch. A rank that fails later prints one ``procrl: error:`` line before
its traceback (:func:`report_rank_failure`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from procrl.core.config import ConfigError
from procrl.recipe.findable import Problem, resolvable_problems, wandb_problems
from procrl.recipe.launch import LaunchLayout, launch_layout

__all__ = [
    "LaunchLayout",
    "PrelaunchError",
    "Problem",
    "check_before_launch",
    "gpu_memory_bytes",
    "memory_problems",
    "shared_storage_warning",
    "wandb_problems",
    "launch_layout",
    "prelaunch_problems",
    "report_rank_failure",
]

GPU_TYPES = ("MULTI_GPU", "DEEPSPEED", "FSDP", "MEGATRON_LM")


class PrelaunchError(ConfigError):
    """One or more problems; printed as one ``procrl: error:`` line each (and a count when
    there are several), like any ConfigError."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        lines = [str(p) for p in self.problems]
        if len(lines) > 1:
            lines.append(f"{len(lines)} problems above; nothing was started")
        super().__init__("\nprocrl: error: ".join(lines))


def gpu_memory_bytes() -> tuple[float, str] | None:
    """This machine's GPU memory (the first visible GPU) and its name; None without a GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    properties = torch.cuda.get_device_properties(0)
    return float(properties.total_memory), str(properties.name)


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def hardware_problems(recipe, layout: LaunchLayout, gpus: int) -> list[Problem]:
    problems = []
    if layout.distributed_type == "CPU":
        return problems
    if gpus > 0 and layout.per_machine > gpus:
        fix = (
            f"--num_processes {gpus * layout.machines}"
            if layout.processes_key == "--num_processes"
            else (f"launch.num_processes: {gpus * layout.machines}")
        )
        problems.append(
            Problem(
                layout.processes_key,
                (
                    f"{layout.per_machine} processes per machine, but this machine has {gpus} GPU(s)"
                    " (one process per GPU); "
                    f"set {fix}"
                ),
            )
        )
    elif gpus == 0 and layout.type_source == "recipe" and layout.distributed_type in GPU_TYPES:
        problems.append(
            Problem(
                "launch.config_file",
                (
                    f"{layout.config_file} runs {layout.distributed_type} over {layout.processes} process(es),"
                    " which needs "
                    f"{layout.per_machine} GPU(s) per machine; this machine has none. Run it where there are GPUs "
                    f"(`procrl check RECIPE` prints the plan), or ask for CPU ranks on the command line "
                    f"(--multi_gpu --num_processes 2)"
                ),
            )
        )
    return problems


def vllm_problems(recipe, gpus: int | None) -> list[Problem]:
    args = recipe.trainer_args
    if not args.get("use_vllm"):
        return []
    from procrl.models.generation import vllm_available  # the check TRL and procrl.launch.run make

    if not vllm_available():
        return [
            Problem(
                "trainer.use_vllm",
                "true, but vLLM is not installed here: pip install 'procrl[vllm]' on a CUDA "
                "machine, or set trainer.use_vllm=false to generate with transformers",
            )
        ]
    from procrl.launch.versions import vllm_version_problem  # TRL only warns; its weight sync needs its range

    if (version_problem := vllm_version_problem()) is not None:
        return [Problem("trainer.use_vllm", version_problem)]
    if args.get("vllm_mode", "colocate") == "colocate" and gpus == 0 and vllm_device_type() != "cpu":
        return [
            Problem(
                "trainer.use_vllm",
                "vLLM colocate runs an engine on each process's GPU; this machine has none "
                "(set trainer.use_vllm=false, or vllm_mode: server with a vLLM server)",
            )
        ]
    return []


def vllm_device_type() -> str | None:
    """The device the installed vLLM build runs on (``vllm.platforms.current_platform``:
    ``cuda``, ``rocm``, ``cpu`` ...); None when it cannot be told. A CPU build of vLLM (and the
    CPU engine double of tests/fakes) colocates without a GPU."""
    try:
        from vllm.platforms import current_platform

        return str(current_platform.device_type)
    except Exception:  # an old or broken build: keep the GPU requirement
        return None


# --- all together --------------------------------------------------------------------------------


def prelaunch_problems(
    recipe, launch_args: list[str] | None = None, *, launching: bool = True, gpus: int | None = None
) -> list[Problem]:
    """Every problem found, hardware first. ``launching``: ranks are about to be started by
    accelerate (else the run trains in this one process); ``gpus``: the GPU count (None: ask torch
    when it matters)."""
    layout = launch_layout(recipe, launch_args) if launching else None
    needs_gpus = (layout is not None and (layout.processes > 1 or layout.machines > 1)) or bool(
        recipe.trainer_args.get("use_vllm")
    )
    if gpus is None and needs_gpus:
        counted = guarded("GPU count", lambda: [gpu_count()])
        gpus = counted[0] if counted else None
    problems = []
    if layout is not None and gpus is not None:
        problems += guarded("GPUs against the launch", hardware_problems, recipe, layout, gpus)
    problems += guarded("vLLM", vllm_problems, recipe, gpus)
    problems += guarded("models and data", resolvable_problems, recipe)
    return problems


# file systems that a multi-node run's ranks see as one (checkpoints of all nodes meet there)
SHARED_FILE_SYSTEMS = frozenset(
    "nfs nfs4 lustre gpfs beegfs cephfs ceph fuse.glusterfs glusterfs wekafs fuse.juicefs virtiofs 9p cifs smb3 "
    "fuse.s3fs fuse.gcsfuse panfs fuse.weka".split()
)


def file_system_of(path: str, mounts: str = "/proc/mounts") -> str | None:
    """The type of the file system holding ``path`` (its longest mount point in ``mounts``)."""
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return None
    target = Path(path).expanduser().resolve()
    best, kind = -1, None
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        if (target == Path(point) or Path(point) in target.parents) and len(point) > best:
            best, kind = len(point), parts[2]
    return kind


def shared_storage_warning(recipe, machines: int, mounts: str = "/proc/mounts") -> str | None:
    """A multi-node run whose output dir is on a node-local file system: each node's rank 0 would
    write its own checkpoints, and resuming on other nodes would not find them."""
    if machines <= 1:
        return None
    kind = file_system_of(recipe.output_dir, mounts)
    if kind is None or kind in SHARED_FILE_SYSTEMS:
        return None
    return (
        f"output_dir {recipe.output_dir} is on a {kind} file system, which looks local to this node; a run over "
        f"{machines} machines needs it on storage every node shares (NFS, Lustre, GPFS ...) to checkpoint and resume"
    )


def memory_problems(recipe, launch_flags: list[str] | None) -> list[Problem]:
    """The launch accelerate will make (:func:`procrl.launch.launched.predicted_setup`) against this
    machine's GPU memory: one problem when the memory plan does not fit (its remedies re-planned)."""
    card = gpu_memory_bytes() if gpu_count() > 0 else None
    from procrl.launch.launched import predicted_setup
    from procrl.recipe.memory import fit_problem

    setup = predicted_setup(list(launch_flags or [])) if card is not None else None
    problem = fit_problem(recipe, setup, *card) if setup is not None and setup.distributed_type != "CPU" else None
    return [] if problem is None else [Problem("launch", problem)]


def guarded(name: str, check, *args, **kwargs) -> list[Problem]:
    """Run one check; when it raises (a driver error, a bug), one warning line naming it and why,
    and no problem: a check that cannot run never changes the launch (it is fail-closed on the
    launch, not on the check), and what the other checks found still counts."""
    try:
        return list(check(*args, **kwargs) or [])
    except ConfigError:
        raise
    except Exception as error:  # noqa: BLE001 - any failure of the check itself: one line, no traceback
        message = str(error).strip().splitlines()[0] if str(error).strip() else "no message"
        print(
            f"procrl: warning: the {name} check could not run ({type(error).__name__}: {message}); "
            "launching without it",
            file=sys.stderr,
            flush=True,
        )
        return []


def idle_gpu_warning(layout: LaunchLayout, gpus: int) -> str | None:
    """A multi-node launch that leaves GPUs of a machine idle: accelerate's ``num_processes`` is the
    total over all machines (procrl follows it), so a recipe written for one node of N GPUs,
    launched with ``--num_machines 2``, runs N/2 processes on each."""
    if layout.machines <= 1 or gpus <= layout.per_machine:
        return None
    idle = gpus - layout.per_machine
    return (
        f"{layout.processes} process(es) over {layout.machines} machines is {layout.per_machine} per machine "
        f"(num_processes counts all machines), leaving {idle} of this machine's {gpus} GPUs idle; "
        f"to use them all: --num_processes {gpus * layout.machines}"
    )


def _launch_warnings(recipe, flags: list[str] | None) -> list[Problem]:
    """Node-local storage and idle GPUs of a multi-node launch: a warning line each, never a stop."""
    layout = launch_layout(recipe, flags)
    for warning in (shared_storage_warning(recipe, layout.machines), idle_gpu_warning(layout, gpu_count())):
        if warning:
            print(f"procrl: warning: {warning}", file=sys.stderr, flush=True)
    return []


def check_before_launch(
    recipe, launch_args: list[str] | None = None, *, launching: bool = True, launch_flags: list[str] | None = None
) -> None:
    """Raise :class:`PrelaunchError` when anything is found; print the warnings.

    ``launch_flags``: the accelerate flags the launch will really get (the recipe's added to the
    user's), when they are not ``launch_args``: the memory plan is checked against this machine's
    GPU for the launch accelerate makes of them. Each check runs :func:`guarded`."""
    flags = launch_args if launch_flags is None else launch_flags
    problems = prelaunch_problems(recipe, launch_args, launching=launching)
    if launching:
        problems += guarded("GPU memory", memory_problems, recipe, flags)
        problems += guarded("multi-node", _launch_warnings, recipe, flags)
    problems += guarded("W&B credentials", wandb_problems, recipe)
    if problems:
        raise PrelaunchError(problems)


def report_rank_failure(error: BaseException) -> None:
    """One procrl line for a rank that fails after it started (its traceback follows)."""
    rank = os.environ.get("RANK")
    where = f"rank {rank}" if rank is not None else "training"
    from procrl.core.redaction import redact_text

    message = redact_text(str(error).strip().splitlines()[0]) if str(error).strip() else ""
    detail = f"{type(error).__name__}: {message}" if message else type(error).__name__
    print(f"procrl: error: {where} failed: {detail} (traceback below)", file=sys.stderr, flush=True)
