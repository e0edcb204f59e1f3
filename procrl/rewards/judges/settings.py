"""The settings of each first-error backend: one dataclass per backend, holding exactly the
options that backend reads (the first_error component's own options, and its judge's).

A recipe writes them flat under the component (``type: first_error``, ``backend:`` and the
backend's options); :meth:`procrl.rewards.first_error.FirstErrorReward.settings_class` picks the
class from :data:`procrl.rewards.judges.registry.BACKENDS` and refuses an option the chosen
backend does not read. Shared options sit in small base classes, so each is defined (its default
and its help) once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from procrl.core.config import ConfigError, field
from procrl.core.redaction import redact_url
from procrl.rewards.judges.reference_rules import LEAP, OFF_PATH, TRANSFORMATIONS, ReferenceRules

__all__ = [
    "ArithmeticSettings",
    "FirstErrorSettings",
    "HFSettings",
    "OpenAISettings",
    "PRMSettings",
    "ReferenceRules",
    "ReferenceSettings",
]

Penalty = Literal["flat", "position", "correct_only"]

BACKEND_HELP = (
    "Judge: 'openai' (OpenAI-compatible endpoint, e.g. vLLM serve), 'hf' (in-process causal LM), 'prm' (process "
    "reward model, Qwen2.5-Math-PRM convention), 'arithmetic' (no model: checks calculations) or 'reference' (no "
    "model: checks each step's quantities against the question and the gold solution's intermediate values; needs "
    "gold solutions, not only final answers). 'arithmetic' and 'reference' check numbers: refused for choice and "
    "yes/no answers (data.answer_kind). Each backend reads its own options (docs/recipes.md)."
)


def _backend(name: str):
    """The ``backend`` field of one backend's settings: its name is the only value it takes."""
    return field(name, help=BACKEND_HELP)


def _at_least(path: str, settings: object, names: tuple[str, ...], lowest: int) -> None:
    for name in names:
        if getattr(settings, name) < lowest:
            raise ConfigError(f"{path}.{name}: must be at least {lowest}, got {getattr(settings, name)}")


def _not_above_checked(path: str, settings: object, name: str) -> None:
    """A score of no opinion is never better than checked and correct."""
    if getattr(settings, name) > 0:
        raise ConfigError(
            f"{path}.{name}: must be <= 0 (0 is what a checked, error-free chain gets), got {getattr(settings, name)}"
        )


@dataclass
class FirstErrorSettings:
    """What the first_error component reads under every backend."""

    backend: str = field(help=BACKEND_HELP)
    penalty: Penalty = field(
        "flat",
        help="'flat': -1 when an error is found; 'position': -(n-k)/n when step k is the first error (padding "
        "the chain with steps before the error shrinks it); 'correct_only': the flat penalty only when the "
        "final answer is right.",
    )
    no_steps_score: float = field(
        -1.0,
        help="Score of a completion without reasoning steps (an answer alone): never better than checked "
        "and correct (0).",
    )

    def validate(self, path: str) -> None:
        _not_above_checked(path, self, "no_steps_score")


@dataclass
class ModelFreeSettings(FirstErrorSettings):
    """The backends without a model: they say how many steps they could check."""

    unverified_score: float = field(
        -1.0,
        help="Score of a chain in which the judge checked nothing: no step holds a checkable calculation "
        "(arithmetic: hedging, prose without numbers, pure algebra) or works out a quantity of the gold's path "
        "(reference: hedging, the question's numbers copied, the gold answer stated without working): not 'no "
        "error'; the default -1 equals a found error, so leaving a wrong calculation out of the text never pays.",
    )

    def validate(self, path: str) -> None:
        super().validate(path)
        _not_above_checked(path, self, "unverified_score")


@dataclass
class ArithmeticSettings(ModelFreeSettings):
    backend: Literal["arithmetic"] = _backend("arithmetic")


