"""TRACE and ReCEval on commonsense reasoning: prose steps without a number, under a choice or yes/no
answer. Both papers call their method domain-agnostic; here they must score such chains without
a failure, and never give an answer alone (or hedging, or padding) the score of worked reasoning."""

import math

import pytest

from procrl.rewards import RewardBatch, RewardMix, parse_rewards

CSQA = {"label": ["A", "B", "C", "D", "E"], "text": ["ocean", "nightstand", "freezer", "volcano", "mailbox"]}
QUESTION = (
    "Where would you put a book you want to read later tonight?\n"
    "Answer Choices: (A) ocean (B) nightstand (C) freezer (D) volcano (E) mailbox"
)
CHAINS = {
    "worked": "You read a book in bed before sleeping.\nSo the book should be somewhere next to the bed.\n"
    "A nightstand stands next to the bed, while an ocean, a freezer, a volcano and a mailbox are far from it.\n"
    "The answer is (B).",
    "slip": "You read a book in the kitchen.\nSo the book should be kept cold.\nA freezer keeps things cold.\n"
    "The answer is (C).",
    "answer_alone": "The answer is (B).",
    "bold_alone": "**B**",
    "hedging": "Hmm, maybe it is somewhere.\nI guess it could be anywhere, I am not sure.\nWait, maybe.\n"
    "The answer is (B).",
    "padding": "You read a book in bed.\nYou read a book in bed.\nYou read a book in bed.\nYou read a book in bed.\n"
    "The answer is (B).",
}
YES_NO = {
    "worked": "Goldfish breathe with gills, which take oxygen from water.\nA desert has almost no water.\n"
    "So a goldfish would not survive there.\nSo the answer is no.",
    "answer_alone": "No.",
}


def _batch(chains, kind="choice"):
    n = len(chains)
    if kind == "choice":
        return RewardBatch.from_texts(
            list(chains.values()), [QUESTION] * n, ["B"] * n, answer_kind=["choice"] * n, choices=[CSQA] * n
        )
    return RewardBatch.from_texts(
        list(chains.values()), ["Could a goldfish survive in a desert?"] * n, ["no"] * n, answer_kind=["yes_no"] * n
    )


def _scores(mix, name, chains, kind="choice"):
    batch = _batch(chains, kind)
    output = mix.compute(name, batch)
    assert not any(output.failures.get(k) for k in ("exception", "wrong_length", "non_finite"))
    return dict(zip(chains, output.scores)), output, batch


def test_the_answer_block_is_not_a_step():
    batch = _batch(CHAINS)
    steps = {name: len(s.steps) for name, s in zip(CHAINS, batch.segmentations)}
    assert steps == {"worked": 3, "slip": 3, "answer_alone": 0, "bold_alone": 0, "hedging": 3, "padding": 4}
    assert [len(s.steps) for s in _batch(YES_NO, "yes_no").segmentations] == [3, 0]


def test_trace_cue_tagger_on_prose():
    mix = RewardMix(parse_rewards({"trace": {"tagger": "cues"}}))
    scores, output, _ = _scores(mix, "trace", CHAINS)
    assert scores["answer_alone"] == scores["bold_alone"] == 0.0  # no reasoning: the bottom
    assert scores["worked"] > scores["padding"] > scores["hedging"] == 0.0
    assert scores["worked"] == pytest.approx(0.383, abs=1e-3)  # one Claim among three sentences (the cue tagger)
    assert output.details[0]["labels"][1] == ["Claim"]
    yes_no, _, _ = _scores(mix, "trace", YES_NO, "yes_no")
    assert yes_no["answer_alone"] == 0.0 and yes_no["worked"] > 0.0


