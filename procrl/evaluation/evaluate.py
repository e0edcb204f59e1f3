"""Reasoning-aware evaluation: ``procrl evaluate --recipe R --model M [--split test] [--limit N]``.

Generates one greedy answer per problem, or ``--num-samples k`` sampled ones (``--temperature``,
``--top-p``, ``--seed``; vLLM when installed and a GPU is present, else batched transformers
generation), scores them with the recipe's reward mix and reports answer-only accuracy,
reasoning-aware accuracy (answer right AND the first-error component found no error), their gap
(ReTraceQA's inflation), pass@k and maj@k with their reasoning-aware variants
(``procrl/observe/eval_metrics.py``), each with its standard error, and the mean of every component.
Writes ``report.json``, ``report.md``, ``completions.jsonl`` and PNG plots to the output directory
(default: a folder named after the model, :func:`default_output_dir`).

Which first-error judge decides reasoning-aware accuracy: the recipe's ``data.eval_judge`` (a
first_error component, weight 0 to keep it out of the trained reward), or ``--judge`` (a component
name, or a backend such as ``reference``: an evaluation-only component ``eval_judge`` with weight 0
is added, its settings reachable with ``--set rewards.eval_judge.KEY=VALUE``); by default the mix's
first first_error component. The report names the judge and whether the trained mix pays for it
(``evaluation_judge``), so that a policy trained on a judge is not graded by that judge unawares.
"""

from __future__ import annotations

import io
import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError
from procrl.core.folders import check_folder, claim_folder, write_file
from procrl.core.redaction import redact
from procrl.observe import plots
from procrl.observe import stats as diag
from procrl.observe.eval_metrics import SampleOutcome, summarize
from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RewardBatch, RewardOutput, RuntimeContext

__all__ = [
    "Sampling",
    "aggregate_outputs",
    "build_report",
    "default_output_dir",
    "evaluate",
    "format_summary",
    "generate_completions",
    "judge_overrides",
    "sample_outcomes",
    "write_report",
]


# Samples per problem: generated in one call per batch of prompts, so memory grows with it (a
# million asked for a 30 GB allocation); pass@k estimates rarely go past k = 1000.
MAX_SAMPLES = 1024