@dataclass
class ReferenceSettings(ModelFreeSettings):
    """The reference judge's rules as recipe options (their defaults: :class:`ReferenceRules`)."""

    backend: Literal["reference"] = _backend("reference")
    max_depth: int = field(
        ReferenceRules.max_depth,
        help="Operations (+ - * / over pairs) by which a stated gold value may be from what is known before it "
        "(the question's numbers, what earlier steps established) to count as worked out, and by which a later "
        "quantity may use an off-path value to reach a gold value (lookahead); 0, 1 or 2.",
    )
    transformations: list[Literal[TRANSFORMATIONS]] = field(
        default_factory=lambda: list(ReferenceRules.transformations),
        help="What else reaches a gold or known value: 'units' (a quantity converted into the unit written after "
        "it from another unit its step names: 150 minutes for 2.5 hours; conversion factors of named units are "
        "known), 'percent' (20% also stands for 0.2; 100%-30% and 1-1/3 of a share of the question are on the "
        "path), 'rounding' (as written: to the decimals shown, a whole number for a non-whole value), 'regroup' "
        "(partial results of the gold's calculations regrouped: 16-3-4 also gives 3+4=7; off by default: on real "
        "solutions it lets more errors through than the lookahead needs).",
    )
    off_path: Literal[OFF_PATH] = field(
        ReferenceRules.off_path,
        help="A value off the gold's path is accepted when a later quantity uses it to reach a gold value "
        "('lookahead': alternative decompositions pass, a wrong operation on right numbers does not), when it is "
        "within max_depth operations of known and gold values ('derivable': lets wrong operations through), or "
        "never ('flag').",
    )
    leap: Literal[LEAP] = field(
        ReferenceRules.leap,
        help="A gold value stated before it can be worked out from what is known (e.g. the answer first): "
        "accepted without counting as checked ('accept'), or the first error ('flag').",
    )
    check_arithmetic: bool = field(
        ReferenceRules.check_arithmetic,
        help="A calculation shown false is an error too (what the arithmetic judge flags).",
    )
    rules_off: list[str] = field(
        default_factory=list,
        help="Rules of the judge switched off, by name (procrl.rewards.judges.reference.RULES lists them, in "
        "the order they apply, each with its statement and an example).",
    )

    def validate(self, path: str) -> None:
        super().validate(path)
        if not 0 <= self.max_depth <= 2:
            raise ConfigError(f"{path}.max_depth: must be 0, 1 or 2, got {self.max_depth}")
        from procrl.rewards.judges.reference.verdict import RULE_NAMES  # the reference judge loads only here

        for name in self.rules_off:
            if name not in RULE_NAMES:
                raise ConfigError(f"{path}.rules_off: unknown rule {name!r}; the rules: {', '.join(RULE_NAMES)}")

    def rules(self) -> ReferenceRules:
        """The rules these settings switch on, with their options."""
        return ReferenceRules(
            max_depth=self.max_depth,
            transformations=tuple(self.transformations),
            off_path=self.off_path,
            leap=self.leap,
            check_arithmetic=self.check_arithmetic,
            off=tuple(self.rules_off),
        )


@dataclass
class ModelSettings(FirstErrorSettings):
    """The backends that ask a model (served or in-process)."""

    model: str | None = field(
        None,
        help="Judge model: served model name (openai) or Hugging Face id/path (hf, prm; hf also a .gguf path "
        "or an embedded model such as procrl:smollm2-135m-instruct).",
    )

    def validate(self, path: str) -> None:
        super().validate(path)
        if not self.model:
            raise ConfigError(f"{path}.model: the {self.backend!r} backend needs a model")


