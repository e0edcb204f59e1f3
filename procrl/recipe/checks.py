"""Checks of the training rows that need the rows themselves (and, for prompt lengths, the
policy's tokenizer and config), with the policy for each:

* *Gold answers that hold no number.* When the mix has an accuracy component, a training set
  none of whose gold answers parses as a number (``parse_gold``) is refused: accuracy would be
  unresolved (no opinion, then its fallback) on every sample, and the run would learn nothing
  from it. When only some do not parse, one warning line says how many and names the first.
* *Prompts longer than the model can take.* A prompt is measured in tokens as TRL measures it
  (the tokenizer on the text, or the chat template with the generation prompt). The limit is
  ``trainer.max_prompt_length`` when given (TRL's name: GRPOConfig's before TRL 1.0, and its
  SDPO / A2PO configs), else the model's context (``max_position_embeddings``) minus
  ``max_completion_length``. A prompt over the limit is refused, naming its row and length
  (TRL 1.16 neither truncates nor warns: a 6,002-token prompt trained silently against 2,048
  positions, and a 1 MB question held step 0 for minutes); ``data.long_prompts: skip`` drops
  such rows instead. Truncation is not offered: a math problem cut short is a different
  problem with the same gold answer. Either way one line at start gives the count, the
  longest prompt and the limit, and ``data/prompt_tokens_max`` and ``data/prompts_skipped``
  are logged with every logging step.

``procrl train`` runs both after the tokenizer loads and before the model does;
``procrl check`` runs them on local data (the prompt lengths when the tokenizer is at hand: a
local model directory, or ``--load-models``).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError

__all__ = [
    "DEFAULT_MAX_COMPLETION_LENGTH",
    "PromptReport",
    "check_batch_layout",
    "check_golds",
    "check_prompts",
    "check_training_data",
    "model_context",
]

DEFAULT_MAX_COMPLETION_LENGTH = 512  # TRL 1.16 GRPOConfig's default
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def _preview(text: Any, width: int = 40) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def uses_gold(specs) -> list[str]:
    """Names of the mix's accuracy components (they compare with the gold answer)."""
    from procrl.rewards.accuracy import AccuracyReward

    return [s.name for s in specs if inspect.isclass(s.target) and issubclass(s.target, AccuracyReward)]


def check_golds(answers: list, specs, source: str, which: str = "training", rows=None) -> str | None:
    """Refuse a dataset whose gold answers cannot be read (a number; for a choice or yes/no
    dataset, ``rows`` with ``answer_kind`` / ``choices``, an option or yes/no) when the mix has an
    accuracy component; a warning line when some cannot (None when every one can, or nothing
    uses them). A judge that checks numbers on answers that are not is refused first."""
    from procrl.core.choices import answer_spec, gold_answer
    from procrl.rewards.spec import check_answer_kind

    kinds = list(rows["answer_kind"]) if rows is not None and "answer_kind" in rows.column_names else None
    choices = list(rows["choices"]) if rows is not None and "choices" in rows.column_names else None
    if kinds:
        check_answer_kind(next((k for k in kinds if k != "number"), None), specs, f"the {which} data, {source}")
    users = uses_gold(specs)
    if not users or not answers:
        return None
    specs_of = [
        answer_spec(kinds[i] if kinds else None, choices[i] if choices else None, answer)
        for i, answer in enumerate(answers)
    ]
    unparsed = [i for i, (answer, spec) in enumerate(zip(answers, specs_of), 1) if gold_answer(answer, spec) is None]
    if not unparsed:
        return None
    first = unparsed[0]
    example = f"row {first}: {_preview(answers[first - 1])!r}"
    kind = specs_of[first - 1].kind
    if kind != "number":
        what = "an option of its row" if kind == "choice" else "yes or no"
        if len(unparsed) == len(answers):
            raise ConfigError(
                f"data.answer_column: no gold answer of the {which} data ({source}) is {what} ({example}), "
                f"so rewards.{users[0]} would have no opinion on any sample"
            )
        return (
            f"warning: {len(unparsed):,} of {len(answers):,} gold answers of the {which} data are not {what} "
            f"(first: {example}); rewards.{users[0]} has no opinion on those samples (its fallback applies)"
        )
    if len(unparsed) == len(answers):
        raise ConfigError(
            f"data.answer_column: no gold answer of the {which} data ({source}) holds a number ({example}), so "
            f"rewards.{users[0]} would have no opinion on any sample; point data.answer_column at the numeric answers "
            f"(GSM8K's '#### N' or a bare number) or drop the accuracy component"
        )
    return (
        f"warning: {len(unparsed):,} of {len(answers):,} gold answers of the {which} data hold no number (first: "
        f"{example}); rewards.{users[0]} has no opinion on those samples (its fallback applies)"
    )


