"""Reward cost at real architecture sizes: what the process rewards cost on one GRPO batch of the
7B recipes, batched (procrl's code path) against the naive loop, with random-weight models of the
real architectures (no download).

Models (configurations written in benchmarks/real_shapes.py, random weights, saved in the
on-disk format procrl loads, then loaded and run by procrl's own components):

* ``receval_correctness``: DeBERTa-v3-large NLI classifier (435M), ReCEval's default model;
* ``trace``: DeBERTa-v3-base encoder + Linear(768, 8) in the published TRACE format (184M);
* ``receval_informativeness``: a Qwen2.5-0.5B-shaped causal LM (494M) named as ``lm``;
* ``accuracy``, ``format``, ``first_error`` (arithmetic backend) and the shared step/sentence
  segmentation, which need no model, for comparison.

Batch: the 7B recipes' completions per optimizer step (``--recipe``; 256 = 8 per device x 4
accumulation x 8 ranks; each rank scores its own 32), as the reference solutions of the first
GSM8K train problems (256 distinct problems: the de-duplication gets no help from identical
samples, which a GRPO group of 8 may contain). Typical instruct-model completions are longer
than these references, so real costs are higher in proportion to their tokens.

Batched = the component's ``score`` (all pairs / sentences / contexts of the batch, de-duplicated,
length-sorted, ``batch_size`` per forward pass). Naive = one forward pass per NLI pair (the
released ReCEval code's loop), per sentence, per (context, target) sequence with full logits. The
arms alternate, ``--repeats`` times; medians are reported, and the largest difference between
the two arms' results is printed (they compute the same numbers).

On CPU a real-size model takes seconds per completion, so by default each model component is
timed on ``--measure`` typical completions (at evenly spaced quantiles of its work per
completion) and scaled to the whole batch by tokens (the work of these models grows with the
tokens they read); the output says which numbers are measured and which are extrapolated.
``--measure 0`` times the whole batch. On a GPU 64 completions are timed by default (the naive
arm makes thousands of single passes). On CPU one torch thread is used unless ``--threads`` says
otherwise, and the CPU time of the process is reported next to the wall time: on a shared
machine it moves far less with the load.

Token counts come from locally built stand-ins of the real tokenizers (real_shapes.py: the
Hub is not reachable here); pass ``--deberta-tokenizer microsoft/deberta-v3-large`` and
``--qwen-tokenizer Qwen/Qwen2.5-0.5B-Instruct`` (or local directories) to use the real ones.

    python benchmarks/reward_scale_bench.py [--device cpu|cuda] [--measure N] [--repeats N]
        [--components receval_correctness,trace,receval_informativeness,cheap] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_shapes  # noqa: E402

REPO = real_shapes.REPO
MODEL_COMPONENTS = ("receval_correctness", "trace", "receval_informativeness")
CHEAP = ("segmentation", "accuracy", "format", "first_error")
# default completions timed per model component on CPU (a GPU times the whole batch)
CPU_MEASURE = {"receval_correctness": 2, "trace": 16, "receval_informativeness": 2}
GPU_MEASURE = 64  # a quarter of the batch: the naive arm's thousands of single passes stay within minutes


@dataclass
class Workload:
    """What one arm of a component computes: ``units`` (pairs / sentences / sequences) and
    their ``tokens`` (what a forward pass reads)."""

    units: int
    tokens: int
    unique_units: int | None = None


@dataclass
class Result:
    component: str
    model: str
    full: Workload
    measured: Workload
    measured_completions: int
    batched_seconds: list[float] = field(default_factory=list)
    naive_seconds: list[float] = field(default_factory=list)
    batched_cpu: list[float] = field(default_factory=list)
    naive_cpu: list[float] = field(default_factory=list)
    max_difference: float | None = None
    difference_of: str = ""
    forward_passes_batched: int | None = None
    load_seconds: float | None = None

    @property
    def scale(self) -> float:
        return self.full.tokens / max(self.measured.tokens, 1)

    def summary(self, batch: int, per_rank: int) -> dict[str, Any]:
        batched = statistics.median(self.batched_seconds) if self.batched_seconds else None
        naive = statistics.median(self.naive_seconds) if self.naive_seconds else None
        ratios = [n / b for n, b in zip(self.naive_seconds, self.batched_seconds) if b > 0]
        extrapolated = self.measured_completions < batch
        out: dict[str, Any] = {
            "component": self.component,
            "model": self.model,
            "batch_completions": batch,
            "measured_completions": self.measured_completions,
            "extrapolated": extrapolated,
            "scale_by_tokens": self.scale,
            "work_full_batch": vars(self.full),
            "work_measured": vars(self.measured),
            "runs": len(self.batched_seconds),
            "batched_seconds_measured": self.batched_seconds,
            "naive_seconds_measured": self.naive_seconds,
            "batched_seconds_per_batch": batched * self.scale if batched is not None else None,
            "naive_seconds_per_batch": naive * self.scale if naive is not None else None,
            "ratio_naive_over_batched": statistics.median(ratios) if ratios else None,
            "batched_cpu_seconds_measured": self.batched_cpu,
            "naive_cpu_seconds_measured": self.naive_cpu,
            "batched_cpu_seconds_per_batch": statistics.median(self.batched_cpu) * self.scale
            if self.batched_cpu
            else None,
            "naive_cpu_seconds_per_batch": statistics.median(self.naive_cpu) * self.scale if self.naive_cpu else None,
            "cpu_ratio_naive_over_batched": statistics.median(
                [n / b for n, b in zip(self.naive_cpu, self.batched_cpu) if b > 0]
            )
            if self.batched_cpu
            else None,
            "batched_ms_per_completion": batched * self.scale / batch * 1000 if batched is not None else None,
            "batched_seconds_per_rank": batched * self.scale * per_rank / batch if batched is not None else None,
            "max_difference": self.max_difference,
            "difference_of": self.difference_of,
            "forward_passes_batched": self.forward_passes_batched,
            "load_seconds": self.load_seconds,
        }
        return out


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _timed(function: Callable[[], Any], device: str) -> tuple[float, float, Any]:
    """(wall seconds, this process's CPU seconds, value). With one torch thread the CPU time is
    what the work would take on a core of its own: on a shared machine it barely moves with load."""
    _sync(device)
    started, cpu = time.perf_counter(), time.process_time()
    value = function()
    _sync(device)
    return time.perf_counter() - started, time.process_time() - cpu, value


def recipe_geometry(path: Path) -> dict[str, int]:
    """Completions per optimizer step (all ranks) and per rank, from the recipe's plan."""
    from procrl.launch.plan import plan
    from procrl.recipe import load_recipe

    values = plan(load_recipe(str(path)))
    per_rank = values["per_device_train_batch_size"] * values["gradient_accumulation_steps"]
    return {
        "batch": int(values["effective_batch_completions"]),
        "per_rank": int(per_rank),
        "processes": int(values["num_processes"]),
        "num_generations": int(values["num_generations"]),
    }


def typical(rows: list[dict], units: list[int], count: int) -> list[dict]:
    """The timed subset: ``count`` rows at evenly spaced quantiles ((k + 0.5) / count) of the
    component's work per completion (``units``), so that it holds typical completions rather than
    the first ones; all rows when count >= len(rows)."""
    if count >= len(rows):
        return list(rows)
    order = sorted(range(len(rows)), key=lambda i: (units[i], i))
    picks = {order[int((k + 0.5) * len(rows) / count)] for k in range(count)}
    return [rows[i] for i in sorted(picks)]


def make_batch(rows: list[dict]):
    from procrl.rewards import RewardBatch

    return RewardBatch.from_texts(
        [r["answer"] for r in rows], [r["question"] for r in rows], [r["answer"] for r in rows]
    )


def build_component(name: str, settings: dict, device: str):
    """The component exactly as a recipe's ``rewards:`` section builds it (registry, settings
    validation), bound to ``device``."""
    from procrl.rewards import RewardMix, RuntimeContext

    mix = RewardMix.from_recipe_rewards({name: settings})
    component = mix.components[name]
    component.bind(RuntimeContext(device=device))
    return component


# --- ReCEval correctness (NLI) --------------------------------------------------------------------


def bench_nli(model_dir: Path, rows: list[dict], measure: int, repeats: int, device: str) -> Result:
    from procrl.rewards.receval import chain_minimum, score_correctness_plan

    component = build_component("receval_correctness", {"nli_model": str(model_dir)}, device)
    scorer = component.scorer
    load, _, _ = _timed(scorer._load, device)
    tokenizer = scorer._tokenizer

    def workload(batch) -> tuple[Workload, list, list, list[int]]:
        all_plans = component.plan(batch)[0]
        plans = [p for p in all_plans if p is not None]
        pairs = [pair for plan in plans for pair in plan.pairs()]
        lengths = (
            [
                len(ids)
                for ids in tokenizer(
                    [p for p, _ in pairs], [h for _, h in pairs], truncation=True, max_length=scorer.max_length
                )["input_ids"]
            ]
            if pairs
            else []
        )
        per_row = [len(p.pairs()) if p is not None else 0 for p in all_plans]
        return Workload(len(pairs), sum(lengths), len(set(pairs))), plans, pairs, per_row

    full, _, _, per_row = workload(make_batch(rows))
    batch = make_batch(typical(rows, per_row, measure))
    measured, plans, pairs, _ = workload(batch)
    batch.segmentations  # noqa: B018 - the shared segmentation is not part of this component's cost
    scorer.score_one_by_one(pairs[:1])  # warm-up outside the timing
    result = Result("receval_correctness", "DeBERTa-v3-large NLI (435M)", full, measured, len(batch))
    output = naive_map = None

    def naive():
        values = dict(zip(pairs, scorer.score_one_by_one(pairs)))
        return values, [chain_minimum(score_correctness_plan(plan, values)[0])[0] for plan in plans]

    for _ in range(repeats):
        scorer._cache.clear()  # every run computes every pair (no results from the previous run)
        passes = scorer.stats["forward_passes"]
        seconds, cpu, output = _timed(lambda: component.score(batch), device)
        result.batched_seconds.append(seconds)
        result.batched_cpu.append(cpu)
        result.forward_passes_batched = scorer.stats["forward_passes"] - passes
        seconds, cpu, (naive_map, _) = _timed(naive, device)
        result.naive_seconds.append(seconds)
        result.naive_cpu.append(cpu)
    difference = 0.0
    for plan, detail in zip(plans, [d for d in output.details if d.get("step_values")]):
        _, intra, inter = score_correctness_plan(plan, naive_map)
        difference = max([difference] + [abs(a - b) for a, b in zip(intra + inter, detail["intra"] + detail["inter"])])
    result.max_difference, result.difference_of = difference, "intra/inter step scores"
    result.load_seconds = load
    return result


# --- TRACE tagger ---------------------------------------------------------------------------------


def one_sentence_at_a_time(tagger, sentences: list[str]) -> list[list[float]]:
    """The naive loop: tokenise and run each sentence alone."""
    import torch

    rows = []
    keys = tagger._forward_inputs()
    with torch.inference_mode():
        for text in sentences:
            inputs = tagger.tokenizer(text, truncation=True, max_length=tagger.max_length, return_tensors="pt")
            inputs = {k: v.to(tagger.device) for k, v in inputs.items() if k in keys}
            rows.append(torch.sigmoid(tagger._logits(inputs).float())[0].tolist())
    return rows


def bench_trace(model_dir: Path, rows: list[dict], measure: int, repeats: int, device: str) -> Result:
    component = build_component("trace", {"tagger": str(model_dir), "batch_size": 64}, device)
    load, _, tagger = _timed(lambda: component.tagger, device)
    from procrl.rewards.scorers.taggers import TraceCheckpointTagger

    if not isinstance(tagger, TraceCheckpointTagger):
        raise RuntimeError(f"expected the published TRACE format, load_tagger gave {type(tagger).__name__}")

    def workload(batch) -> tuple[Workload, list[str], list[int]]:
        sentences = [s.text for seg in batch.segmentations for s in seg.sentences]
        lengths = [
            len(ids) for ids in tagger.tokenizer(sentences, truncation=True, max_length=tagger.max_length)["input_ids"]
        ]
        per_row = [len(seg.sentences) for seg in batch.segmentations]
        return Workload(len(sentences), sum(lengths), len(set(sentences))), sentences, per_row

    full, _, per_row = workload(make_batch(rows))
    batch = make_batch(typical(rows, per_row, measure))
    measured, sentences, _ = workload(batch)
    one_sentence_at_a_time(tagger, sentences[:1])
    result = Result("trace", "DeBERTa-v3-base tagger, TRACE format (184M)", full, measured, len(batch))
    naive_rows = None
    for _ in range(repeats):
        seconds, cpu, _ = _timed(lambda: component.score(batch), device)
        result.batched_seconds.append(seconds)
        result.batched_cpu.append(cpu)
        seconds, cpu, naive_rows = _timed(lambda: one_sentence_at_a_time(tagger, sentences), device)
        result.naive_seconds.append(seconds)
        result.naive_cpu.append(cpu)
    batched_rows = tagger.predict_proba(sentences)  # once more, untimed, for the comparison
    result.max_difference = max(
        (abs(a - b) for x, y in zip(batched_rows, naive_rows) for a, b in zip(x, y)), default=0.0
    )
    result.difference_of = "label probabilities"
    result.forward_passes_batched = math.ceil(len(sentences) / tagger.batch_size)
    result.load_seconds = load
    return result


# --- ReCEval informativeness (information gain under an LM) ---------------------------------------


def informativeness_requests(component, batch) -> list[tuple[int, int, list[tuple[str, str]]]]:
    """Per scorable chain: (index, steps, [(context, target)]) exactly as the component builds them."""
    from procrl.core.answers import extract_prediction
    from procrl.rewards.receval import format_answer, informativeness_contexts

    s = component.settings
    out = []
    for i, (completion, seg, question) in enumerate(zip(batch.completions, batch.segmentations, batch.questions)):
        steps = [step.text for step in seg.steps]
        predicted, _ = extract_prediction(completion)
        if not steps or len(steps) > s.max_steps or predicted is None:
            continue
        target = s.target_template.format(answer=format_answer(predicted))
        out.append(
            (i, len(steps), [(c, target) for c in informativeness_contexts(steps, question, s.condition_on_question)])
        )
    return out


def one_sequence_at_a_time(scorer, pairs: list[tuple[str, str]]) -> list[float]:
    """The naive loop: one forward pass per (context, target), all logits, as the released code."""
    import torch

    out = []
    with torch.no_grad():
        for context, target in pairs:
            ids, target_length = scorer._encode(context, target)
            input_ids = torch.tensor([ids], device=scorer.device)
            logits = scorer._model(input_ids=input_ids).logits[0].float()
            logprobs = torch.log_softmax(logits[:-1], dim=-1)
            token_logprobs = logprobs.gather(-1, input_ids[0, 1:].unsqueeze(-1)).squeeze(-1)
            out.append(token_logprobs[-target_length:].mean().item())
    return out


def bench_lm(model_dir: Path, rows: list[dict], measure: int, repeats: int, device: str, dtype: str) -> Result:
    from procrl.rewards.receval import information_gains

    component = build_component("receval_informativeness", {"lm": str(model_dir), "dtype": dtype}, device)
    scorer = component.scorer
    load, _, _ = _timed(scorer._load, device)

    def workload(batch):
        chains = informativeness_requests(component, batch)
        pairs = [pair for _, _, chain in chains for pair in chain]
        tokens = sum(len(scorer._encode(c, t)[0]) for c, t in pairs)
        per_row = [0] * len(batch)
        for index, _, chain in chains:
            per_row[index] = len(chain)
        return Workload(len(pairs), tokens, len(set(pairs))), chains, pairs, per_row

    full, _, _, per_row = workload(make_batch(rows))
    batch = make_batch(typical(rows, per_row, measure))
    measured, chains, pairs, _ = workload(batch)
    one_sequence_at_a_time(scorer, pairs[:1])
    dtype_name = str(next(scorer._model.parameters()).dtype).replace("torch.", "")
    result = Result(
        "receval_informativeness", f"Qwen2.5-0.5B-shaped LM (494M, {dtype_name})", full, measured, len(batch)
    )
    output = naive_values = None
    for _ in range(repeats):
        passes = scorer.stats["forward_passes"]
        seconds, cpu, output = _timed(lambda: component.score(batch), device)
        result.batched_seconds.append(seconds)
        result.batched_cpu.append(cpu)
        result.forward_passes_batched = scorer.stats["forward_passes"] - passes
        seconds, cpu, naive_values = _timed(lambda: one_sequence_at_a_time(scorer, pairs), device)
        result.naive_seconds.append(seconds)
        result.naive_cpu.append(cpu)
    difference, start = 0.0, 0
    for index, steps, chain in chains:
        gains = information_gains(naive_values[start : start + steps + 1])
        start += len(chain)
        difference = max([difference] + [abs(a - b) for a, b in zip(gains, output.details[index]["ig"])])
    result.max_difference, result.difference_of = difference, f"information gains (nats, {dtype_name})"
    result.load_seconds = load
    return result


# --- model-free components ------------------------------------------------------------------------


def bench_cheap(rows: list[dict], repeats: int) -> list[dict[str, Any]]:
    """Segmentation (shared by all components, once per batch) and the model-free components on
    the whole batch."""
    out = []
    seconds = []
    for _ in range(repeats):
        batch = make_batch(rows)
        elapsed, _, _ = _timed(partial(getattr, batch, "segmentations"), "cpu")
        seconds.append(elapsed)
    out.append(
        {
            "component": "segmentation (shared)",
            "model": "procrl.core.text (the recipe's sentence splitter), once per batch",
            "seconds_per_batch": statistics.median(seconds),
        }
    )
    batch = make_batch(rows)
    batch.segmentations  # noqa: B018
    for name, settings in (("accuracy", {}), ("format", {}), ("first_error", {"backend": "arithmetic"})):
        component = build_component(name, settings, "cpu")
        times = [_timed(partial(component.score, batch), "cpu")[0] for _ in range(repeats)]  # wall seconds
        out.append(
            {
                "component": name,
                "model": "none" if name != "first_error" else "arithmetic judge (no model)",
                "seconds_per_batch": statistics.median(times),
            }
        )
    return out


# --- report ---------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def machine_text(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"CPU ({platform.processor() or platform.machine()}), {os.cpu_count()} cores, {torch.get_num_threads()} torch "
        f"threads, load average {load:.1f} at the start, torch {torch.__version__}"
    )


