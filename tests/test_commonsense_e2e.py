"""End to end on CPU, on a multiple-choice dataset: a few GRPO steps of the tiny random-weight
model (procrl:tiny-qwen2) on the CommonsenseQA fixture, with accuracy, format, TRACE and an LLM
first-error judge (the local OpenAI-compatible test server, naming error categories), then
``procrl evaluate`` of the trained model and ``procrl validate`` of labelled traces, the category
histograms written by both."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from procrl.testing.openai_server import Reply, ScriptedOpenAIServer

REPO = Path(__file__).resolve().parents[1]
QA = REPO / "tests" / "data" / "qa"
CATEGORIES = ("Misinterpretation", "Hallucination", "Reasoning")


def responder(prompt: str, attempt: int) -> Reply:
    """A judge whose verdict depends on the reasoning only: the random model's word salad always
    has its step 0 wrong, under a category chosen by a hash of the steps."""
    steps = re.findall(r"<step_\d+>\n(.*?)\n</step_\d+>", prompt, re.S)
    if "multiple-choice" not in prompt or not steps:
        return Reply("no verdict")
    digest = int(hashlib.sha256("".join(steps).encode()).hexdigest(), 16)
    return Reply(f"Step 0 is wrong. \\boxed{{0}}\nCategory: {CATEGORIES[digest % 3]}")


def test_grpo_evaluate_validate_on_a_choice_dataset(tmp_path):
    from procrl.evaluation.evaluate.run import Sampling, evaluate
    from procrl.evaluation.validate.run import run_validation
    from procrl.launch.run import train
    from procrl.recipe import load_recipe

    with ScriptedOpenAIServer(responder) as server:
        recipe_path = tmp_path / "recipe.yaml"
        recipe_path.write_text(f"""recipe: procrl/v1
model: {{name_or_path: procrl:tiny-qwen2, dtype: float32}}
data: {{dataset: {QA / "commonsense_qa"}, split: train, eval_split: validation}}
trainer:
  algorithm: grpo
  learning_rate: 1.0e-3
  num_generations: 4
  per_device_train_batch_size: 4
  max_completion_length: 24
  max_steps: 3
  logging_steps: 1
  save_steps: 100
  beta: 0.0
  seed: 0
  report_to: none
rewards:
  accuracy: {{weight: 1.0}}
  format: {{weight: 0.2, partial: true}}
  trace: {{weight: 0.2, tagger: cues}}
  first_error: {{weight: 0.5, backend: openai, model: judge, base_url: "{server.base_url}", reference: answer,
                 categories: true, timeout_s: 10}}
logging: {{diagnostics: true}}
""")
        run = tmp_path / "run"
        trainer = train(load_recipe(recipe_path, output_dir=str(run)))
        history = [h for h in trainer.state.log_history if "rewards/first_error/mean" in h]
        assert len(history) == 3
        logged = {k for h in history for k in h}
        assert {f"rewards/first_error/category/{c}" for c in CATEGORIES} <= logged
        prompts = [r["prompt"] for r in server.requests]
        assert prompts and all(
            "Answer Choices: (A) " in p and "Correct final answer (for your reference): (" in p for p in prompts
        )

        # sampled: greedy, the random model writes blank lines (no step to judge)
        report = evaluate(
            load_recipe(recipe_path),
            model=str(run),
            split="validation",
            output_dir=tmp_path / "eval",
            max_new_tokens=24,
            sampling=Sampling(temperature=1.0, num_samples=2, seed=0),
        )
        assert report["answer_kind"] == "choice" and report["n"] == 3 and report["completions"] == 6
        for key in ("answer_accuracy", "reasoning_aware_accuracy", "inflation"):
            assert report[key] is not None and -1.0 <= report[key] <= 1.0
        assert report["reasoning_aware_accuracy"] <= report["answer_accuracy"]
        assert (tmp_path / "eval" / "report.json").is_file()
        found = report["first_error"]["categories"]
        assert set(found["all"]) == {*CATEGORIES, "none"} and sum(found["all"].values()) > 0
        assert (tmp_path / "eval" / "first_error_categories.png").is_file()

        result = run_validation(str(recipe_path), [], str(QA / "labelled_choice.jsonl"), resamples=100)
        judge = result.report["components"]["first_error"]
        assert sum(sum(c.values()) for c in judge["categories"].values()) > 0
        assert result.report["components"]["accuracy"]["agreement"]["agreement"] == 1.0
        (tmp_path / "validate.json").write_text(json.dumps(judge["categories"]))