def model_context(model_path: str, model_section) -> int | None:
    """Positions the model takes (its config's ``max_position_embeddings`` or equivalent), or None
    when the config cannot be read or names none."""
    try:
        from transformers import AutoConfig

        kwargs = {"trust_remote_code": model_section.trust_remote_code}
        if model_section.revision:
            kwargs["revision"] = model_section.revision
        config = AutoConfig.from_pretrained(model_path, **kwargs)
    except Exception:  # a GGUF file, an unreadable config: the context is unknown, only max_prompt_length applies
        return None
    config = getattr(config, "text_config", None) or config
    for key in _CONTEXT_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def policy_context(model_section) -> int | None:
    """:func:`model_context` of the recipe's policy; a local GGUF's from its header."""
    from procrl.models.loading import policy_source

    source = policy_source(model_section)
    if source.gguf_file:
        from procrl.models.gguf import gguf_config

        file = Path(source.path, source.gguf_file)
        try:
            return gguf_config(file).get("max_position_embeddings") if file.is_file() else None
        except (OSError, ValueError):
            return None
    return model_context(source.path, model_section)


def prompt_limit(recipe, context: int | None) -> tuple[int | None, str]:
    """The longest prompt allowed, in tokens, and where that number comes from."""
    completion = recipe.trainer_args.get("max_completion_length") or DEFAULT_MAX_COMPLETION_LENGTH
    explicit = recipe.trainer.max_prompt_length
    vllm_length = recipe.trainer_args.get("vllm_max_model_length") if recipe.trainer_args.get("use_vllm") else None
    if vllm_length is not None:  # vLLM is given fewer positions than the model has
        context = vllm_length if context is None else min(context, vllm_length)
    if context is not None and completion >= context:
        raise ConfigError(
            f"trainer.max_completion_length: {completion:,} tokens leave no room for a prompt in the "
            f"model's context of {context:,} positions"
        )
    if explicit is not None:
        if context is not None and explicit + completion > context:
            raise ConfigError(
                f"trainer.max_prompt_length: {explicit:,} + max_completion_length {completion:,} is more than the "
                f"model's context of {context:,} positions; at most {context - completion:,}"
            )
        return explicit, "trainer.max_prompt_length"
    if context is None:
        return None, "the model's context is unknown and trainer.max_prompt_length is not set"
    return context - completion, f"model context {context:,} - max_completion_length {completion:,}"


def prompt_tokens(prompts: list, tokenizer, chunk: int = 512) -> list[int]:
    """Tokens of each prompt as TRL counts them: the tokenizer on a text prompt, the chat template
    with the generation prompt on a conversation."""
    counts: list[int] = []
    texts = [(i, p) for i, p in enumerate(prompts) if isinstance(p, str)]
    by_index: dict[int, int] = {}
    for start in range(0, len(texts), chunk):
        part = texts[start : start + chunk]
        ids = tokenizer([p for _, p in part])["input_ids"]
        by_index.update({i: len(row) for (i, _), row in zip(part, ids)})
    for i, prompt in enumerate(prompts):
        if i not in by_index:
            encoded = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
            ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
            by_index[i] = len(ids[0]) if ids and isinstance(ids[0], list) else len(ids)
        counts.append(by_index[i])
    return counts


@dataclass
class PromptReport:
    """What the prompt check found: logged with every logging step (:meth:`observer`)."""

    which: str
    rows: int
    longest: int
    longest_row: int
    limit: int | None
    limit_source: str
    skipped: int = 0

    def line(self) -> str:
        limit = (
            f"limit {self.limit:,} tokens ({self.limit_source})"
            if self.limit is not None
            else f"no limit ({self.limit_source})"
        )
        skipped = (
            f"; skipped {self.skipped:,} longer ones (data.long_prompts: skip; rows numbered before skipping)"
            if self.skipped
            else ""
        )
        return (
            f"{self.which} prompts: {self.rows:,}, longest {self.longest:,} tokens (row {self.longest_row}); "
            f"{limit}{skipped}"
        )

    def observer(self, batch, outputs, log_metric, log_extra) -> None:
        """A reward-mix batch observer: the numbers go with every batch's metrics."""
        if log_metric is not None:
            log_metric(f"data/{self.which.replace('-', '_')}_prompt_tokens_max", float(self.longest))
            log_metric(f"data/{self.which.replace('-', '_')}_prompts_skipped", float(self.skipped))