@dataclass(frozen=True)
class Sampling:
    """How completions are drawn: ``temperature`` 0 is greedy (one completion per problem);
    above 0, ``num_samples`` completions per problem with nucleus ``top_p`` (no top-k), the
    random generator seeded with ``seed`` (same seed, model, batch size and backend: same samples)."""

    temperature: float = 0.0
    top_p: float = 1.0
    num_samples: int = 1
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def validate(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature >= 0.0):
            raise ConfigError(f"--temperature: must be >= 0 (0 = greedy), got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ConfigError(f"--top-p: must be in (0, 1], got {self.top_p}")
        if not 1 <= self.num_samples <= MAX_SAMPLES:
            raise ConfigError(
                f"--num-samples: must be in [1, {MAX_SAMPLES}], got {self.num_samples} (a problem's samples "
                f"are generated together: --batch-size x --num-samples sequences at once)"
            )
        if self.greedy and self.top_p != 1.0:
            raise ConfigError(
                f"--top-p {self.top_p:g} has no effect with --temperature 0 (greedy decoding); sample with "
                f"--temperature > 0 (e.g. 0.7), or drop --top-p"
            )
        if self.greedy and self.num_samples > 1:
            raise ConfigError(
                f"--num-samples {self.num_samples} with --temperature 0 (greedy) gives {self.num_samples} "
                f"identical completions; sample with --temperature > 0 (e.g. 0.7)"
            )


# --- generation (the model at the edge, loaded once) ---------------------------------------------


def _load_tokenizer(source, recipe, notes: list[str] | None = None) -> Any:
    """The evaluated model's own tokenizer (a GGUF's from its file); the recipe's when a
    checkpoint directory has no tokenizer files."""
    from procrl.core.paths import has_tokenizer_files
    from procrl.models.loading import ModelSource, load_tokenizer, load_tokenizer_from

    source = source if isinstance(source, ModelSource) else ModelSource(str(source))
    model_path = source.path
    fallback = not source.gguf_file and Path(model_path).is_dir() and not has_tokenizer_files(model_path)
    if not fallback:
        try:
            tokenizer = load_tokenizer_from(source, trust_remote_code=recipe.model.trust_remote_code)
        except (OSError, ValueError) as error:
            if source.gguf_file:
                raise ConfigError(
                    f"--model: cannot read the tokenizer of {source.describe()} ({' '.join(str(error).split())[:200]})"
                ) from None
            fallback = True
    if fallback:  # a checkpoint saved without its tokenizer (transformers would build an empty one): the recipe's
        tokenizer_name = recipe.model.tokenizer or recipe.model.name_or_path
        try:
            tokenizer = load_tokenizer(recipe.model)
        except (OSError, ValueError) as error:
            raise ConfigError(
                f"--model: {model_path} has no tokenizer files, and the recipe's tokenizer {tokenizer_name!r} "
                f"did not load ({' '.join(str(error).split())[:200]}); set model.tokenizer"
            ) from None
        vocabulary = _vocab_size(model_path)
        if vocabulary is not None and len(tokenizer) > vocabulary:
            raise ConfigError(
                f"--model: {model_path} has no tokenizer files, and the recipe's tokenizer {tokenizer_name!r} "
                f"has {len(tokenizer):,} tokens for a model of {vocabulary:,}: not its tokenizer; set "
                f"model.tokenizer to the one the model was trained with"
            )
        if notes is not None:
            notes.append(f"{model_path} has no tokenizer files; used the recipe's tokenizer ({tokenizer_name})")
    if len(tokenizer) < 2:
        raise ConfigError(f"--model: the tokenizer of {model_path} is empty ({len(tokenizer)} tokens)")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _load_model(source, recipe) -> Any:
    """The model to generate with: a checkpoint or Hub model (GGUF dequantized), or a LoRA
    adapter directory applied to the recipe's policy (so an adapter trained on a GGUF policy
    finds its base, which its adapter_config.json cannot name)."""
    from procrl.models.loading import load_causal_lm, load_policy, pretrained_kwargs

    if not source.gguf_file and (Path(source.path) / "adapter_config.json").is_file():
        from peft import PeftModel

        return PeftModel.from_pretrained(load_policy(recipe.model), source.path)
    return load_causal_lm(source, **pretrained_kwargs(recipe.model))


def _vocab_size(model_path: str) -> int | None:
    try:
        config = json.loads((Path(model_path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    size = (config.get("text_config") or config).get("vocab_size")
    return size if isinstance(size, int) else None


def _prompt_texts(recipe, questions: list[str], tokenizer, kinds: list[str | None] | None = None) -> list[str]:
    from procrl.data.prompts import prompt_text

    kinds = kinds or [None] * len(questions)
    return [prompt_text(recipe.data, tokenizer, question, kind) for question, kind in zip(questions, kinds)]


def generate_completions(
    model,
    prompts: list[str],
    tokenizer,
    recipe,
    max_new_tokens: int,
    batch_size: int = 8,
    backend: str = "auto",
    sampling: Sampling = Sampling(),
) -> tuple[list[str], str]:
    """``sampling.num_samples`` completions per prompt, grouped by prompt (prompt i's are at
    ``i * k .. i * k + k - 1``); returns them and the backend used. ``model``: a path or a
    :class:`~procrl.models.loading.ModelSource` (a GGUF generates with transformers: the vLLM path takes
    a checkpoint directory)."""
    from procrl.models.generation import generate_texts, vllm_available
    from procrl.models.loading import ModelSource

    source = model if isinstance(model, ModelSource) else ModelSource(str(model))
    model_path = source.path
    k = sampling.num_samples
    if source.gguf_file and backend == "vllm":
        raise ConfigError(
            f"--backend vllm: {source.describe()} is a GGUF checkpoint; evaluate it with --backend "
            "transformers, or a trained checkpoint (plain safetensors) with vLLM"
        )
    if backend == "vllm" or (backend == "auto" and vllm_available(on_gpu=True) and not source.gguf_file):
        from vllm import LLM, SamplingParams

        llm = LLM(
            model=model_path,
            tokenizer=model_path,
            dtype=recipe.model.dtype,
            trust_remote_code=recipe.model.trust_remote_code,
            seed=sampling.seed,
        )
        params = SamplingParams(
            n=k, temperature=sampling.temperature, top_p=sampling.top_p, seed=sampling.seed, max_tokens=max_new_tokens
        )
        results = llm.generate(prompts, params)
        return [output.text for r in results for output in r.outputs], "vllm"

    import torch
    from transformers import set_seed

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = _load_model(source, recipe).to(device).eval()
    tokenizer.padding_side = "left"  # decoder-only batched generation continues after the prompt
    if sampling.greedy:
        options: dict[str, Any] = {"do_sample": False}
    else:
        options = {
            "do_sample": True,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": 0,
            "num_return_sequences": k,
        }
        set_seed(sampling.seed)
    completions = generate_texts(
        model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size, sampling=options, device=device
    )  # k per prompt, in prompt order
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
            step_scores = [
                s for p, n in zip(parts, sizes) for s in (p.step_scores if p.step_scores is not None else [None] * n)
            ]
        metrics: dict[str, float] = {}
        for key in {k for p in parts for k in p.metrics}:
            weighted = [
                (p.metrics[key], n)
                for p, n in zip(parts, sizes)
                if key in p.metrics and p.metrics[key] is not None and math.isfinite(p.metrics[key])
            ]
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
        merged[name] = RewardOutput(
            scores=scores,
            step_scores=step_scores,
            metrics=metrics,
            details=details,
            failures=failures,
            extras=extras,
            seconds=sum(p.seconds for p in parts),
        )
    return merged


def _stats(values: list[float | None]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    if not present:
        return {"mean": None, "std": None, "min": None, "max": None, "n_scored": 0, "none": len(values)}
    mean = sum(present) / len(present)
    std = math.sqrt(sum((v - mean) ** 2 for v in present) / len(present))
    return {
        "mean": mean,
        "std": std,
        "min": min(present),
        "max": max(present),
        "n_scored": len(present),
        "none": len(values) - len(present),
    }


ACCURACY_KEYS = ("answer_accuracy", "reasoning_aware_accuracy", "inflation", "process_error_rate")


def sample_outcomes(
    accuracy_scores: list[float | None],
    records: list | None,
    completions: list[str],
    num_samples: int = 1,
    specs: list | None = None,
) -> list[SampleOutcome]:
    """Per completion: its problem (completions grouped by problem, ``num_samples`` each), answer
    right or not, the judge's verdict and the predicted answer (for majority voting: a number, an
    option label, yes/no as a bool; ``specs``: each completion's answer spec)."""
    from procrl.core.choices import NUMBER, predict

    return [
        SampleOutcome(
            problem=i // num_samples,
            correct=None if score is None else score >= 1.0,
            verdict=records[i].index if records is not None else None,
            answer=predict(completions[i], specs[i] if specs else NUMBER)[0],
        )
        for i, score in enumerate(accuracy_scores)
    ]


def build_report(
    outputs: dict[str, RewardOutput],
    types: dict[str, str],
    weights: dict[str, float],
    accuracy_scores: list[float | None],
    accuracy_source: str,
    completions: list[str] | None = None,
    golds: list[str] | None = None,
    num_samples: int = 1,
    judge: str | None = None,
    specs: list | None = None,
) -> dict[str, Any]:
    """The numbers of ``report.json`` from the merged outputs of every component: completions are
    grouped by problem, ``num_samples`` each; ``golds`` (one per problem) enable maj@k; ``judge``:
    the first-error component deciding reasoning-aware accuracy (default: the first); ``specs``:
    each problem's answer spec (:mod:`procrl.core.choices`; default: numbers)."""
    from procrl.core.choices import NUMBER, gold_answer

    kinds = diag.component_kinds(types, outputs)
    judge = diag.evaluation_judge(kinds, judge)
    records = diag.first_error_records(outputs[judge]) if judge is not None else None
    correct = [None if s is None else s >= 1.0 for s in accuracy_scores]
    stats = diag.process_error_stats(correct, records)
    problem_specs = specs or [NUMBER] * (len(golds) if golds is not None else 0)
    sample_specs = [spec for spec in problem_specs for _ in range(num_samples)] if specs else None
    outcomes = sample_outcomes(
        accuracy_scores, records, completions or [""] * len(accuracy_scores), num_samples, sample_specs
    )
    summary = summarize(
        outcomes,
        judged=judge is not None,
        golds=[gold_answer(g, spec) for g, spec in zip(golds, problem_specs)]
        if golds is not None and completions is not None
        else None,
    )
    notes = []
    if judge is None:
        notes.append("no first_error component in the recipe: reasoning-aware accuracies and inflation are null")
    elif len([n for n, k in kinds.items() if k == diag.FIRST_ERROR]) > 1:
        notes.append(f"several first-error components; reasoning-aware accuracy uses {judge!r}")
    if judge is not None and weights.get(judge):
        notes.append(
            f"the evaluation judge {judge!r} is in the trained mix (weight {weights[judge]:g}): a policy trained "
            "on it is graded by it; name another with data.eval_judge or --judge"
        )
    report: dict[str, Any] = {
        "n": summary["problems"],
        "num_samples": num_samples,
        "completions": summary["completions"],
    }
    for key in ACCURACY_KEYS:
        report[key] = summary.get(key)
        report[f"{key}_stderr"] = summary.get(f"{key}_stderr")
    report["sampled"] = {k: v for k, v in summary.items() if "@" in k}  # pass@k, maj@k and their errors
    report.update(
        {
            "accuracy_source": accuracy_source,
            "first_error_component": judge,
            "evaluation_judge": None
            if judge is None
            else {
                "component": judge,
                "type": types.get(judge),
                "weight": weights.get(judge),
                "trained_on": bool(weights.get(judge)),
            },
            "first_error_unjudged": None
            if stats["first_error_unjudged"] is None
            else int(stats["first_error_unjudged"]),
            "components": {},
            "correlations": diag.component_correlations({k: o.scores for k, o in outputs.items()}),
            "notes": notes,
        }
    )
    for name, output in outputs.items():
        report["components"][name] = {
            "type": types.get(name),
            "weight": weights.get(name),
            **_stats(output.scores),
            "metrics": dict(output.metrics),
            "failures": dict(output.failures),
            "seconds": output.seconds,
        }
    totals = [
        sum(weights[k] * o.scores[i] for k, o in outputs.items() if o.scores[i] is not None)
        if any(o.scores[i] is not None for o in outputs.values())
        else None
        for i in range(len(accuracy_scores))
    ]
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
        categories = diag.category_counts(records)
        if categories is not None:  # ReTraceQA's error categories: every error found, and those behind a right answer
            report["first_error"]["categories"] = {
                "all": categories,
                "right_answer": diag.category_counts(records, correct),
            }
    for name, kind in kinds.items():
        if kind == diag.TRACE:
            output = outputs[name]
            report.setdefault("trace", {})[name] = {
                "state_validity": output.metrics.get("state_validity"),
                "transition_coherence": output.metrics.get("transition_coherence"),
                "element_share": {
                    k.split("/", 1)[1]: v for k, v in output.metrics.items() if k.startswith("element_share/")
                },
                "labels": output.extras.get("labels") or diag.TRACE_LABELS,
                "transition_counts": output.extras.get("transition_counts"),
            }
        elif kind == diag.RECEVAL:
            report.setdefault("receval", {})[name] = {
                **diag.receval_stats(outputs[name]),
                "step_value_by_position": diag.receval_position_profile(outputs[name]),
            }
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


def _with_error(report: dict[str, Any], key: str, source: dict[str, Any] | None = None) -> str:
    source = report if source is None else source
    value, error = source.get(key), source.get(f"{key}_stderr")
    return _fmt(value) if value is None or error is None else f"{value:.4f} ± {error:.4f}"


def report_markdown(report: dict[str, Any]) -> str:
    generation = report.get("generation") or {}
    how = (
        "greedy"
        if generation.get("greedy", True)
        else f"{report.get('num_samples', 1)} samples per problem, temperature {generation.get('temperature')}, "
        f"top-p {generation.get('top_p')}, seed {generation.get('seed')}"
    )
    kind = f", answers: {report['answer_kind']}" if report.get("answer_kind") else ""
    lines = [
        f"# procrl evaluation: {report.get('model')} on {report.get('split')} (n = {report['n']}, {how}{kind})",
        "",
    ]
    lines += ["| metric | value ± standard error |", "|---|---|"]
    for key in ACCURACY_KEYS:
        lines.append(f"| {key} | {_with_error(report, key)} |")
    for key in report.get("sampled", {}) if report.get("num_samples", 1) > 1 else ():  # greedy: pass@1 = accuracy
        if not key.endswith("_stderr"):
            lines.append(f"| {key} | {_with_error(report, key, report['sampled'])} |")
    lines.append(f"| first_error_unjudged | {_fmt(report.get('first_error_unjudged'))} |")
    lines += [
        "",
        "Standard errors are over problems (binomial for one sample per problem); process_error_rate's is "
        "binomial over the right, judged completions. pass@k: unbiased estimator (Chen et al. 2021).",
    ]
    lines += [
        "",
        f"Answer accuracy from: {report['accuracy_source']}. First-error judge: "
        f"{report['first_error_component'] or 'none'}.",
        "",
    ]
    lines += [
        "## Components",
        "",
        "| component | type | weight | mean | std | scored | none | failures |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, c in report["components"].items():
        failures = ", ".join(f"{k}: {v}" for k, v in c["failures"].items()) or "-"
        lines.append(
            f"| {name} | {c['type']} | {_fmt(c['weight'])} | {_fmt(c['mean'])} | {_fmt(c['std'])} | "
            f"{c['n_scored']} | {c['none']} | {failures} |"
        )
    lines.append(
        f"| weighted total | | | {_fmt(report['reward']['mean'])} | {_fmt(report['reward']['std'])} | "
        f"{report['reward']['n_scored']} | {report['reward']['none']} | |"
    )
    if report["correlations"]:
        lines += ["", "## Correlations between components", "", "| pair | Pearson r |", "|---|---|"]
        lines += [f"| {pair} | {value:.3f} |" for pair, value in report["correlations"].items()]
    if "first_error" in report:
        fe = report["first_error"]
        lines += [
            "",
            "## First error",
            "",
            f"error found in {_fmt(fe.get('error_found_rate'))} of judged completions; "
            f"mean index {_fmt(fe.get('mean_index'))},"
            f" mean relative position {_fmt(fe.get('mean_relative_position'))}; "
            f"index histogram {fe['index_histogram']}, relative histogram {fe['relative_histogram']}",
        ]
        if fe.get("categories"):
            table = fe["categories"]
            lines += [
                "",
                "Errors found per category (ReTraceQA's; `none`: the judge named no category):",
                "",
                "| category | all errors | behind a right answer |",
                "|---|---|---|",
            ]
            lines += [f"| {c} | {n} | {table['right_answer'][c]} |" for c, n in table["all"].items()]
    for name, t in report.get("trace", {}).items():
        shares = ", ".join(f"{k} {v:.3f}" for k, v in t["element_share"].items()) or "n/a"
        lines += [
            "",
            f"## TRACE ({name})",
            "",
            f"state validity {_fmt(t['state_validity'])}, transition coherence "
            f"{_fmt(t['transition_coherence'])}; element shares: {shares}",
        ]
    for name, r in report.get("receval", {}).items():
        lines += ["", f"## ReCEval ({name})", "", ", ".join(f"{k} {_fmt(v)}" for k, v in r.items()) or "n/a"]
    if report.get("plots"):
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in report["plots"]]
    if report.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def write_plots(
    outputs: dict[str, RewardOutput],
    types: dict[str, str],
    directory: Path,
    judge: str | None = None,
    correct: list[bool | None] | None = None,
) -> list[str]:
    """PNG files written (component distributions always; first-error and TRACE when present)."""
    written = []

    def save(figure, name: str) -> None:  # rendered in memory, written into the folder by its rule
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", bbox_inches="tight")
        write_file(directory, name, buffer.getvalue())
        written.append(name)

    save(
        plots.plot_component_distributions({k: o.scores for k, o in outputs.items()}, types=types),
        "component_distributions.png",
    )
    kinds = diag.component_kinds(types, outputs)
    judge = diag.evaluation_judge(kinds, judge)
    if judge is not None:
        records = diag.first_error_records(outputs[judge])
        save(plots.plot_first_error_histogram(records, title=f"first error ({judge})"), "first_error_histogram.png")
        if correct is not None and diag.category_counts(records) is not None:
            counts = {"all": diag.category_counts(records), "right answer": diag.category_counts(records, correct)}
            save(plots.plot_error_categories(counts, title=f"error categories ({judge})"), "first_error_categories.png")
    traces = [n for n, k in kinds.items() if k == diag.TRACE and diag.transition_counts(outputs[n]) is not None]
    for i, name in enumerate(traces):
        file = "trace_transitions.png" if i == 0 else f"trace_transitions_{name}.png"
        save(
            plots.plot_transition_heatmap(
                diag.transition_counts(outputs[name]),
                outputs[name].extras.get("labels"),
                title=f"{name}: sentence label transitions",
            ),
            file,
        )
    return written


def write_report(report: dict[str, Any], directory: Path) -> None:
    """report.json and report.md, secrets redacted (procrl/core/redaction.py)."""
    from procrl.evaluation.score import _jsonable

    report = redact(report)
    write_file(directory, "report.json", json.dumps(_jsonable(report), indent=2) + "\n")
    write_file(directory, "report.md", report_markdown(report))


# --- where the report goes -----------------------------------------------------------------------

EVALUATE = "evaluate"  # the command named in the folder marker (procrl/core/folders.py)


def _folder_name(name: str) -> str:
    """A model's name as one folder name: ``procrl:tiny-reasoner`` -> ``procrl-tiny-reasoner``,
    ``Qwen/Qwen2.5-7B-Instruct`` -> ``Qwen--Qwen2.5-7B-Instruct`` (the Hub cache's spelling)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name.replace("/", "--")).strip("-.") or "model"


def default_output_dir(recipe, model: str | None = None, split: str = "test", gguf_file: str | None = None) -> Path:
    """Where ``procrl evaluate`` writes without ``--output-dir``: a folder named after the model, so
    that evaluating the start model and then the trained one leaves two reports.

    * a procrl run's output dir (it holds ``run_info.json``): its own ``eval-<split>``;
    * a checkpoint of one: the run's ``eval-<split>-checkpoint-N`` (not inside the checkpoint,
      which checkpoint rotation deletes);
    * anything else (an embedded ``procrl:`` name, a Hub id, a ``.gguf`` file, another local
      directory; without ``--model``, the recipe's policy): the recipe's
      ``<output_dir>/eval-<split>-<model name>``, the name made a folder name (a local path: its
      last part; a GGUF inside a repository adds the file's name)."""
    name, file = (recipe.model.name_or_path, recipe.model.gguf_file) if model is None else (model, gguf_file)
    path = Path(name).expanduser()
    split = _folder_name(split)  # one folder name, whatever the split is called (never a path: ../x)
    if path.is_dir() and (path / "run_info.json").is_file():
        return path / f"eval-{split}"
    if path.is_dir() and path.name.startswith("checkpoint-") and (path.parent / "run_info.json").is_file():
        return path.parent / f"eval-{split}-{path.name}"
    label = (path.stem if path.is_file() else path.name) if path.exists() else name
    if file:
        label += "-" + Path(file).stem
    return Path(recipe.output_dir) / f"eval-{split}-{_folder_name(label)}"


# --- the command ------------------------------------------------------------------------------


def score_completions(
    mix: RewardMix, questions, completions, golds, batch_size: int = 64, columns: dict[str, list] | None = None
):
    """Score with the mix in batches; returns the merged outputs. ``columns``: more per-sample
    columns the rewards read (``answer_kind``, ``choices``)."""
    chunks = []
    for start in range(0, len(completions), batch_size):
        part = {key: values[start : start + batch_size] for key, values in (columns or {}).items()}
        batch = RewardBatch.from_texts(
            completions[start : start + batch_size],
            questions[start : start + batch_size],
            golds[start : start + batch_size],
            **part,
        )
        chunks.append(mix.score_all(batch))
    return aggregate_outputs(chunks)


def _accuracy_scores(outputs, types, questions, completions, golds, columns=None) -> tuple[list[float | None], str]:
    kinds = diag.component_kinds(types, outputs)
    name = next((n for n, k in kinds.items() if k == diag.ACCURACY), None)
    if name is not None:
        return outputs[name].scores, f"component {name!r}"
    from procrl.rewards.accuracy import AccuracyReward

    component = AccuracyReward(AccuracyReward.Settings(), name="accuracy")
    batch = RewardBatch.from_texts(completions, questions, golds, **(columns or {}))
    return component.score(batch).scores, "accuracy (default settings; not in the recipe)"


def _check_run_model(model: str) -> None:
    """A run's output dir whose final model is incomplete or missing: one line naming the
    checkpoint to evaluate instead (procrl/trainers/checkpoints.py)."""
    from procrl.trainers.checkpoints import final_model_problem, newest_complete_checkpoint

    if not Path(model).is_dir():
        return
    from procrl.trainers.checkpoints import FINAL_MARKER

    problem = final_model_problem(model)
    newest = newest_complete_checkpoint(model) if problem else None
    if newest:  # (without one and without the marker, check_model_path says what the directory lacks)
        raise ConfigError(
            f"--model: {model}: {problem}; evaluate {newest}, its newest complete checkpoint (or finish "
            "the run with procrl train --resume)"
        )
    if problem and (Path(model) / FINAL_MARKER).exists():
        raise ConfigError(f"--model: {model}: {problem}: its files are a mix; it holds no complete checkpoint either")


def evaluate(
    recipe,
    model: str | None = None,
    split: str = "test",
    limit: int | None = None,
    output_dir: str | Path | None = None,
    batch_size: int = 8,
    max_new_tokens: int | None = None,
    backend: str = "auto",
    log_wandb: bool = False,
    completions: list[str] | None = None,
    sampling: Sampling = Sampling(),
    gguf_file: str | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Generate (unless ``completions`` are given: ``sampling.num_samples`` per problem, grouped
    by problem), score, write the report; returns it. ``model`` (default: the recipe's policy,
    with its ``gguf_file``): a checkpoint, Hub id, embedded name or .gguf path; ``gguf_file``: a
    GGUF inside ``model``. The report folder follows procrl's folder rule (procrl/core/folders.py):
    new, empty, an earlier evaluate's, or named by ``overwrite``."""
    from procrl.core.paths import check_model_path
    from procrl.data import load_examples
    from procrl.models.loading import check_gguf_file, model_source, policy_source

    if limit is not None and limit < 1:
        raise ConfigError(f"--limit: must be >= 1, got {limit}")
    if batch_size < 1:
        raise ConfigError(f"--batch-size: must be >= 1, got {batch_size}")
    if max_new_tokens is not None and max_new_tokens < 1:
        raise ConfigError(f"--max-new-tokens: must be >= 1, got {max_new_tokens}")
    sampling.validate()
    k = sampling.num_samples
    check_gguf_file("--gguf-file", gguf_file, model, "--model")
    name, file = (recipe.model.name_or_path, recipe.model.gguf_file) if model is None else (model, gguf_file)
    if completions is None:
        if file is None:
            _check_run_model(name)  # a run's dir without its final model: name the checkpoint to use
            check_model_path("--model", name)
        elif (
            Path(name).expanduser().is_dir()
            and not (Path(name).expanduser() / file).is_file()
            and not Path(file).expanduser().is_file()
        ):
            raise ConfigError(f"--gguf-file: {file} not found in {name}")
    if model is None:
        resolve = lambda: policy_source(recipe.model)  # noqa: E731
    else:
        resolve = lambda: model_source(model, gguf_file)  # noqa: E731
    directory = Path(output_dir) if output_dir else default_output_dir(recipe, model, split, gguf_file)
    model = f"{name} (gguf_file {file})" if file else name
    check_folder(directory, EVALUATE, overwrite=overwrite)  # created once there is something to write
    from procrl.core.paths import is_local_data_file

    local_notes = []
    if is_local_data_file(recipe.data.dataset):
        # a local file has no splits: never evaluate a test split on the training file by accident
        if "train" in Path(recipe.data.dataset).name.lower() and split != "train":
            raise ConfigError(
                f"data.dataset is the local file {recipe.data.dataset!r}, which looks like training data; "
                f"evaluate on the {split} file with --set data.dataset=PATH"
            )
        local_notes.append(
            f"data.dataset is a local file ({recipe.data.dataset}); --split {split} does not select from it"
        )
    examples = load_examples(recipe.data, split)
    if limit is not None:
        examples = examples.select(range(min(limit, len(examples))))
    questions, golds = list(examples["question"]), list(examples["answer"])
    # a choice or yes/no dataset: every row's kind and options, for the rewards and the report
    row_columns = {key: list(examples[key]) for key in ("answer_kind", "choices") if key in examples.column_names}
    from procrl.core.choices import answer_specs

    specs = answer_specs(row_columns, golds, len(golds))
    mix = RewardMix(recipe.rewards)
    generation: dict[str, Any] = {}
    tokenizer = None
    if completions is None:
        source = resolve()
        tokenizer = _load_tokenizer(source, recipe, local_notes)
        if max_new_tokens is None:
            max_new_tokens = int(recipe.trainer_args.get("max_completion_length") or 256)
        started = time.perf_counter()
        try:
            prompts = _prompt_texts(recipe, questions, tokenizer, row_columns.get("answer_kind"))
            completions, used = generate_completions(
                source, prompts, tokenizer, recipe, max_new_tokens, batch_size, backend, sampling
            )
        except OSError as error:  # from_pretrained: a Hub id that is not there (or not reachable)
            raise ConfigError(f"--model: cannot load {model} ({' '.join(str(error).split())[:300]})") from None
        generation = {
            "backend": used,
            "max_new_tokens": max_new_tokens,
            "batch_size": batch_size,
            "greedy": sampling.greedy,
            "num_samples": k,
            "seconds": time.perf_counter() - started,
        }
        if not sampling.greedy:
            generation.update(temperature=sampling.temperature, top_p=sampling.top_p, seed=sampling.seed)
    elif len(completions) != len(questions) * k:
        raise ConfigError(f"{len(completions)} completions for {len(questions)} problems x {k} samples")
    import torch

    # components with their own models (NLI, taggers, judges) run where the policy ran
    mix.bind(RuntimeContext(device="cuda" if torch.cuda.is_available() else "cpu", tokenizer=tokenizer))
    types = {name: spec.type for name, spec in mix.specs.items()}
    sample_questions = [q for q in questions for _ in range(k)]
    sample_golds = [g for g in golds for _ in range(k)]
    sample_columns = {key: [v for v in values for _ in range(k)] for key, values in row_columns.items()}
    outputs = score_completions(mix, sample_questions, completions, sample_golds, columns=sample_columns)
    accuracy, source = _accuracy_scores(outputs, types, sample_questions, completions, sample_golds, sample_columns)
    report = build_report(
        outputs,
        types,
        {n: s.weight for n, s in mix.specs.items()},
        accuracy,
        source,
        completions=completions,
        golds=golds,
        num_samples=k,
        judge=recipe.data.eval_judge,
        specs=specs,
    )
    kinds_seen = sorted({spec.kind for spec in specs})
    if kinds_seen != ["number"]:
        report["answer_kind"] = kinds_seen[0] if len(kinds_seen) == 1 else kinds_seen
    report = {"recipe": recipe.path, "model": model, "split": split, **report, "generation": generation}
    report["notes"] = local_notes + report["notes"]
    records = (
        diag.first_error_records(outputs[report["first_error_component"]]) if report["first_error_component"] else None
    )
    report["behaviour"] = behaviour_summary(
        outputs, {n: s.weight for n, s in mix.specs.items()}, types, completions, accuracy, records
    )
    try:  # a full disk (a PNG, the completions) is one line, not matplotlib's traceback
        claim_folder(directory, EVALUATE)
        report["plots"] = write_plots(
            outputs,
            types,
            directory,
            judge=report["first_error_component"],
            correct=[None if a is None else a >= 1.0 for a in accuracy],
        )
        rows = []
        for i, completion in enumerate(completions):
            row = {
                "problem": i // k,
                "sample": i % k,
                "question": sample_questions[i],
                "answer": sample_golds[i],
                **{key: values[i] for key, values in sample_columns.items()},
                "completion": completion,
                "correct": accuracy[i],
                "first_error": records[i].index if records is not None else None,
                "rewards": {name: o.scores[i] for name, o in outputs.items()},
            }
            if records is not None and records[i].category:
                row["error_category"] = records[i].category
            rows.append(json.dumps(redact(row)) + "\n")
        write_file(directory, "completions.jsonl", "".join(rows))
        write_report(report, directory)
    except OSError as error:
        raise ConfigError(
            f"--output-dir: writing the report to {directory} failed ({error.strerror or error}); "
            "the report is incomplete: free space and evaluate again"
        ) from None
    if log_wandb:
        _log_wandb(report, outputs, types, directory, recipe, completions, sample_questions)
    return report


def behaviour_summary(
    outputs: dict[str, RewardOutput],
    weights: dict[str, float],
    types: dict[str, str],
    completions: list[str],
    accuracy: list[float | None],
    records: list | None,
) -> dict[str, float | None]:
    """What the reward-hacking watch compares (``procrl/observe/hacking.py``): mean steps per completion
    (the first-error judge's count, else procrl's step segmentation), mean length in characters,
    mean process reward (weighted components other than accuracy and format) and accuracy."""
    from procrl.observe.hacking import behaviour, process_totals

    if records is not None:
        num_steps = [r.num_steps for r in records]
    else:
        from procrl.core.text import segment_batch

        num_steps = [len(s.steps) for s in segment_batch(completions)]
    totals = process_totals({n: o.scores for n, o in outputs.items()}, types, weights)
    summary = behaviour(completions, num_steps, totals, accuracy)
    return {
        "mean_steps": summary.steps,
        "mean_length": summary.length,
        "process_reward": summary.process_reward,
        "accuracy": summary.accuracy,
    }


def scalar_metrics(report: dict[str, Any]) -> dict[str, float]:
    """Every accuracy of the report and its standard error, flat (``answer_accuracy``,
    ``answer_accuracy_stderr``, ``pass@4``, ...), None values left out."""
    flat = {key: report.get(key) for name in ACCURACY_KEYS for key in (name, f"{name}_stderr")}
    flat.update(report.get("sampled", {}))
    return {k: float(v) for k, v in flat.items() if v is not None}


def _log_wandb(report, outputs, types, directory: Path, recipe, completions, questions) -> None:
    import wandb

    from procrl.observe.wandb import wandb_dir

    with wandb_dir(str(directory)):  # W&B's files under the report's directory, as a training run's under output_dir
        run = wandb.init(
            project=recipe.logging.wandb_project or "procrl",
            entity=recipe.logging.wandb_entity,
            job_type="evaluate",
            config=redact(
                {
                    "model": report["model"],
                    "split": report["split"],
                    "n": report["n"],
                    "generation": report["generation"],
                }
            ),
        )
    scalars = {f"eval/{k}": v for k, v in scalar_metrics(report).items()}
    scalars.update(
        {f"eval/rewards/{k}/mean": c["mean"] for k, c in report["components"].items() if c["mean"] is not None}
    )
    images = {f"eval/{Path(p).stem}": wandb.Image(str(directory / p)) for p in report["plots"]}
    table = wandb.Table(columns=["question", "completion", "steps", "first_error", *[f"reward/{k}" for k in outputs]])
    batch = RewardBatch.from_texts(completions, questions)
    for row in diag.step_rows(batch, outputs, types):
        table.add_data(
            redact(row["question"]),
            redact(row["completion"]),
            redact(row["steps"]),
            str(row["first_error"]),
            *[row[f"reward/{k}"] for k in outputs],
        )
    run.log({**scalars, **images, "eval/completions": table})
    run.summary.update(scalars)
    run.finish()


JUDGE_COMPONENT = "eval_judge"


def judge_overrides(judge: str | None, overrides: list[str]) -> list[str]:
    """``--judge`` as recipe overrides: a backend name adds the evaluation-only component
    ``eval_judge`` (weight 0) before the user's ``--set`` (which may configure it); a component
    name sets ``data.eval_judge``."""
    from procrl.rewards.judges.registry import BACKENDS

    if judge is None:
        return list(overrides)
    if judge in BACKENDS:
        component = f"rewards.{JUDGE_COMPONENT}={{type: first_error, backend: {judge}, weight: 0.0}}"
        return [component, *overrides, f"data.eval_judge={JUDGE_COMPONENT}"]
    return [*overrides, f"data.eval_judge={judge}"]


def format_summary(report: dict[str, Any], sampling: Sampling, directory: Path) -> str:
    """The lines ``procrl evaluate`` prints: the accuracies with their standard errors, the judge,
    the notes and the files written into ``directory``."""
    how = (
        "greedy"
        if sampling.greedy
        else (
            f"{sampling.num_samples} samples per problem, temperature "
            f"{sampling.temperature}, top-p {sampling.top_p}, seed {sampling.seed}"
        )
    )
    lines = [f"{report['n']} problems, {how} (value ± standard error)"]
    judge = report.get("evaluation_judge")
    if judge:
        lines.append(
            f"reasoning-aware accuracy judged by {judge['component']!r}"
            + (" (in the trained mix)" if judge["trained_on"] else " (weight 0: not in the trained reward)")
        )
    for key in ACCURACY_KEYS:
        lines.append(f"{key:<28} {_with_error(report, key)}")
    for key in report["sampled"] if sampling.num_samples > 1 else ():  # greedy: pass@1 = maj@1 = accuracy
        if not key.endswith("_stderr"):
            lines.append(f"{key:<28} {_with_error(report, key, report['sampled'])}")
    lines += [f"note: {note}" for note in report["notes"]]
    lines.append(f"wrote {directory / 'report.json'}, {directory / 'report.md'} and {', '.join(report['plots'])}")
    return "\n".join(lines)
