"""The LLM first-error judges on multiple-choice and yes/no reasoning, as ReTraceQA runs them:
reference-free and with the gold answer (its letter and text), the error category parsed and
counted, against the local OpenAI-compatible test server (the stand-in for a served judge)."""

from __future__ import annotations

import re

import pytest

from procrl.observe import stats as diag
from procrl.rewards import RewardBatch, RewardMix, parse_rewards
from procrl.rewards.judges.prompt import build_prompt
from procrl.testing.openai_server import Reply, ScriptedOpenAIServer

CSQA = {"label": ["A", "B", "C", "D", "E"], "text": ["ocean", "nightstand", "freezer", "volcano", "mailbox"]}
QUESTION = (
    "Where would you put a book you want to read later tonight?\n"
    "Answer Choices: (A) ocean (B) nightstand (C) freezer (D) volcano (E) mailbox"
)
SOUND = "You read a book in bed before sleeping.\nA nightstand stands next to the bed.\nThe answer is (B)."
MISREAD = "The question asks where to keep food cold.\nA freezer keeps food cold.\nThe answer is (C)."
INVENTED = "Books must be stored below zero degrees.\nA freezer is below zero degrees.\nThe answer is (C)."
LEAP = "You read a book in bed.\nSo the book goes in the ocean.\nThe answer is (A)."
GOLDFISH = "Goldfish breathe with gills in water.\nA desert has no water.\nSo the answer is no."
VERDICTS = {  # the scripted judge: what a judge model replies to each chain
    "keep food cold": "Step 0 misreads the question. \\boxed{0}\nCategory: Misinterpretation",
    "below zero": "Step 0 states a false fact. \\boxed{0}\nCategory: **Hallucination**",
    "goes in the ocean": "Step 1 does not follow. \\boxed{1}\nCategory: Reasoning",
    "nightstand stands": "Every step holds. \\boxed{-1}",
    "gills": "Every step holds. \\boxed{-1}",
}


def responder(prompt: str, attempt: int) -> Reply:
    return next(Reply(reply) for key, reply in VERDICTS.items() if key in prompt)


@pytest.fixture
def server():
    with ScriptedOpenAIServer(responder) as running:
        yield running


def _mix(base_url, **settings):
    spec = {"backend": "openai", "model": "judge", "base_url": base_url, "categories": True, **settings}
    return RewardMix(parse_rewards({"accuracy": {}, "first_error": spec}))


def _batch(completions, golds=None, kinds=None):
    n = len(completions)
    return RewardBatch.from_texts(
        completions, [QUESTION] * n, golds or ["B"] * n, answer_kind=kinds or ["choice"] * n, choices=[CSQA] * n
    )


def test_the_prompt_for_a_choice_question():
    prompt = build_prompt(QUESTION, ["You read a book in bed."], "(B) nightstand", categories=True, kind="choice")
    assert prompt.startswith("You are checking step-by-step reasoning that answers a multiple-choice question")
    assert "Question:\n" + QUESTION in prompt and "math" not in prompt
    assert "Correct final answer (for your reference): (B) nightstand" in prompt
    assert "the facts and knowledge it states" in prompt
    assert "Category: Misinterpretation" in prompt and "Category: Hallucination" in prompt
    assert build_prompt("q", ["s"], None, kind="yes_no").startswith(
        "You are checking step-by-step reasoning that answers a yes/no question"
    )
    number = build_prompt("q", ["s"], "18")
    assert number.startswith("You are checking a step-by-step solution to a math problem")


@pytest.mark.parametrize("reference, shown", [(False, None), ("answer", "(B) nightstand"), (True, "(B) nightstand")])
def test_reference_free_and_with_the_gold_letter_and_text(server, reference, shown):
    mix = _mix(server.base_url, reference=reference)
    mix.compute("first_error", _batch([SOUND]))
    prompt = server.requests[-1]["prompt"]
    if shown is None:
        assert "Correct final answer" not in prompt
    else:
        assert f"Correct final answer (for your reference): {shown}\n" in prompt