def check_prompts(recipe, dataset, tokenizer, context: int | None, which: str = "training"):
    """``(dataset, report)``: the prompt dataset (without the rows over the limit under
    ``data.long_prompts: skip``) and what was measured; a ConfigError for prompts over the limit."""
    limit, source = prompt_limit(recipe, context)
    prompts = list(dataset["prompt"])
    if not prompts:
        return dataset, PromptReport(which, 0, 0, 0, limit, source)
    counts = prompt_tokens(prompts, tokenizer)
    longest_index = max(range(len(counts)), key=counts.__getitem__)
    over = [i for i, n in enumerate(counts) if limit is not None and n > limit]
    report = PromptReport(which, len(counts), counts[longest_index], longest_index + 1, limit, source)
    if not over:
        return dataset, report
    questions = dataset["question"] if "question" in dataset.column_names else prompts
    longest = f"row {longest_index + 1} ({_preview(questions[longest_index])!r}) has {counts[longest_index]:,} tokens"
    if recipe.data.long_prompts != "skip" or len(over) == len(counts):
        every = " (every one)" if len(over) == len(counts) else ""
        raise ConfigError(
            f"data.dataset: {len(over):,} of {len(counts):,} {which} prompts{every} are longer than {limit:,} tokens "
            f"({source}); the longest, {longest}. Shorten or remove them, give trainer.max_prompt_length / "
            f"max_completion_length that fit the model, or skip them with data.long_prompts: skip"
        )
    dropped = set(over)
    kept = [i for i in range(len(counts)) if i not in dropped]
    longest_kept = max(kept, key=counts.__getitem__)
    report = PromptReport(which, len(kept), counts[longest_kept], longest_kept + 1, limit, source, skipped=len(over))
    return dataset.select(kept), report


def check_training_rows(recipe, tokenizer, dataset, eval_dataset=None, mix=None, note=None):
    """Both checks on the training prompts (and the held-out ones evaluated during training), as
    ``procrl train`` runs them once the tokenizer has loaded; returns the datasets (rows over the
    limit dropped under ``data.long_prompts: skip``). ``note(line)`` gets the start line and any
    warning; ``mix`` logs the numbers with every batch."""
    context = policy_context(recipe.model)
    lines, reports = [], []
    for which, rows in (("training", dataset), ("held-out", eval_dataset)):
        if rows is None:
            continue
        source = recipe.data.dataset if which == "training" else (recipe.data.eval_dataset or recipe.data.dataset)
        warning = check_golds(list(rows["answer"]), recipe.rewards, source, which, rows)
        rows, report = check_prompts(recipe, rows, tokenizer, context, which)
        lines += [report.line()] + ([warning] if warning else [])
        reports.append(report)
        if which == "training":
            dataset = rows
        else:
            eval_dataset = rows
    if note is not None:
        for line in lines:
            note(line)
    if mix is not None:
        mix.batch_observers.extend(report.observer for report in reports)
    return dataset, eval_dataset


def _tokenizer_is_local(model_section) -> bool:
    from pathlib import Path

    return Path(model_section.tokenizer or model_section.name_or_path).is_dir()


