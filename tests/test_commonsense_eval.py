"""procrl score, evaluate and validate on multiple-choice and yes/no rows: score rows carrying
their options and a letter or yes/no gold; evaluate's answer accuracy, reasoning-aware accuracy,
inflation and errors per category; validate's accuracy agreement, every component's AUROC and the
judge's categories per class, on hand-labelled procrl JSONL and BIG-Bench-Mistake-format traces.
The LLM judge is the local OpenAI-compatible test server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.testing.openai_server import Reply, ScriptedOpenAIServer

QA = Path(__file__).parent / "data" / "qa"
# the scripted judge: an error in the chains whose first step is false, with its ReTraceQA category
FLAWS = {
    "kept in the freezer": ("0", "Hallucination"),
    "keep food cold": ("0", "Misinterpretation"),
    "nightstand or the mailbox": ("1", "Reasoning"),
    "makes plants cold": ("0", "Hallucination"),
    "breathe air like cats": ("0", "Hallucination"),
    "giant ice cube": ("0", "Hallucination"),
    "the apple comes before the pear": ("0", "Reasoning"),
    "plum, apple, pear": ("1", "Reasoning"),
    "make steel": ("0", "Hallucination"),
}


def responder(prompt: str, attempt: int) -> Reply:
    for key, (index, category) in FLAWS.items():
        if key in prompt:
            return Reply(f"That step is wrong. \\boxed{{{index}}}\nCategory: {category}")
    return Reply("Every step holds. \\boxed{-1}")


@pytest.fixture(scope="module")
def server():
    with ScriptedOpenAIServer(responder) as running:
        yield running


def _recipe(tmp_path, server, dataset=QA / "commonsense_qa", extra="") -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(f"""recipe: procrl/v1
model: {{name_or_path: procrl:tiny-qwen2}}
data: {{dataset: {dataset}, split: train, eval_split: validation}}
rewards:
  accuracy: {{weight: 1.0}}
  format: {{weight: 0.2}}
  trace: {{weight: 0.5, tagger: cues}}
  first_error: {{weight: 0.5, backend: openai, model: judge, base_url: "{server.base_url}", reference: answer,
                 categories: true, timeout_s: 5}}
{extra}""")
    return path


# --- score ---------------------------------------------------------------------------------------


def test_score_rows_with_options_in_either_schema(tmp_path, server):
    from procrl.evaluation.score import score_file
    from procrl.recipe import load_recipe
    from procrl.rewards import RewardMix

    rows = [
        {
            "question": "Where would you put a book?",
            "completion": "You read in bed.\nThe answer is (B).",
            "choices": {"label": ["A", "B"], "text": ["ocean", "nightstand"]},
            "answer": "B",
        },
        {
            "question": "Where would you put a book?",
            "completion": "You read in bed.\nnightstand",
            "choices": [{"label": "A", "text": "ocean"}, {"label": "B", "text": "nightstand"}],
            "answer": "A",
        },
        {"question": "Could a goldfish live in a desert?", "completion": "Goldfish need water.\nNo.", "answer": False},
        {"question": "Is it a number?", "completion": "3 + 4 = 7\n#### 7", "answer": "#### 7"},
    ]
    data, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    mix = RewardMix(load_recipe(_recipe(tmp_path, server), scoring=True).rewards)
    score_file(mix, str(data), str(out), progress=False)
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["rewards"]["accuracy"] for r in scored] == [1.0, 0.0, 1.0, 1.0]
    assert [r["diagnostics"]["accuracy"]["predicted"] for r in scored] == ["B", "B", False, 7.0]
    assert [len(r["steps"]) for r in scored] == [1, 1, 1, 1]  # the answer line is not a step
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"completion": "x", "choices": {"label": ["A"], "text": ["y"]}, "answer": "Q"}) + "\n")
    with pytest.raises(ConfigError, match=r"bad.jsonl:1: 'answer' must be one of its choices"):
        score_file(mix, str(bad), str(tmp_path / "o2.jsonl"), progress=False)


def test_score_refuses_a_number_judge_on_choice_rows(tmp_path):
    from procrl.evaluation.score import score_file
    from procrl.rewards import RewardMix, parse_rewards

    data = tmp_path / "in.jsonl"
    data.write_text(
        json.dumps(
            {"completion": "x\nThe answer is (A).", "answer": "A", "answer_kind": "choice", "choices": ["ocean", "bed"]}
        )
        + "\n"
    )
    mix = RewardMix(parse_rewards({"first_error": {"backend": "arithmetic"}}))
    with pytest.raises(ConfigError, match=r"^rewards.first_error.backend: 'arithmetic' .* are choice \(row 1\)"):
        score_file(mix, str(data), str(tmp_path / "out.jsonl"), progress=False)


# --- evaluate ------------------------------------------------------------------------------------

COMPLETIONS = [  # CommonsenseQA's validation fixture: fish, feet, bees
    "Fish breathe with gills in water.\nThey cannot live on land.\nThe answer is (B).",
    "Books are usually kept in the freezer.\nYou wear shoes to walk outside.\n**C**",  # right answer, flawed
    "Bees make steel in their hives.\nSo the answer is (B).",  # wrong
]


def test_evaluate_reports_retraceqa_table_on_a_choice_dataset(tmp_path, server):
    from procrl.evaluation.evaluate.run import evaluate
    from procrl.recipe import load_recipe

    recipe = load_recipe(_recipe(tmp_path, server))
    report = evaluate(recipe, split="validation", output_dir=tmp_path / "eval", completions=COMPLETIONS)
    assert report["answer_kind"] == "choice"
    assert report["answer_accuracy"] == pytest.approx(2 / 3)
    assert report["reasoning_aware_accuracy"] == pytest.approx(1 / 3)
    assert report["inflation"] == pytest.approx(1 / 3)
    assert report["first_error"]["categories"] == {
        "all": {"Misinterpretation": 0, "Hallucination": 2, "Reasoning": 0, "none": 0},
        "right_answer": {"Misinterpretation": 0, "Hallucination": 1, "Reasoning": 0, "none": 0},
    }
    assert (
        "first_error_categories.png" in report["plots"] and (tmp_path / "eval" / "first_error_categories.png").is_file()
    )
    markdown = (tmp_path / "eval" / "report.md").read_text()
    assert "answers: choice" in markdown and "| Hallucination | 2 | 1 |" in markdown
    rows = [json.loads(line) for line in (tmp_path / "eval" / "completions.jsonl").read_text().splitlines()]
    assert rows[1]["answer_kind"] == "choice" and rows[1]["error_category"] == "Hallucination"
    assert rows[1]["choices"][2] == {"label": "C", "text": "shoes"}
    judge_prompts = [r["prompt"] for r in server.requests if "Bees make steel" in r["prompt"]]
    assert "Correct final answer (for your reference): (A) honey" in judge_prompts[-1]


# --- validate ------------------------------------------------------------------------------------


def test_validate_labelled_choice_and_yes_no_rows(tmp_path, server):
    from procrl.evaluation.validate.run import run_validation

    report = run_validation(str(_recipe(tmp_path, server)), [], str(QA / "labelled_choice.jsonl"), resamples=200).report
    assert report["format"] == "procrl" and report["n"] == 10
    assert report["classes"] == {"sound": 4, "right_answer_flawed": 2, "wrong_answer": 4}
    agreement = report["components"]["accuracy"]["agreement"]
    assert (agreement["agree"], agreement["scored"]) == (10, 10)
    # accuracy is 1 on the 6 right answers (4 sound, 2 flawed) and 0 on the 4 wrong ones: of the 4 x 6
    # sound-flawed pairs, 16 are ordered and 8 tied, so AUROC = (16 + 8 / 2) / 24
    assert report["components"]["accuracy"]["auroc"] == pytest.approx(20 / 24)
    for name in ("format", "trace", "reward"):
        entry = report["components"].get(name, report["reward"])
        assert 0.0 <= entry["auroc"] <= 1.0, name
    assert report["components"]["first_error"]["auroc"] == 1.0  # the scripted judge finds every labelled flaw
    assert report["components"]["first_error"]["categories"] == {
        "right_answer_flawed": {"Misinterpretation": 0, "Hallucination": 2, "Reasoning": 0, "none": 0},
        "wrong_answer": {"Misinterpretation": 1, "Hallucination": 2, "Reasoning": 1, "none": 0},
    }


def test_validate_reads_big_bench_mistake_multiple_choice_traces(tmp_path, server):
    from procrl.evaluation.corpora import read_solutions
    from procrl.evaluation.validate.run import run_validation

    fmt, solutions = read_solutions(str(QA / "bbm_style.jsonl"))
    assert fmt == "big-bench-mistake" and {s.answer_kind for s in solutions} == {"choice"}
    assert solutions[0].choices[1] == {"label": "B", "text": "The pear is the leftmost."}
    report = run_validation(str(_recipe(tmp_path, server)), [], str(QA / "bbm_style.jsonl"), resamples=200).report
    agreement = report["components"]["accuracy"]["agreement"]
    assert (agreement["agree"], agreement["scored"]) == (4, 4)  # "(A), (B), or (C)." is read as no answer: wrong
    assert report["classes"] == {"sound": 1, "wrong_answer": 2, "right_answer_flawed": 1}


def test_evaluate_majority_vote_over_option_letters(tmp_path, server):
    from procrl.evaluation.evaluate.run import Sampling, evaluate
    from procrl.recipe import load_recipe

    samples = [
        COMPLETIONS[0],
        "Fish swim.\nThe answer is (A).",  # fish: B then A (first seen wins a tie)
        COMPLETIONS[1],
        "Shoes are worn outside.\n(C) shoes",  # feet: C, C
        "Bees make honey.\nThe answer is (A).",
        COMPLETIONS[2],
    ]  # bees: A then B
    report = evaluate(
        load_recipe(_recipe(tmp_path, server)),
        split="validation",
        output_dir=tmp_path / "eval",
        completions=samples,
        sampling=Sampling(temperature=1.0, num_samples=2),
    )
    assert report["answer_accuracy"] == pytest.approx((0.5 + 1.0 + 0.5) / 3)
    assert report["sampled"]["maj@2"] == pytest.approx(1.0)  # ties go to the first seen: B, C, A