def test_trace_model_tagger_on_prose(tmp_path):
    from procrl.trainers.tagger import write_tiny_tagger

    tagger = write_tiny_tagger(tmp_path / "tagger")
    mix = RewardMix(parse_rewards({"trace": {"tagger": str(tagger)}}))
    scores, output, batch = _scores(mix, "trace", CHAINS)
    assert scores["answer_alone"] == scores["bold_alone"] == 0.0
    from procrl.rewards.trace import trace_score

    for name in ("worked", "slip", "hedging", "padding"):  # the tagger's labels, scored by the TRACE formula
        assert scores[name] == pytest.approx(trace_score(output.details[list(CHAINS).index(name)]["labels"]).score)
    assert len(output.details[0]["labels"]) == len(batch.segmentations[0].sentences)


def test_receval_correctness_on_prose(tmp_path):
    from procrl.rewards.scorers.nli import write_tiny_nli_model

    model = write_tiny_nli_model(tmp_path / "nli", force_label="entailment")
    mix = RewardMix(parse_rewards({"receval_correctness": {"nli_model": str(model)}}))
    scores, output, batch = _scores(mix, "receval_correctness", CHAINS)
    assert scores["answer_alone"] == scores["bold_alone"] == 0.0  # no_steps_score, the bottom of [0, 1]
    assert output.failures.get("no_steps") == 2
    for name in ("worked", "slip", "hedging", "padding"):
        assert scores[name] > 0.999  # every step entailed: the forced model's verdict reached the score
        assert len(output.step_scores[list(CHAINS).index(name)]) == len(
            batch.segmentations[list(CHAINS).index(name)].steps
        )


def test_receval_informativeness_targets_the_option(tmp_path):
    from procrl.models.loading import ensure_tiny_model

    mix = RewardMix(parse_rewards({"receval_informativeness": {"lm": str(ensure_tiny_model())}}))
    scores, output, _ = _scores(mix, "receval_informativeness", CHAINS)
    assert output.details[0]["target"] == " The answer is (B) nightstand."
    assert output.details[1]["target"] == " The answer is (C) freezer."
    assert scores["answer_alone"] == scores["bold_alone"] == -1.0  # no steps: the bottom of [-1, 1]
    for name in ("worked", "slip", "hedging", "padding"):  # the chain's weakest step: tanh of its information gain
        details = output.details[list(CHAINS).index(name)]
        assert details["step_values"] == pytest.approx([math.tanh(g) for g in details["ig"]])
        assert scores[name] == min(details["step_values"])
    yes_no, output, _ = _scores(mix, "receval_informativeness", YES_NO, "yes_no")
    assert output.details[0]["target"] == " The answer is no." and yes_no["answer_alone"] == -1.0


def test_the_csqa_mix_pays_nothing_for_skipping_hedging_or_padding():
    """recipes/csqa_trace.yaml offline (its LLM judge left out, TRACE on the cue tagger), on the
    five completions of the integrity cases written for a CommonsenseQA question: worked (W), a
    false fact with the answer kept (S), S padded with restatements (P), the answer alone (A),
    hedging then the answer (H)."""
    from procrl.evaluation.score import score_rows
    from procrl.recipe import load_recipe
    from tests.helpers.launch import REPO
    from tests.helpers.rewards import offline_overrides

    path = REPO / "recipes" / "csqa_trace.yaml"
    mix = RewardMix(load_recipe(path, offline_overrides(path)).rewards)
    slip = CHAINS["worked"].replace("in bed before sleeping", "in the bathtub before sleeping")
    padded = (
        slip.replace("The answer is (B).", "")
        + "\n".join(["A book is something you read."] * 3)
        + "\nThe answer is (B)."
    )
    cases = {"W": CHAINS["worked"], "S": slip, "P": padded, "A": CHAINS["answer_alone"], "H": CHAINS["hedging"]}
    rows = [
        {"question": QUESTION, "completion": c, "answer": "B", "answer_kind": "choice", "choices": CSQA}
        for c in cases.values()
    ]
    total = dict(zip(cases, (row["reward"] for row in score_rows(mix, rows))))
    assert total["W"] > total["A"] and total["W"] > total["H"]
    assert total["W"] >= total["S"] >= total["P"]
    assert total["A"] == pytest.approx(1.0)  # the answer alone: accuracy only (format requires reasoning, TRACE 0)
