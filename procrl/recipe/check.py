"""``procrl check``'s work on the recipe: validate it, print it resolved with the plan and the data
checks, and score two reference solutions with its reward mix, needing no model and no network
unless asked (``load_models``, ``probe_judge``). Recipe-only: what depends on the machine (its GPU,
the installed vLLM against TRL) is given by the launch layer (:mod:`procrl.launch.check`), so that
``procrl check`` imports neither the runner nor the launcher."""

from __future__ import annotations

from pathlib import Path

from procrl.core.config import ConfigError
from procrl.rewards.protocol import RUN_FAILURES as _RUN_FAILURES

__all__ = ["check_recipe_alone"]

# failure kinds that mean the component itself failed (raised, or its judge model did), not one sample
_LOAD_FAILURES = ("exception", "judge_error")


def check_recipe_alone(
    path: str,
    overrides: list[str],
    load_models: bool = False,
    probe_judge: bool = False,
    gpu: tuple[float, str] | None = None,
):
    """Print the check of the recipe at ``path`` (its plan also against ``gpu``, ``(bytes, name)``);
    return the recipe and one line per component that cannot run (empty when training may start).
    An invalid recipe raises ConfigError before anything loads."""
    from procrl.core import yaml_core
    from procrl.core.redaction import redact, redact_url
    from procrl.recipe import load_recipe
    from procrl.recipe.checks import check_batch_layout, check_recipe_data, check_training_data
    from procrl.recipe.plan import format_plan, plan, planned_processes
    from procrl.rewards.mix import RewardMix
    from procrl.rewards.protocol import RewardBatch
    from procrl.rewards.registry import component_info

    recipe = load_recipe(path, overrides)
    # what `procrl train` refuses before loading, check refuses too (TRL's own checks need TRL
    # and torch, which check does not import)
    check_training_data(recipe)
    check_batch_layout(recipe, planned_processes(recipe))
    if recipe.launch.config_file is not None:
        from procrl.recipe.launch import resolve_config_file

        resolve_config_file(recipe.launch.config_file, recipe.path)
    data_lines = check_recipe_data(recipe, load_models)  # rows, gold answers, prompt lengths
    mix = RewardMix(recipe.rewards)

    print(f"recipe {path}: valid")
    print("\nresolved recipe:")
    print(yaml_core.dump(redact(recipe.resolved())).rstrip())
    print("\nplan:")
    print(format_plan(plan(recipe, gpu)))
    print("\ndata checks:")
    print("\n".join(f"  {line}" for line in data_lines))
    rows, source = _check_examples(recipe)
    if load_models:
        _check_policy(recipe, rows[0]["question"])
    print(f"\nreward mix on {len(rows)} reference solutions from {source}:")
    broken: list[str] = []
    columns = {key: [r[key] for r in rows] for key in ("answer_kind", "choices") if all(key in r for r in rows)}
    batch = RewardBatch.from_texts(
        [r.get("completion", r["answer"]) for r in rows],
        [r["question"] for r in rows],
        [r["answer"] for r in rows],
        **columns,
    )
    for name, component in mix.components.items():
        model = component.needs_model()
        if model is not None and not load_models:
            print(f"  {name:<24} not scored: loads {model} (use --load-models to score it here)")
            continue
        endpoint = component.needs_network()
        if endpoint is not None and not probe_judge:
            print(
                f"  {name:<24} not scored: sends requests to {redact_url(endpoint)} "
                "(use --probe-judge to score it here)"
            )
            continue
        output = mix.compute(name, batch)
        values = ", ".join("None" if v is None else f"{v:.4f}" for v in output.scores)
        counted = {kind: count for kind, count in output.failures.items() if count}
        failures = f"  failures: {counted}" if counted else ""
        grades = component_info(mix.specs[name].target).grades or "undeclared"
        print(f"  {name:<24} weight {mix.specs[name].weight:<6g} scores [{values}]  grades {grades}{failures}")
        errors = [d["error"] for d in output.details or [] if isinstance(d, dict) and d.get("error")]
        if model is not None and any(counted.get(kind) for kind in _LOAD_FAILURES):
            # training would go on with the fallback; check says the component cannot run here
            broken.append(f"rewards.{name}: failed to load or run {model}" + (f" ({errors[0]})" if errors else ""))
        elif sum(counted.get(kind, 0) for kind in _RUN_FAILURES) >= len(batch):
            kinds = ", ".join(kind for kind in counted if kind in _RUN_FAILURES)
            broken.append(
                f"rewards.{name}: failed on every sample of the check ({kinds}"
                + (f": {errors[0]}" if errors else "")
                + "); training would give every sample its fallback"
            )
    process = [n for n, s in mix.specs.items() if component_info(s.target).process]  # as the hacking watch sums them
    print(f"  process reward of the hacking watch: {', '.join(process) or 'none (no component grades the reasoning)'}")
    return recipe, broken


