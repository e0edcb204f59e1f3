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

import json
import re
import time
from pathlib import Path
from typing import Any

from procrl.core.choices import answer_specs
from procrl.core.config import ConfigError
from procrl.core.folders import check_folder, claim_folder, write_file
from procrl.core.paths import check_model_path, is_local_data_file
from procrl.core.redaction import redact
from procrl.data import load_examples
from procrl.evaluation.evaluate.generation import Sampling, generate_completions, load_evaluated_tokenizer, prompt_texts
from procrl.evaluation.evaluate.plot import write_plots
from procrl.evaluation.evaluate.report import behaviour_summary, build_report
from procrl.evaluation.evaluate.scoring import accuracy_scores, score_completions
from procrl.evaluation.evaluate.text import report_markdown
from procrl.evaluation.evaluate.wandb import log_to_wandb
from procrl.evaluation.score import _jsonable
from procrl.models.loading import check_gguf_file, model_source, policy_source
from procrl.observe import stats as diag
from procrl.rewards.judges.registry import BACKENDS
from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RuntimeContext
from procrl.trainers.checkpoints import FINAL_MARKER, final_model_problem, newest_complete_checkpoint

# Imported where used: torch (seconds to load: a run its checks refuse fails before that).
__all__ = ["Sampling", "default_output_dir", "evaluate", "judge_overrides", "write_report"]


def write_report(report: dict[str, Any], directory: Path) -> None:
    """report.json and report.md, secrets redacted (procrl/core/redaction.py)."""

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


def _check_run_model(model: str) -> None:
    """A run's output dir whose final model is incomplete or missing: one line naming the
    checkpoint to evaluate instead (procrl/trainers/checkpoints.py)."""

    if not Path(model).is_dir():
        return

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
    sampling: Sampling = Sampling(),  # noqa: B008 (frozen: one shared default is safe)
    gguf_file: str | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Generate (unless ``completions`` are given: ``sampling.num_samples`` per problem, grouped
    by problem), score, write the report; returns it. ``model`` (default: the recipe's policy,
    with its ``gguf_file``): a checkpoint, Hub id, embedded name or .gguf path; ``gguf_file``: a
    GGUF inside ``model``. The report folder follows procrl's folder rule (procrl/core/folders.py):
    new, empty, an earlier evaluate's, or named by ``overwrite``."""

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

    specs = answer_specs(row_columns, golds, len(golds))
    mix = RewardMix(recipe.rewards)
    generation: dict[str, Any] = {}
    tokenizer = None
    if completions is None:
        source = resolve()
        tokenizer = load_evaluated_tokenizer(source, recipe, local_notes)
        if max_new_tokens is None:
            max_new_tokens = int(recipe.trainer_args.get("max_completion_length") or 256)
        started = time.perf_counter()
        try:
            prompts = prompt_texts(recipe, questions, tokenizer, row_columns.get("answer_kind"))
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
    accuracy, source = accuracy_scores(outputs, types, sample_questions, completions, sample_golds, sample_columns)
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
        log_to_wandb(report, outputs, types, directory, recipe, completions, sample_questions)
    return report


JUDGE_COMPONENT = "eval_judge"


def judge_overrides(judge: str | None, overrides: list[str]) -> list[str]:
    """``--judge`` as recipe overrides: a backend name adds the evaluation-only component
    ``eval_judge`` (weight 0) before the user's ``--set`` (which may configure it); a component
    name sets ``data.eval_judge``."""

    if judge is None:
        return list(overrides)
    if judge in BACKENDS:
        component = f"rewards.{JUDGE_COMPONENT}={{type: first_error, backend: {judge}, weight: 0.0}}"
        return [component, *overrides, f"data.eval_judge={JUDGE_COMPONENT}"]
    return [*overrides, f"data.eval_judge={judge}"]