def test_yes_no_gold_is_shown_as_yes_or_no(server):
    mix = _mix(server.base_url, reference="answer")
    batch = RewardBatch.from_texts(
        [GOLDFISH], ["Could a goldfish survive in a desert?"], [False], answer_kind=["yes_no"]
    )
    output = mix.compute("first_error", batch)
    assert "Correct final answer (for your reference): no\n" in server.requests[-1]["prompt"]
    assert "a yes/no question" in server.requests[-1]["prompt"]
    assert output.scores == [0.0]


def test_categories_parsed_counted_and_in_the_diagnostics(server):
    mix = _mix(server.base_url)
    completions = [SOUND, MISREAD, INVENTED, LEAP]
    batch = _batch(completions)
    outputs = mix.score_all(batch)
    judged = outputs["first_error"]
    assert judged.scores == [0.0, -1.0, -1.0, -1.0]
    assert [d["category"] for d in judged.details] == [None, "Misinterpretation", "Hallucination", "Reasoning"]
    assert judged.metrics["category/Misinterpretation"] == pytest.approx(1 / 3)
    assert judged.metrics["category/Hallucination"] == pytest.approx(1 / 3)
    assert judged.metrics["category/none"] == 0.0
    records = diag.first_error_records(judged)
    assert diag.category_counts(records) == {"Misinterpretation": 1, "Hallucination": 1, "Reasoning": 1, "none": 0}
    correct = [s == 1.0 for s in outputs["accuracy"].scores]
    assert correct == [True, False, False, False]
    assert diag.category_counts(records, correct) == {
        "Misinterpretation": 0,
        "Hallucination": 0,
        "Reasoning": 0,
        "none": 0,
    }
    scalars = diag.batch_scalars({"accuracy": "accuracy", "first_error": "first_error"}, outputs)
    assert scalars["diagnostics/first_error/category/Reasoning"] == pytest.approx(1 / 3)


def test_correct_only_reads_the_option(server):
    mix = _mix(server.base_url, penalty="correct_only")
    output = mix.compute("first_error", _batch([MISREAD, MISREAD], golds=["C", "B"]))
    assert output.scores == [-1.0, 0.0]  # right answer, flawed reasoning: penalised; wrong answer: 0
    assert [d["answer_correct"] for d in output.details] == [True, False]


def test_the_hf_judge_builds_the_same_prompt():
    from procrl.models.loading import ensure_tiny_model
    from procrl.rewards.judges.hf import HFJudge
    from procrl.rewards.judges.protocol import JudgeItem
    from procrl.rewards.judges.settings import HFSettings

    judge = HFJudge(HFSettings(model=str(ensure_tiny_model()), reference=True, categories=True))
    from transformers import AutoTokenizer

    judge._tokenizer = AutoTokenizer.from_pretrained(str(ensure_tiny_model()))
    text = judge._text(JudgeItem(QUESTION, ("You read a book in bed.",), "(B) nightstand", kind="choice"))
    assert "answers a multiple-choice question" in text and "(B) nightstand" in text
    assert re.search(r"Category: Reasoning", text)


def test_categories_reach_the_wandb_payload(server):
    import wandb

    from procrl.observe.callback import DiagnosticsCallback

    mix = _mix(server.base_url)
    callback = DiagnosticsCallback.attach(mix)
    mix.score_all(_batch([SOUND, MISREAD, LEAP]))  # the callback observes the scored batch
    payload = callback._wandb_payload(wandb, {}, plots=False, step=1)
    chart = payload["train/diagnostics/first_error/categories"]
    assert isinstance(chart, wandb.plot.CustomChart)
    assert chart.table.data == [["Misinterpretation", 1], ["Hallucination", 0], ["Reasoning", 1], ["none", 0]]
