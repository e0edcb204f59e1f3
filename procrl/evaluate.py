"""Reasoning-aware evaluation: ``procrl evaluate --recipe R --model M [--split test] [--limit N]``.

Generates one answer per problem (vLLM when installed and a GPU is present, else batched
transformers generation, greedy), scores the answers with the recipe's reward mix and reports
answer-only accuracy, reasoning-aware accuracy (answer right AND the first-error component
found no error), their gap (ReTraceQA's inflation) and the mean of every component. Writes
``report.json``, ``report.md``, ``completions.jsonl`` and PNG plots to the output directory.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from procrl import diagnostics as diag
from procrl.config import ConfigError
from procrl.rewards.base import RewardBatch, RewardMix, RewardOutput, RuntimeContext

__all__ = ["aggregate_outputs", "build_report", "evaluate", "generate_completions", "write_report"]


# --- generation (the model at the edge, loaded once) ---------------------------------------------


def _load_tokenizer(model_path: str, recipe) -> Any:
    from transformers import AutoTokenizer

    from procrl.models import load_tokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=recipe.model.trust_remote_code)
    except (OSError, ValueError):  # a checkpoint saved without its tokenizer: use the recipe's
        tokenizer = load_tokenizer(recipe.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _prompt_texts(recipe, questions: list[str], tokenizer) -> list[str]:
    from procrl.data import format_prompt, uses_chat_template

    chat = uses_chat_template(recipe.data, tokenizer)
    texts = []
    for question in questions:
        prompt = format_prompt(recipe.data, question, chat)
        texts.append(tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False) if chat else prompt)
    return texts


def _vllm_available() -> bool:
    import importlib.util

    import torch

    return torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None


def generate_completions(model_path: str, prompts: list[str], tokenizer, recipe, max_new_tokens: int,
                         batch_size: int = 8, backend: str = "auto") -> tuple[list[str], str]:
    """Greedy completions of ``prompts``; returns them and the backend used."""
    if backend == "vllm" or (backend == "auto" and _vllm_available()):
        from vllm import LLM, SamplingParams

        llm = LLM(model=model_path, tokenizer=model_path, dtype=recipe.model.dtype,
                  trust_remote_code=recipe.model.trust_remote_code)
        results = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=max_new_tokens))
        return [r.outputs[0].text for r in results], "vllm"

    import torch
    from transformers import AutoModelForCausalLM

    from procrl.models import pretrained_kwargs

    kwargs = pretrained_kwargs(recipe.model)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_path, **kwargs).to(device).eval()
    tokenizer.padding_side = "left"  # decoder-only batched generation continues after the prompt
    completions: list[str] = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        inputs = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        with torch.inference_mode():
            output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                                    pad_token_id=tokenizer.pad_token_id)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        completions.extend(tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
    return completions, "transformers"


# --- scoring and aggregation (pure) --------------------------------------------------------------


def aggregate_outputs(chunks: list[dict[str, RewardOutput]]) -> dict[str, RewardOutput]:
    """One output per component over several scored batches: per-sample lists concatenated,
    transition counts summed, batch metrics averaged weighted by batch size."""
    merged: dict[str, RewardOutput] = {}
    for name in chunks[0] if chunks else []:
        parts = [chunk[name] for chunk in chunks]
        sizes = [len(p.scores) for p in parts]
        scores = [s for p in parts for s in p.scores]
        details = None
        if any(p.details is not None for p in parts):
            details = [d for p, n in zip(parts, sizes) for d in (p.details if p.details is not None else [None] * n)]
        step_scores = None
        if any(p.step_scores is not None for p in parts):
            step_scores = [s for p, n in zip(parts, sizes) for s in (p.step_scores if p.step_scores is not None else [None] * n)]
        metrics: dict[str, float] = {}
        for key in {k for p in parts for k in p.metrics}:
            weighted = [(p.metrics[key], n) for p, n in zip(parts, sizes)
                        if key in p.metrics and p.metrics[key] is not None and math.isfinite(p.metrics[key])]
            if weighted:
                metrics[key] = sum(v * n for v, n in weighted) / sum(n for _, n in weighted)
        failures: dict[str, int] = {}
        for p in parts:
            for kind, count in p.failures.items():
                failures[kind] = failures.get(kind, 0) + count
        extras: dict[str, Any] = {}
        total = None
        for p in parts:
            matrix = diag.transition_counts(p) if "transition_counts" in p.extras else None
            if matrix is not None:
                total = diag.add_matrices(total, matrix)
                extras["labels"] = p.extras.get("labels")
        if total is not None:
            extras["transition_counts"] = total
        merged[name] = RewardOutput(scores=scores, step_scores=step_scores, metrics=metrics, details=details,
                                    failures=failures, extras=extras, seconds=sum(p.seconds for p in parts))
    return merged


def _stats(values: list[float | None]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    if not present:
        return {"mean": None, "std": None, "min": None, "max": None, "n_scored": 0, "none": len(values)}
    mean = sum(present) / len(present)
    std = math.sqrt(sum((v - mean) ** 2 for v in present) / len(present))
    return {"mean": mean, "std": std, "min": min(present), "max": max(present), "n_scored": len(present),
            "none": len(values) - len(present)}


def build_report(outputs: dict[str, RewardOutput], types: dict[str, str], weights: dict[str, float],
                 accuracy_scores: list[float | None], accuracy_source: str) -> dict[str, Any]:
    """The numbers of ``report.json`` from the merged outputs of every component."""
    kinds = diag.component_kinds(types, outputs)
    judge = next((n for n, k in kinds.items() if k == diag.FIRST_ERROR), None)
    records = diag.first_error_records(outputs[judge]) if judge is not None else None
    correct = [None if s is None else s >= 1.0 for s in accuracy_scores]
    stats = diag.process_error_stats(correct, records)
    notes = []
    if judge is None:
        notes.append("no first_error component in the recipe: reasoning_aware_accuracy and inflation are null")
    elif len([n for n, k in kinds.items() if k == diag.FIRST_ERROR]) > 1:
        notes.append(f"several first-error components; reasoning-aware accuracy uses {judge!r}")
    report: dict[str, Any] = {
        "n": len(accuracy_scores),
        "answer_accuracy": stats["answer_accuracy"],
        "reasoning_aware_accuracy": stats["reasoning_aware_accuracy"],
        "inflation": stats["inflation"],
        "process_error_rate": stats["process_error_rate"],
        "accuracy_source": accuracy_source,
        "first_error_component": judge,
        "first_error_unjudged": None if stats["first_error_unjudged"] is None else int(stats["first_error_unjudged"]),
        "components": {},
        "correlations": diag.component_correlations({k: o.scores for k, o in outputs.items()}),
        "notes": notes,
    }
    for name, output in outputs.items():
        report["components"][name] = {
            "type": types.get(name), "weight": weights.get(name), **_stats(output.scores),
            "metrics": dict(output.metrics), "failures": dict(output.failures), "seconds": output.seconds,
        }
    totals = [sum(weights[k] * o.scores[i] for k, o in outputs.items() if o.scores[i] is not None)
              if any(o.scores[i] is not None for o in outputs.values()) else None
              for i in range(len(accuracy_scores))]
    report["reward"] = _stats(totals)
    if records is not None:
        found = [r for r in records if r.index is not None and r.index >= 0]
        top = max([r.index for r in found], default=-1)
        edges = [i / diag.RELATIVE_BINS for i in range(diag.RELATIVE_BINS + 1)]
        report["first_error"] = {
            **diag.first_error_scalars(records),
            "index_histogram": diag.histogram([r.index for r in found], [i - 0.5 for i in range(top + 2)]),
            "relative_histogram": diag.histogram([diag.relative_position(r.index, r.num_steps) for r in found], edges),
            "relative_bin_edges": edges,
        }
    for name, kind in kinds.items():
        if kind == diag.TRACE:
            output = outputs[name]
            report.setdefault("trace", {})[name] = {
                "state_validity": output.metrics.get("state_validity"),
                "transition_coherence": output.metrics.get("transition_coherence"),
                "element_share": {k.split("/", 1)[1]: v for k, v in output.metrics.items() if k.startswith("element_share/")},
                "labels": output.extras.get("labels") or diag.TRACE_LABELS,
                "transition_counts": output.extras.get("transition_counts"),
            }
        elif kind == diag.RECEVAL:
            report.setdefault("receval", {})[name] = {**diag.receval_stats(outputs[name]),
                                                      "step_value_by_position": diag.receval_position_profile(outputs[name])}
    return report


# --- writing --------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def report_markdown(report: dict[str, Any]) -> str:
    lines = [f"# procrl evaluation: {report.get('model')} on {report.get('split')} (n = {report['n']})", ""]
    lines += ["| metric | value |", "|---|---|"]
    for key in ("answer_accuracy", "reasoning_aware_accuracy", "inflation", "process_error_rate", "first_error_unjudged"):
        lines.append(f"| {key} | {_fmt(report.get(key))} |")
    lines += ["", f"Answer accuracy from: {report['accuracy_source']}. First-error judge: "
              f"{report['first_error_component'] or 'none'}.", ""]
    lines += ["## Components", "", "| component | type | weight | mean | std | scored | none | failures |", "|---|---|---|---|---|---|---|---|"]
    for name, c in report["components"].items():
        failures = ", ".join(f"{k}: {v}" for k, v in c["failures"].items()) or "-"
        lines.append(f"| {name} | {c['type']} | {_fmt(c['weight'])} | {_fmt(c['mean'])} | {_fmt(c['std'])} | "
                     f"{c['n_scored']} | {c['none']} | {failures} |")
    lines.append(f"| weighted total | | | {_fmt(report['reward']['mean'])} | {_fmt(report['reward']['std'])} | "
                 f"{report['reward']['n_scored']} | {report['reward']['none']} | |")
    if report["correlations"]:
        lines += ["", "## Correlations between components", "", "| pair | Pearson r |", "|---|---|"]
        lines += [f"| {pair} | {value:.3f} |" for pair, value in report["correlations"].items()]
    if "first_error" in report:
        fe = report["first_error"]
        lines += ["", "## First error", "", f"error found in {_fmt(fe.get('error_found_rate'))} of judged completions; "
                  f"mean index {_fmt(fe.get('mean_index'))}, mean relative position {_fmt(fe.get('mean_relative_position'))}; "
                  f"index histogram {fe['index_histogram']}, relative histogram {fe['relative_histogram']}"]
    for name, t in report.get("trace", {}).items():
        shares = ", ".join(f"{k} {v:.3f}" for k, v in t["element_share"].items()) or "n/a"
        lines += ["", f"## TRACE ({name})", "", f"state validity {_fmt(t['state_validity'])}, transition coherence "
                  f"{_fmt(t['transition_coherence'])}; element shares: {shares}"]
    for name, r in report.get("receval", {}).items():
        lines += ["", f"## ReCEval ({name})", "", ", ".join(f"{k} {_fmt(v)}" for k, v in r.items()) or "n/a"]
    if report.get("plots"):
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in report["plots"]]
    if report.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def write_plots(outputs: dict[str, RewardOutput], types: dict[str, str], directory: Path) -> list[str]:
    """PNG files written (component distributions always; first-error and TRACE when present)."""
    written = []
    figure = diag.plot_component_distributions({k: o.scores for k, o in outputs.items()})
    figure.savefig(directory / "component_distributions.png", bbox_inches="tight")
    written.append("component_distributions.png")
    kinds = diag.component_kinds(types, outputs)
    judge = next((n for n, k in kinds.items() if k == diag.FIRST_ERROR), None)
    if judge is not None:
        figure = diag.plot_first_error_histogram(diag.first_error_records(outputs[judge]), title=f"first error ({judge})")
        figure.savefig(directory / "first_error_histogram.png", bbox_inches="tight")
        written.append("first_error_histogram.png")
    traces = [n for n, k in kinds.items() if k == diag.TRACE and diag.transition_counts(outputs[n]) is not None]
    for i, name in enumerate(traces):
        file = "trace_transitions.png" if i == 0 else f"trace_transitions_{name}.png"
        figure = diag.plot_transition_heatmap(diag.transition_counts(outputs[name]), outputs[name].extras.get("labels"),
                                              title=f"{name}: sentence label transitions")
        figure.savefig(directory / file, bbox_inches="tight")
        written.append(file)
    return written


def write_report(report: dict[str, Any], directory: Path) -> None:
    from procrl.scoring import _jsonable

    (directory / "report.json").write_text(json.dumps(_jsonable(report), indent=2) + "\n")
    (directory / "report.md").write_text(report_markdown(report))


# --- the command ------------------------------------------------------------------------------


def score_completions(mix: RewardMix, questions, completions, golds, batch_size: int = 64):
    """Score with the mix in batches; returns the merged outputs and the per-sample rows."""
    chunks = []
    for start in range(0, len(completions), batch_size):
        batch = RewardBatch.from_texts(completions[start : start + batch_size], questions[start : start + batch_size],
                                       golds[start : start + batch_size])
        chunks.append(mix.score_all(batch))
    return aggregate_outputs(chunks)


def _accuracy_scores(outputs, types, questions, completions, golds) -> tuple[list[float | None], str]:
    kinds = diag.component_kinds(types, outputs)
    name = next((n for n, k in kinds.items() if k == diag.ACCURACY), None)
    if name is not None:
        return outputs[name].scores, f"component {name!r}"
    from procrl.rewards.accuracy import AccuracyReward

    component = AccuracyReward(AccuracyReward.Settings(), name="accuracy")
    return component.score(RewardBatch.from_texts(completions, questions, golds)).scores, "accuracy (default settings; not in the recipe)"


def evaluate(recipe, model: str | None = None, split: str = "test", limit: int | None = None,
             output_dir: str | Path | None = None, batch_size: int = 8, max_new_tokens: int | None = None,
             backend: str = "auto", log_wandb: bool = False, completions: list[str] | None = None) -> dict[str, Any]:
    """Generate (unless ``completions`` are given), score, write the report; returns it."""
    from procrl.data import load_examples
    from procrl.models import resolve_model_path

    if limit is not None and limit < 1:
        raise ConfigError(f"--limit: must be >= 1, got {limit}")
    model = model or recipe.model.name_or_path
    directory = Path(output_dir or Path(recipe.output_dir) / f"eval-{split}")
    directory.mkdir(parents=True, exist_ok=True)
    from procrl.data import _is_local_file

    local_notes = []
    if _is_local_file(recipe.data.dataset):
        # a local file has no splits: never evaluate a test split on the training file by accident
        if "train" in Path(recipe.data.dataset).name.lower() and split != "train":
            raise ConfigError(f"data.dataset is the local file {recipe.data.dataset!r}, which looks like training data; "
                              f"evaluate on the {split} file with --set data.dataset=PATH")
        local_notes.append(f"data.dataset is a local file ({recipe.data.dataset}); --split {split} does not select from it")
    examples = load_examples(recipe.data, split)
    if limit is not None:
        examples = examples.select(range(min(limit, len(examples))))
    questions, golds = list(examples["question"]), list(examples["answer"])
    mix = RewardMix(recipe.rewards)
    generation: dict[str, Any] = {}
    tokenizer = None
    if completions is None:
        model_path = resolve_model_path(model)
        tokenizer = _load_tokenizer(model_path, recipe)
        max_new_tokens = max_new_tokens or int(recipe.trainer_args.get("max_completion_length", 256))
        started = time.perf_counter()
        completions, used = generate_completions(model_path, _prompt_texts(recipe, questions, tokenizer), tokenizer,
                                                 recipe, max_new_tokens, batch_size, backend)
        generation = {"backend": used, "max_new_tokens": max_new_tokens, "batch_size": batch_size, "greedy": True,
                      "seconds": time.perf_counter() - started}
    elif len(completions) != len(questions):
        raise ConfigError(f"{len(completions)} completions for {len(questions)} problems")
    import torch

    # components with their own models (NLI, taggers, judges) run where the policy ran
    mix.bind(RuntimeContext(device="cuda" if torch.cuda.is_available() else "cpu", tokenizer=tokenizer))
    types = {name: spec.type for name, spec in mix.specs.items()}
    outputs = score_completions(mix, questions, completions, golds)
    accuracy, source = _accuracy_scores(outputs, types, questions, completions, golds)
    report = build_report(outputs, types, {n: s.weight for n, s in mix.specs.items()}, accuracy, source)
    report = {"recipe": recipe.path, "model": model, "split": split, **report, "generation": generation}
    report["notes"] = local_notes + report["notes"]
    report["plots"] = write_plots(outputs, types, directory)
    records = diag.first_error_records(outputs[report["first_error_component"]]) if report["first_error_component"] else None
    with (directory / "completions.jsonl").open("w", encoding="utf-8") as handle:
        for i, completion in enumerate(completions):
            row = {"question": questions[i], "answer": golds[i], "completion": completion, "correct": accuracy[i],
                   "first_error": records[i].index if records is not None else None,
                   "rewards": {k: o.scores[i] for k, o in outputs.items()}}
            handle.write(json.dumps(row) + "\n")
    write_report(report, directory)
    if log_wandb:
        _log_wandb(report, outputs, types, directory, recipe, completions, questions)
    return report


def _log_wandb(report, outputs, types, directory: Path, recipe, completions, questions) -> None:
    import wandb

    run = wandb.init(project=recipe.logging.wandb_project or "procrl", entity=recipe.logging.wandb_entity,
                     job_type="evaluate", config={"model": report["model"], "split": report["split"], "n": report["n"]})
    scalars = {f"eval/{k}": report[k] for k in ("answer_accuracy", "reasoning_aware_accuracy", "inflation",
                                                 "process_error_rate") if report[k] is not None}
    scalars.update({f"eval/rewards/{k}/mean": c["mean"] for k, c in report["components"].items() if c["mean"] is not None})
    images = {f"eval/{Path(p).stem}": wandb.Image(str(directory / p)) for p in report["plots"]}
    table = wandb.Table(columns=["question", "completion", "steps", "first_error", *[f"reward/{k}" for k in outputs]])
    batch = RewardBatch.from_texts(completions, questions)
    for row in diag.step_rows(batch, outputs, types):
        table.add_data(row["question"], row["completion"], row["steps"], str(row["first_error"]),
                       *[row[f"reward/{k}"] for k in outputs])
    run.log({**scalars, **images, "eval/completions": table})
    run.summary.update(scalars)
    run.finish()


def add_evaluate_command(commands) -> None:
    """The ``procrl evaluate`` subcommand (registered by procrl.cli)."""
    p = commands.add_parser("evaluate", help="Generate on a test split, score with the recipe's mix, report "
                                             "answer vs reasoning-aware accuracy.")
    p.add_argument("--recipe", required=True, help="Path to a recipe YAML file (its rewards, data and prompt are used).")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="Override a recipe key (dotted path; value parsed as YAML). Repeatable.")
    p.add_argument("--model", default=None, help="Model directory, Hub id or procrl:tiny-qwen2 (default: the recipe's).")
    p.add_argument("--split", default="test", help="Dataset split to evaluate on.")
    p.add_argument("--limit", type=int, default=None, help="Evaluate only the first N problems.")
    p.add_argument("--output-dir", default=None, help="Where report.json, report.md and the PNGs go "
                                                      "(default: <recipe output_dir>/eval-<split>).")
    p.add_argument("--batch-size", type=int, default=8, help="Prompts generated together (transformers backend).")
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="Generation length (default: the recipe's trainer.max_completion_length, else 256).")
    p.add_argument("--backend", choices=["auto", "vllm", "transformers"], default="auto",
                   help="'auto': vLLM when installed and a GPU is present, else transformers.")
    p.add_argument("--wandb", action="store_true", help="Also log the report, plots and completions to W&B.")
    p.set_defaults(handler=_cmd_evaluate)


def _cmd_evaluate(args) -> int:
    from procrl.recipe import load_recipe

    recipe = load_recipe(args.recipe, args.overrides)
    report = evaluate(recipe, model=args.model, split=args.split, limit=args.limit, output_dir=args.output_dir,
                      batch_size=args.batch_size, max_new_tokens=args.max_new_tokens, backend=args.backend,
                      log_wandb=args.wandb)
    directory = Path(args.output_dir or Path(recipe.output_dir) / f"eval-{args.split}")
    for key in ("n", "answer_accuracy", "reasoning_aware_accuracy", "inflation", "process_error_rate"):
        print(f"{key:<26} {_fmt(report[key])}")
    for note in report["notes"]:
        print(f"note: {note}")
    print(f"wrote {directory / 'report.json'}, {directory / 'report.md'} and {', '.join(report['plots'])}")
    return 0