@dataclass
class LLMSettings(ModelSettings):
    """The judges that write a reply (the prompt of :mod:`procrl.rewards.judges.prompt`)."""

    reference: bool | Literal["answer", "solution"] = field(
        False,
        help="Reference-based mode: 'answer' (or true) shows the gold final answer (the number after '####'; a "
        "choice's letter and text, '(B) reading', or yes/no: ReTraceQA's protocol); 'solution' shows the whole "
        "gold solution; false: reference-free.",
    )
    categories: bool = field(
        False,
        help="Also ask for the error category (Misinterpretation/Hallucination/"
        "Reasoning, ReTraceQA's), logged per category (rewards/<name>/category/...).",
    )
    max_tokens: int = field(1024, help="Most tokens the judge may write.")
    temperature: float = field(0.0, help="Sampling temperature (0: greedy).")

    def validate(self, path: str) -> None:
        super().validate(path)
        _at_least(path, self, ("max_tokens",), 1)
        if self.temperature < 0:
            raise ConfigError(f"{path}.temperature: must be >= 0, got {self.temperature}")


@dataclass
class LocalModelSettings(ModelSettings):
    """The judges whose model runs in this process (loaded whole, on the trainer's device)."""

    batch_size: int = field(8, help="Items per forward pass / generate call.")
    dtype: str = field("auto", help="Torch dtype of the judge model (e.g. bfloat16).")
    trust_remote_code: bool = field(False, help="Allow the model's own code (Qwen2.5-Math-PRM needs it).")

    def validate(self, path: str) -> None:
        super().validate(path)
        _at_least(path, self, ("batch_size",), 1)


@dataclass
class OpenAISettings(LLMSettings):
    backend: Literal["openai"] = _backend("openai")
    base_url: str = field("http://localhost:8000/v1", help="Base URL of the endpoint (…/v1).")
    api_key_env: str | None = field(
        None, help="Name of the environment variable holding the API key (the key itself never goes in a recipe)."
    )
    concurrency: int = field(16, help="Most requests in flight at once.")
    timeout_s: float = field(
        60.0, help="Seconds allowed for one request attempt in all (connect, send, the whole reply)."
    )
    max_retries: int = field(
        3, help="Retries after a 429, 5xx, timeout, connection error or a 200 that is not a chat completion."
    )
    backoff_s: float = field(0.5, help="First retry delay; doubles each retry (a Retry-After header wins).")
    cache_size: int = field(100_000, help="Replies cached by (model, prompt); 0 disables the cache.")

    def validate(self, path: str) -> None:
        super().validate(path)
        if self.api_key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env):
            raise ConfigError(
                f"{path}.api_key_env: expected the NAME of an environment variable (e.g. JUDGE_API_KEY), "
                "not a key; keys never go in a recipe"
            )
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{path}.base_url: expected an http(s) URL, got {redact_url(self.base_url)!r}")
        _at_least(path, self, ("concurrency",), 1)
        _at_least(path, self, ("max_retries", "cache_size"), 0)
        if self.timeout_s <= 0:
            raise ConfigError(f"{path}.timeout_s: must be positive, got {self.timeout_s}")
        if self.backoff_s < 0:
            raise ConfigError(f"{path}.backoff_s: must be >= 0, got {self.backoff_s}")


@dataclass
class HFSettings(LLMSettings, LocalModelSettings):
    backend: Literal["hf"] = _backend("hf")
    gguf_file: str | None = field(
        None, help="A GGUF checkpoint inside model (a Hub repository or directory), dequantized to dtype."
    )

    def validate(self, path: str) -> None:
        super().validate(path)
        from procrl.models.loading import check_gguf_file

        check_gguf_file(f"{path}.gguf_file", self.gguf_file, self.model, f"{path}.model")


@dataclass
class PRMSettings(LocalModelSettings):
    backend: Literal["prm"] = _backend("prm")
    threshold: float = field(0.5, help="A step whose probability of being correct is below this is an error.")
    step_separator: str = field("<extra_0>", help="The token that ends each step.")

    def validate(self, path: str) -> None:
        super().validate(path)
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"{path}.threshold: must be in [0, 1], got {self.threshold}")