def _check_examples(recipe, count: int = 2) -> tuple[list[dict], str]:
    """Two dataset rows to score; embedded problems when the dataset needs the network."""
    from procrl.core.paths import is_local_data_file
    from procrl.data import SYNTHETIC, load_examples, synthetic_rows
    from procrl.data.qa import EXAMPLE_SOLUTIONS, declared_answer_kind
    from procrl.data.synthetic import generate_problems

    kind = declared_answer_kind(recipe.data)
    if kind in EXAMPLE_SOLUTIONS:  # the gold is a letter or yes/no, not a worked solution
        return EXAMPLE_SOLUTIONS[kind][:count], f"written {kind} examples"
    if recipe.data.dataset == SYNTHETIC:  # no `datasets` import for two embedded rows
        rows = synthetic_rows(recipe.data, recipe.data.split)
        return rows[: min(count, recipe.data.max_samples or count)], recipe.data.dataset
    if is_local_data_file(recipe.data.dataset) or Path(recipe.data.dataset).is_dir():
        dataset = load_examples(recipe.data)
        return [dataset[i] for i in range(min(count, len(dataset)))], recipe.data.dataset
    return generate_problems(count, seed=0), f"embedded problems (not fetching {recipe.data.dataset!r})"


def _check_policy(recipe, question: str) -> None:
    """``--load-models``: load the policy and its tokenizer as training will (a GGUF dequantized),
    and show the first prompt exactly as the model sees it (chat template, system message) and
    how a completion ends (EOS, pad). A failure is a ConfigError naming model.name_or_path."""
    import time

    from procrl.data.prompts import format_prompt, render_prompt, uses_chat_template
    from procrl.models.loading import load_policy, load_tokenizer, policy_source

    started = time.perf_counter()
    try:
        source = policy_source(recipe.model)
        tokenizer = load_tokenizer(recipe.model)
        model = load_policy(recipe.model)
    except ConfigError:
        raise
    except Exception as error:  # noqa: BLE001 - whatever from_pretrained raises: one line naming the key
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ConfigError(
            f"model.name_or_path: failed to load {recipe.model.name_or_path} ({type(error).__name__}: {message})"
        ) from None
    parameters = sum(p.numel() for p in model.parameters())
    dtype = next(model.parameters()).dtype
    print(
        f"\npolicy: {type(model).__name__} from {source.describe()}, {parameters / 1e6:.1f}M parameters, "
        f"{str(dtype).replace('torch.', '')}, loaded in {time.perf_counter() - started:.1f} s"
    )
    eos = model.generation_config.eos_token_id
    print(
        f"  eos {tokenizer.eos_token!r} (id {tokenizer.eos_token_id}; the model's generation_config: {eos}), "
        f"pad {tokenizer.pad_token!r} (id {tokenizer.pad_token_id})"
        + (
            ": pad = eos, so completions are masked after their first EOS, never by the pad id"
            if tokenizer.pad_token_id == tokenizer.eos_token_id
            else ""
        )
    )
    chat = uses_chat_template(recipe.data, tokenizer)
    prompt = render_prompt(tokenizer, format_prompt(recipe.data, question, chat))
    tokens = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    print(f"  first prompt ({'chat template' if chat else 'plain text'}, {tokens} tokens):")
    for line in prompt.splitlines():
        print(f"    | {line}")
    del model