def check_recipe_data(recipe, load_models: bool = False) -> list[str]:
    """What ``procrl check`` can check of the training rows without fetching anything: local data
    (synthetic, a file, a directory) is loaded whole (its rows checked) and its gold answers
    checked; the prompt lengths are measured when the policy's tokenizer is at hand (a local
    directory, or ``load_models``). Returns the lines to print; raises what train would."""
    from pathlib import Path

    from procrl.core.paths import is_local_data_file
    from procrl.data import SYNTHETIC, build_eval_dataset, build_prompt_dataset, load_examples, synthetic_rows
    from procrl.recipe.schema import evaluates_during_training

    def local(name: str | None) -> bool:
        return name == SYNTHETIC or (name is not None and (is_local_data_file(name) or Path(name).is_dir()))

    if not local(recipe.data.dataset):
        return [f"training rows: not checked here ({recipe.data.dataset!r} is fetched by train; check fetches nothing)"]
    examples = None
    if recipe.data.dataset == SYNTHETIC:  # plain rows: check imports no `datasets` unless it measures prompts
        answers = [row["answer"] for row in synthetic_rows(recipe.data, recipe.data.split)][: recipe.data.max_samples]
    else:
        examples = load_examples(recipe.data)
        answers = list(examples["answer"])
    lines = [f"training rows: {len(answers):,} checked"]
    warning = check_golds(answers, recipe.rewards, recipe.data.dataset, rows=examples)
    if warning:
        lines.append(warning)
    if not (load_models or _tokenizer_is_local(recipe.model)):
        return lines + ["prompt lengths: not measured (needs the policy's tokenizer: --load-models)"]
    from procrl.models.loading import load_tokenizer

    tokenizer = load_tokenizer(recipe.model)
    datasets = [("training", build_prompt_dataset(recipe.data, tokenizer))]
    held_out = recipe.data.eval_dataset or recipe.data.dataset
    if evaluates_during_training(recipe.trainer_args) and local(held_out):
        datasets.append(("held-out", build_eval_dataset(recipe.data, tokenizer)))
    context = policy_context(recipe.model)
    for which, rows in datasets:
        if which == "held-out":
            warning = check_golds(list(rows["answer"]), recipe.rewards, held_out, which, rows)
            lines += [warning] if warning else []
        lines.append(check_prompts(recipe, rows, tokenizer, context, which)[1].line())
    return lines


def check_training_data(recipe) -> None:
    """Refuse to train on a test split: ``data.split`` or a data file whose name says test
    (``test.jsonl``, ``gsm8k_test.json``), unless ``data.allow_test_data: true``."""
    if recipe.data.allow_test_data:
        return
    if "test" in recipe.data.split.lower():
        raise ConfigError(
            f"data.split: refusing to train on {recipe.data.split!r}; evaluate on test, train on train "
            "(data.allow_test_data: true forces it)"
        )

    from procrl.data import has_no_splits

    if has_no_splits(recipe.data.dataset):
        words = re.split(r"[^a-z0-9]+", Path(recipe.data.dataset).name.lower().split(".")[0])
        if any(word in ("test", "tests", "testing") for word in words):
            raise ConfigError(
                f"data.dataset: refusing to train on {recipe.data.dataset!r}: its name says it is a test split "
                "(data.allow_test_data: true forces it)"
            )


def check_batch_layout(recipe, processes: int) -> None:
    """A generation batch must hold whole groups of ``num_generations`` completions of a prompt,
    over ``processes`` processes: TRL GRPOConfig's rule (GRPO; PPO rolls out one generation batch
    per optimizer step), checked on the recipe without importing TRL so that ``procrl check``
    refuses what training would. Defaults are GRPOConfig's."""
    args = recipe.trainer_args
    per_device = int(args.get("per_device_train_batch_size", 8))
    accumulation = int(args.get("gradient_accumulation_steps", 1))
    generations = int(args.get("num_generations") or 8)
    generation_batch, steps = args.get("generation_batch_size"), args.get("steps_per_generation")
    layout = f"per_device_train_batch_size {per_device} x {processes} process(es)"
    if generations < 2:
        raise ConfigError(
            "trainer.num_generations: at least 2 completions per prompt are needed for group advantages,"
            f" got {generations}"
        )
    if generation_batch is not None and steps is not None:
        raise ConfigError("trainer.generation_batch_size: give it or steps_per_generation, not both")
    if generation_batch is not None:
        if generation_batch % (per_device * processes):
            raise ConfigError(
                f"trainer.generation_batch_size: {generation_batch} must be a multiple of {layout}"
                f" = {per_device * processes}"
            )
    else:
        steps = steps if steps is not None else accumulation
        generation_batch = per_device * processes * steps
        per_generation = args.get("steps_per_generation") is not None
        batches = "steps_per_generation" if per_generation else "gradient_accumulation_steps"
        layout += f" x {batches} {steps}"
    if recipe.trainer.algorithm == "ppo":
        generation_batch = per_device * processes * accumulation
        layout = (
            f"per_device_train_batch_size {per_device} x {processes} process(es) "
            f"x gradient_accumulation_steps {accumulation}"
        )
    if generation_batch % generations:
        raise ConfigError(
            f"trainer.num_generations: a batch of {layout} = {generation_batch} completions"
            " does not hold whole groups of "
            f"{generations} (every prompt is generated num_generations times); make it a multiple of {generations}"
        )