def table(header: list[str], rows: list[list[str]], numeric_from: int) -> list[str]:
    """Rows as aligned text: columns before ``numeric_from`` left-aligned, the rest right-aligned."""
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < numeric_from else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    return [line(header)] + [line(r) for r in rows]


def _threads_text() -> str:
    import torch

    threads = torch.get_num_threads()
    return f"{threads} torch thread" + ("s" if threads != 1 else "")


def report(
    summaries: list[dict], cheap: list[dict], geometry: dict, args, tokens: dict, machine: str, loads: list[float]
) -> str:
    batch, per_rank = geometry["batch"], geometry["per_rank"]
    lines = [
        f"reward cost per GRPO batch of {args.recipe.name}: {batch} completions per optimizer step "
        f"({per_rank} per rank x {geometry['processes']} ranks), GSM8K train reference solutions as completions",
        f"machine: {machine}; load average during the run {min(loads):.1f}-{max(loads):.1f}",
        "tokens per solution (stand-in tokenizers, real_shapes.py): "
        + "; ".join(
            f"{k} {v['tokens_per_text']:.0f} ({v['above_lower_bound']:+.1%} vs the pre-tokenizer lower bound)"
            for k, v in tokens.items()
        ),
        "",
    ]
    header = [
        "component",
        "model (random weights)",
        "work per batch",
        "timed",
        "batched s/batch",
        "naive s/batch",
        "naive/batched",
        "ms/completion",
        "s/rank",
    ]
    rows = []
    for s in summaries:
        work = s["work_full_batch"]
        unit = {"receval_correctness": "pairs", "trace": "sentences", "receval_informativeness": "sequences"}[
            s["component"]
        ]
        timed = (
            f"{s['measured_completions']} of {batch} x {s['runs']}"
            if s["extrapolated"]
            else f"all {batch} x {s['runs']}"
        )
        mark = "*" if s["extrapolated"] else ""
        rows.append(
            [
                s["component"],
                s["model"],
                f"{work['units']:,} {unit}, {work['tokens'] / 1000:,.0f}k tokens",
                timed,
                _fmt(s["batched_seconds_per_batch"]) + mark,
                _fmt(s["naive_seconds_per_batch"]) + mark,
                _fmt(s["ratio_naive_over_batched"], 1) + "x",
                _fmt(s["batched_ms_per_completion"], 0) + mark,
                _fmt(s["batched_seconds_per_rank"]) + mark,
            ]
        )
    for c in cheap:
        seconds = c["seconds_per_batch"]
        rows.append(
            [
                c["component"],
                c["model"],
                "",
                f"all {batch} x {args.repeats}",
                _fmt(seconds, 3),
                "-",
                "-",
                _fmt(seconds / batch * 1000, 2),
                _fmt(seconds * per_rank / batch, 3),
            ]
        )
    lines += table(header, rows, numeric_from=4)
    lines.append("")
    if summaries and summaries[0]["batched_cpu_seconds_measured"] and not args.device.startswith("cuda"):
        lines.append(
            f"the same, in CPU seconds of this process ({_threads_text()}: the wall time on a core of its own, "
            "little affected by other load):"
        )
        cpu_rows = []
        for s in summaries:
            mark = "*" if s["extrapolated"] else ""
            batched = s["batched_cpu_seconds_per_batch"]
            cpu_rows.append(
                [
                    s["component"],
                    _fmt(batched) + mark,
                    _fmt(s["naive_cpu_seconds_per_batch"]) + mark,
                    _fmt(s["cpu_ratio_naive_over_batched"], 1) + "x",
                    _fmt(batched / batch * 1000, 0) + mark,
                    _fmt(batched * per_rank / batch) + mark,
                ]
            )
        lines += table(
            ["component", "batched cpu-s/batch", "naive cpu-s/batch", "naive/batched", "ms/completion", "s/rank"],
            cpu_rows,
            numeric_from=1,
        )
        lines.append("")
    if any(s["extrapolated"] for s in summaries):
        lines.append(
            "* extrapolated: median time of the timed completions x (tokens of the whole batch / tokens timed). "
            "The naive/batched ratios are measured (same completions, both arms, median of the runs)."
        )
    for s in summaries:
        lines.append(
            f"{s['component']}: timed {s['measured_completions']} completions ({s['work_measured']['units']:,} units, "
            f"{s['work_measured']['tokens']:,} tokens; x{s['scale_by_tokens']:.1f} to the batch); batched "
            f"{', '.join(_fmt(x) for x in s['batched_seconds_measured'])} s"
            f" ({s['forward_passes_batched']} forward passes); "
            f"naive {', '.join(_fmt(x) for x in s['naive_seconds_measured'])} s"
            f" ({s['work_measured']['units']:,} passes); "
            f"max |difference| of {s['difference_of']} {s['max_difference']:.1e};"
            f" model load {_fmt(s['load_seconds'])} s"
        )
    lines.append(
        f"s/rank: the {per_rank} completions one rank scores per optimizer step (each of the "
        f"{geometry['processes']} ranks runs its own copy of the reward models)."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda (cuda:N).")
    parser.add_argument(
        "--recipe",
        type=Path,
        default=REPO / "recipes" / "gsm8k_grpo_process.yaml",
        help="Recipe whose geometry gives the batch (completions per optimizer step).",
    )
    parser.add_argument("--batch", type=int, default=None, help="Completions per batch (default: the recipe's).")
    parser.add_argument(
        "--measure",
        type=int,
        default=None,
        help="Completions timed per model component, the rest extrapolated by tokens; 0 = the whole batch "
        f"(default: {GPU_MEASURE} on a GPU, {CPU_MEASURE} on CPU).",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="Alternating runs of both arms, medians reported (default: 3 on a GPU, 2 on CPU).",
    )
    parser.add_argument(
        "--components",
        default=",".join(MODEL_COMPONENTS + ("cheap",)),
        help="Comma-separated subset of " + ", ".join(MODEL_COMPONENTS + ("cheap",)) + ".",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: 1 on CPU, where on a shared machine more threads lose more to "
        "contention than they gain; torch's default on a GPU machine).",
    )
    parser.add_argument(
        "--lm-dtype",
        default="auto",
        help="dtype of the informativeness LM (the component's setting; "
        "'auto' = the checkpoint's, bf16 like Qwen2.5's).",
    )
    parser.add_argument("--deberta-tokenizer", default=None, help="Real DeBERTa-v3 tokenizer (Hub id or directory).")
    parser.add_argument("--qwen-tokenizer", default=None, help="Real Qwen2.5 tokenizer (Hub id or directory).")
    parser.add_argument(
        "--models",
        choices=("real", "tiny"),
        default="real",
        help="tiny: hidden-32 models of the same architectures, to test this script (not real sizes).",
    )
    parser.add_argument("--json", type=Path, default=None, help="Write all numbers here.")
    args = parser.parse_args(argv)

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    import torch

    if args.threads or not args.device.startswith("cuda"):
        torch.set_num_threads(args.threads or 1)
    if args.repeats is None:
        args.repeats = 3 if args.device.startswith("cuda") else 2
    chosen = [c.strip() for c in args.components.split(",") if c.strip()]
    unknown = sorted(set(chosen) - set(MODEL_COMPONENTS) - {"cheap"})
    if unknown:
        parser.error(f"unknown component(s) {unknown}")
    geometry = recipe_geometry(args.recipe)
    if args.batch:
        geometry["batch"] = args.batch
    batch_size = geometry["batch"]
    rows = real_shapes.gsm8k_rows(count=batch_size)
    machine = machine_text(args.device)
    loads = [os.getloadavg()[0]]
    print(f"building / loading random-weight models (cached in {real_shapes.cache_dir()}) ...", flush=True)
    deberta_tokenizer = args.deberta_tokenizer or real_shapes.local_tokenizer("deberta-v3", skip=batch_size)
    qwen_tokenizer = args.qwen_tokenizer or real_shapes.local_tokenizer("qwen2.5", skip=batch_size)
    from transformers import AutoTokenizer

    solutions = [r["answer"] for r in rows]
    tokens = {
        "DeBERTa-v3": real_shapes.token_stats(
            AutoTokenizer.from_pretrained(str(deberta_tokenizer)), "deberta-v3", solutions
        ),
        "Qwen2.5": real_shapes.token_stats(AutoTokenizer.from_pretrained(str(qwen_tokenizer)), "qwen2.5", solutions),
    }

    def measure_for(component: str) -> int:
        if args.measure is not None:
            return args.measure or batch_size
        return GPU_MEASURE if args.device.startswith("cuda") else CPU_MEASURE[component]

    summaries = []
    for name in MODEL_COMPONENTS:
        if name not in chosen:
            continue
        count = min(measure_for(name), batch_size)
        print(f"{name}: timing {count} of {batch_size} completions, {args.repeats} runs per arm ...", flush=True)
        tiny = args.models == "tiny"
        deberta = {"config": real_shapes.TINY_DEBERTA_V3} if tiny else {}
        if name == "receval_correctness":
            result = bench_nli(
                real_shapes.write_nli_model(deberta_tokenizer, **deberta), rows, count, args.repeats, args.device
            )
        elif name == "trace":
            result = bench_trace(
                real_shapes.write_trace_tagger(deberta_tokenizer, **deberta), rows, count, args.repeats, args.device
            )
        else:
            lm = (
                real_shapes.write_causal_lm(real_shapes.TINY_QWEN25_LM, qwen_tokenizer, dtype="float32", name="tiny-lm")
                if tiny
                else real_shapes.write_causal_lm(real_shapes.QWEN25["0.5b"], qwen_tokenizer, name="qwen2.5-0.5b")
            )
            result = bench_lm(lm, rows, count, args.repeats, args.device, args.lm_dtype)
        if tiny:
            result.model = "tiny " + result.model.split(" (")[0] + " (hidden 32, 2 layers: NOT the real size)"
        loads.append(os.getloadavg()[0])
        summaries.append(result.summary(batch_size, geometry["per_rank"]))
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    cheap = bench_cheap(rows, args.repeats) if "cheap" in chosen else []
    loads.append(os.getloadavg()[0])
    text = report(summaries, cheap, geometry, args, tokens, machine, loads)
    print()
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "geometry": geometry,
                    "machine": machine,
                    "load_averages": loads,
                    "tokens": tokens,
                    "components": summaries,
                    "model_free": cheap,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
