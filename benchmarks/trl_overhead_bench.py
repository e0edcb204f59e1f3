"""procrl's GRPO step against plain TRL's ``GRPOTrainer``, in one run: what procrl costs per step.

Both trainers get the same model (the shipped ``procrl:tiny-reasoner``), the same prompts (the
CPU demo recipe's embedded problems, rendered by procrl), the same ``GRPOConfig`` (8 prompts x 8
completions, up to 160 tokens, temperature 1.0, seeded) and the same scoring:

* ``outcome``: procrl's GRPO trainer with the reward mix ``accuracy`` (outcome credit), against
  ``GRPOTrainer`` with procrl's answer check as a plain TRL reward function;
* ``process``: procrl's process GRPO trainer (``credit: process``, per-step credit from
  ``first_error`` with the arithmetic judge) with ``accuracy + first_error``, against
  ``GRPOTrainer`` with the two checks as plain functions (outcome credit: TRL has no per-step credit).

procrl's side runs as ``procrl train`` builds it (``procrl.launch.run.build_trainer``: its trainer
subclass, reward mix, fallbacks, diagnostics callback and console). Each trainer trains
``--steps`` steps after one warm-up step; the trainers run alternately, ``--rounds`` times, and each
step is timed by a callback. Prints, per credit, the median step time of each side, their ratio
(procrl / TRL) and the share of procrl's step spent in the reward mix.

    python benchmarks/trl_overhead_bench.py [--steps 6] [--rounds 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RECIPE = REPO / "recipes" / "gsm8k_tiny_cpu.yaml"
CREDITS = {
    "outcome": ["rewards.format=false", "rewards.trace=false", "rewards.first_error=false", "trainer.credit=outcome"],
    "process": [
        "rewards.format=false",
        "rewards.trace=false",
        "trainer.credit=process",
        "trainer.process_rewards=[first_error]",
        "trainer.process_aggregation=min",
    ],
}


def _text(completion) -> str:
    """A completion as text: TRL passes a conversational prompt's completions as message lists."""
    return completion if isinstance(completion, str) else completion[0]["content"]


def plain_accuracy(prompts, completions, answer, **kwargs) -> list[float]:
    """procrl's answer check as a plain TRL reward function."""
    from procrl.core.answers import answers_match, extract_prediction, parse_gold

    return [
        1.0 if answers_match(extract_prediction(_text(c))[0], parse_gold(a)) else 0.0
        for c, a in zip(completions, answer)
    ]


def plain_first_error(prompts, completions, **kwargs) -> list[float]:
    """The arithmetic judge's flat penalty as a plain function: -1 when a step's calculation is wrong."""
    from procrl.rewards.quantities import first_wrong_step

    return [-1.0 if first_wrong_step(_text(c).split("\n")[:-1]) >= 0 else 0.0 for c in completions]


class StepTimer:
    """A TrainerCallback recording each optimizer step's wall time."""

    def __init__(self):
        from transformers import TrainerCallback

        timer = self

        class Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                timer.started = time.perf_counter()

            def on_step_end(self, args, state, control, **kwargs):
                timer.steps.append(time.perf_counter() - timer.started)

        self.steps: list[float] = []
        self.started = 0.0
        self.callback = Callback()


def _recipe(credit: str, steps: int, output_dir: str):
    from procrl.recipe import load_recipe

    overrides = [
        *CREDITS[credit],
        f"trainer.max_steps={steps + 1}",
        "trainer.save_steps=100000",
        "trainer.logging_steps=1",
        "trainer.report_to=none",
    ]
    return load_recipe(str(RECIPE), overrides, output_dir)


def time_procrl(credit: str, steps: int, scratch: str) -> dict:
    from procrl.launch.run import build_trainer

    trainer, mix = build_trainer(_recipe(credit, steps, f"{scratch}/procrl-{credit}"))
    timer = StepTimer()
    trainer.add_callback(timer.callback)
    return _train_timed(trainer, timer)


def _train_timed(trainer, timer: StepTimer) -> dict:
    """Train, timing each step (``timer``) and each call of TRL's ``_calculate_rewards`` (the reward
    functions, procrl's mix on procrl's side); the warm-up step is left out of both."""
    reward_seconds = []
    original = trainer._calculate_rewards

    def timed_rewards(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            reward_seconds.append(time.perf_counter() - started)

    trainer._calculate_rewards = timed_rewards
    trainer.train()
    return {"steps": timer.steps[1:], "reward_seconds": reward_seconds[1:]}


def time_plain_trl(credit: str, steps: int, scratch: str) -> dict:
    from trl import GRPOTrainer

    from procrl.launch.run import _trainer_inputs, build_training_args, preflight

    recipe = _recipe(credit, steps, f"{scratch}/trl-{credit}")
    mix, _ = preflight(recipe)
    functions = [plain_accuracy] + ([plain_first_error] if credit == "process" else [])
    weights = [mix.specs["accuracy"].weight] + ([mix.specs["first_error"].weight] if credit == "process" else [])
    args = build_training_args(recipe, weights)
    tokenizer, dataset, _ = _trainer_inputs(recipe, args)
    from procrl.models.loading import policy_source

    timer = StepTimer()
    trainer = GRPOTrainer(
        model=policy_source(recipe.model).path,
        reward_funcs=functions,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[timer.callback],
    )
    return _train_timed(trainer, timer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6, help="timed steps per trainer and round (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the two sides")
    parser.add_argument("--credits", nargs="+", default=list(CREDITS), choices=list(CREDITS))
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    results = {"steps": args.steps, "rounds": args.rounds, "credits": {}}
    with tempfile.TemporaryDirectory(prefix="procrl-overhead-") as scratch:
        for credit in args.credits:
            sides: dict[str, dict[str, list[float]]] = {
                "procrl": {"steps": [], "reward_seconds": []},
                "trl": {"steps": [], "reward_seconds": []},
            }
            for round_index in range(args.rounds):
                order = [("trl", time_plain_trl), ("procrl", time_procrl)]
                for side, run in order if round_index % 2 == 0 else order[::-1]:
                    timed = run(credit, args.steps, f"{scratch}/{round_index}")
                    for key in ("steps", "reward_seconds"):
                        sides[side][key] += timed[key]
            procrl_step = statistics.median(sides["procrl"]["steps"])
            trl_step = statistics.median(sides["trl"]["steps"])
            share = sum(sides["procrl"]["reward_seconds"]) / sum(sides["procrl"]["steps"])
            trl_share = sum(sides["trl"]["reward_seconds"]) / sum(sides["trl"]["steps"])
            results["credits"][credit] = {
                "procrl_step_s": procrl_step,
                "trl_step_s": trl_step,
                "ratio": procrl_step / trl_step,
                "procrl_reward_share": share,
                "trl_reward_share": trl_share,
                "samples": sides,
            }
            print(
                f"{credit:>8} credit: procrl {procrl_step:.3f} s/step, plain TRL {trl_step:.3f} s/step, "
                f"ratio {procrl_step / trl_step:.3f}; reward mix {share:.1%} of procrl's step "
                f"(plain functions {trl_share:.1%} of TRL's); median of {len(sides['procrl']['steps'])} steps each",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
