"""ReCEval: formulas over hand-set probabilities, the RCU split, NLI label mapping with forced
tiny models, batched scorers against one-at-a-time computation, and both components."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch

from procrl.core.config import ConfigError
from procrl.rewards import RewardBatch, RewardMix, RuntimeContext
from procrl.rewards.receval import (
    RCU,
    ReCEvalCorrectness,
    ReCEvalInformativeness,
    chain_minimum,
    correctness_step_scores,
    format_answer,
    information_gains,
    informativeness_contexts,
    informativeness_step_scores,
    inter_step_score,
    intra_step_score,
    plan_correctness_pairs,
    score_correctness_plan,
    split_rcus,
)
from procrl.rewards.scorers.info_gain import ReferenceModelError, TargetLogProbScorer, reference_lm
from procrl.rewards.scorers.nli import NLILabelError, NLIScorer, nli_label_indices, write_tiny_nli_model

ORDER_A = {0: "entailment", 1: "neutral", 2: "contradiction"}
ORDER_B = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}


def whole_step_splitter(step: str):
    """A custom splitter (referenced by name from a test): no premises, the step concludes."""
    return [], step


def picky_splitter(step: str):
    """A custom splitter that fails on steps mentioning 'boom'."""
    if "boom" in step:
        raise ValueError("cannot split")
    return [], step


# --- formulas ------------------------------------------------------------------------------


def test_no_premises_scores_one():
    assert intra_step_score(None) == 1.0
    assert inter_step_score([]) == 1.0
    plan = plan_correctness_pairs([RCU((), "Tom has 5 apples.")], question_sentences=[])
    assert plan.intra == (None,) and plan.inter == ((),)
    values, intra, inter = score_correctness_plan(plan, {})
    assert values == [1.0] and intra == [1.0] and inter == [1.0]


def test_single_step_is_min_of_entailment_and_non_contradiction():
    plan = plan_correctness_pairs([RCU(("Tom has 2 apples", "he buys 3"), "he has 5")], ["Tom has 2 apples."])
    assert plan.intra == (("Tom has 2 apples and he buys 3", "he has 5"),)
    assert plan.inter == ((("Tom has 2 apples.", "he has 5"),),)
    probabilities = {plan.intra[0]: (0.7, 0.1), plan.inter[0][0]: (0.2, 0.25)}
    values, intra, inter = score_correctness_plan(probabilities=probabilities, plan=plan)
    assert intra == [0.7] and inter == [0.75] and values == [0.7]
    assert chain_minimum(values) == (0.7, 0)


def test_minimum_is_taken_per_metric_and_over_steps():
    intra = [0.9, 0.3, 0.8]
    inter = [0.6, 0.95, 0.5]
    values = correctness_step_scores(intra, inter)
    assert values == [0.6, 0.3, 0.5]
    assert chain_minimum(values) == (0.3, 1)
    gains = information_gains([-3.0, -2.0, -2.5, -0.5])
    assert gains == pytest.approx([1.0, -0.5, 2.0])
    steps = informativeness_step_scores(gains, tau=1.0)
    assert steps == pytest.approx([math.tanh(1.0), math.tanh(-0.5), math.tanh(2.0)])
    assert chain_minimum(steps) == (pytest.approx(math.tanh(-0.5)), 1)
    assert informativeness_step_scores([1.0], tau=2.0) == pytest.approx([math.tanh(0.5)])
    assert chain_minimum([0.2, 0.2]) == (0.2, 0)  # ties: the first step


def test_contradiction_against_question_vs_earlier_conclusions():
    question = ["Tom has 3 apples.", "He eats one."]
    rcus = [RCU((), "Tom has 2 apples left"), RCU(("he buys 4 more",), "Tom has 6 apples")]
    plan = plan_correctness_pairs(rcus, question)
    # step 1: only the question can be contradicted; step 2: the question and conclusion 1
    assert plan.inter[0] == (("Tom has 3 apples.", "Tom has 2 apples left"), ("He eats one.", "Tom has 2 apples left"))
    assert plan.inter[1] == (
        ("Tom has 3 apples.", "Tom has 6 apples"),
        ("He eats one.", "Tom has 6 apples"),
        ("Tom has 2 apples left", "Tom has 6 apples"),
    )
    assert plan.intra == (None, ("he buys 4 more and Tom has 2 apples left", "Tom has 6 apples"))
    base = {pair: (0.9, 0.0) for pair in plan.pairs()}

    against_question = dict(base)
    against_question[("He eats one.", "Tom has 2 apples left")] = (0.0, 0.8)
    values, intra, inter = score_correctness_plan(plan, against_question)
    assert inter == pytest.approx([0.2, 1.0]) and intra == [1.0, 0.9]
    assert chain_minimum(values) == (pytest.approx(0.2), 0)

    against_earlier = dict(base)
    against_earlier[("Tom has 2 apples left", "Tom has 6 apples")] = (0.0, 0.7)
    values, intra, inter = score_correctness_plan(plan, against_earlier)
    assert inter == pytest.approx([1.0, 0.3])
    assert chain_minimum(values) == (pytest.approx(0.3), 1)


def test_invalid_probabilities_are_refused():
    with pytest.raises(ValueError, match="probability"):
        intra_step_score(float("nan"))
    with pytest.raises(ValueError, match="probability"):
        inter_step_score([0.1, 1.5])
    with pytest.raises(ValueError, match="tau"):
        informativeness_step_scores([0.1], tau=0.0)
    with pytest.raises(ValueError):
        information_gains([-1.0])


def test_informativeness_contexts_and_answer_format():
    contexts = informativeness_contexts(["A is 2.", "B is 3."], "What is A+B?")
    assert contexts == [
        "What is A+B? Therefore,",
        "What is A+B?\nA is 2. Therefore,",
        "What is A+B?\nA is 2.\nB is 3. Therefore,",
    ]
    assert informativeness_contexts(["A is 2."], "What?", condition_on_question=False) == [
        "Therefore,",
        "A is 2. Therefore,",
    ]
    assert format_answer(72.0) == "72" and format_answer(0.5) == "0.5" and format_answer(-3.0) == "-3"


# --- RCU split -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "step, premises, conclusion",
    [
        ("She has 3 apples and 4 pears, so she has 7 fruits.", ("She has 3 apples", "4 pears"), "she has 7 fruits"),
        ("He runs 3 miles a day; thus he runs 21 miles a week", ("He runs 3 miles a day",), "he runs 21 miles a week"),
        (
            "Because it rained, the game was late, which means it ended at 9.",
            ("it rained", "the game was late"),
            "it ended at 9",
        ),
        # the clause that states the result, the calculation a premise (the released code's SRL gives clauses too)
        ("Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.", ("12/60 = $0.2",), "Weng earns $0.2 per minute"),
        (
            "She sold 48/2 = 24 clips in May; she kept 5 since they were red.",
            ("they were red", "she kept 5", "48/2 = 24"),
            "She sold 24 clips in May",
        ),
        (
            "He made a profit of 80,000 - 10,000 = $70,000.",
            ("80,000 - 10,000 = $70,000",),
            "He made a profit of $70,000",
        ),
        (
            "First find the total number of baby minks: 30 minks * 6 babies/mink = <<30*6=180>>180 minks",
            ("30 minks * 6 babies/mink = 180",),
            "First find the total number of baby minks: 180 minks",
        ),
        # because / since: the clause after them is a premise (ReCEval)
        ("Jenny has $25 because 5 x 5 = 25", ("5 x 5 = 25",), "Jenny has $25"),
        (
            "Since each box has 12 pens, 5 boxes have 5*12 = 60 pens.",
            ("each box has 12 pens", "5*12 = 60"),
            "5 boxes have 60 pens",
        ),
        # not conclusion markers
        ("So far she has 7 eggs.", (), "So far she has 7 eggs"),
        ("She saved so that she could buy 5 toys.", (), "She saved so that she could buy 5 toys"),
        ("Even so, he ate 3 apples.", (), "Even so, he ate 3 apples"),
        ("1 hour = 60 minutes", (), "1 hour = 60 minutes"),  # a quantity, not a calculation
        ("Tom is tall.", (), "Tom is tall"),
        ("So we are done", (), "we are done"),
    ],
)
def test_split_rcus_rules(step, premises, conclusion):
    assert split_rcus(step) == RCU(premises, conclusion)


def test_the_because_example_concludes_with_a_clause():
    rcu = split_rcus("Jenny has $25 because 5 x 5 = 25")
    assert "Jenny has" in rcu.conclusion and "5 x 5 = 25" in rcu.premises


def test_joined_premises_carry_no_final_periods():
    rcus = [split_rcus("She has 7 eggs."), split_rcus("She buys 3 more eggs, so she has 7 + 3 = 10 eggs.")]
    plan = plan_correctness_pairs(rcus, [])
    premise, conclusion = plan.intra[1]
    assert premise == "She buys 3 more eggs and 7 + 3 = 10 and She has 7 eggs" and conclusion == "she has 10 eggs"
    assert ". and" not in premise


def _fragment_share(rows) -> tuple[int, float]:
    from procrl.core.text import segment_batch
    from procrl.rewards.receval import letter_words

    conclusions = [
        split_rcus(step.text).conclusion for seg in segment_batch([r["answer"] for r in rows]) for step in seg.steps
    ]
    return len(conclusions), sum(letter_words(c) < 2 for c in conclusions) / len(conclusions)


def test_conclusions_are_clauses_on_gsm8k_reference_steps(gsm8k_train):
    """Fewer than two words of letters ('$40', '80 sheep', '1.5 hours') is a fragment; taking
    the result of the last equation as the conclusion gives 48% on these steps."""
    count, share = _fragment_share(_gsm8k_rows(gsm8k_train, 1000))
    assert count > 3000 and share <= 0.10, share


@pytest.mark.slow
def test_conclusions_are_clauses_on_all_gsm8k_train_reference_steps(gsm8k_train):
    """The README's number: every reference step of the 7,473 GSM8K train solutions."""
    count, share = _fragment_share(_gsm8k_rows(gsm8k_train, 10_000))
    print(f"\nGSM8K train reference steps: {count}, fragment conclusions: {share:.1%}")
    assert count > 25_000 and share <= 0.10, share


def test_nli_truncation_keeps_the_end_of_a_long_premise(forced_models):
    scorer = NLIScorer(str(forced_models["random"]), max_length=24)
    premise = " and ".join(f"step {i} gave {i} apples" for i in range(40)) + " and the last conclusion is here"
    (encoded,) = scorer.encode([(premise, "Tom has apples.")])
    text = scorer._tokenizer.decode(encoded["input_ids"])
    assert len(encoded["input_ids"]) <= 24
    assert "the last conclusion is here" in text and "Tom has apples." in text and "step 0 " not in text
    assert ReCEvalCorrectness.Settings().max_length == 512 and NLIScorer("x").max_length == 512


def test_splitter_is_pluggable_and_validated():
    settings = ReCEvalCorrectness.Settings(rcu_splitter="tests.test_receval:whole_step_splitter")
    component = ReCEvalCorrectness(settings)
    assert component.splitter("a and b, so c") == RCU((), "a and b, so c")
    with pytest.raises(ConfigError, match="rcu_splitter"):
        RewardMix.from_recipe_rewards({"receval_correctness": {"rcu_splitter": "tests.test_receval:missing"}})


# --- NLI label mapping ---------------------------------------------------------------------


def test_label_indices_from_id2label():
    assert nli_label_indices(ORDER_A) == (0, 2)
    assert nli_label_indices(ORDER_B) == (2, 0)
    assert nli_label_indices({"0": "Entail", "1": "Neutral", "2": "Contradict"}, 3) == (0, 2)
    with pytest.raises(NLILabelError, match="cannot map"):
        nli_label_indices({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(NLILabelError, match="3-way"):
        nli_label_indices({0: "entailment", 1: "not_entailment"}, 2)


@pytest.fixture(scope="module")
def forced_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("nli")
    models = {}
    for order_name, order in (("a", ORDER_A), ("b", ORDER_B)):
        for kind in ("entailment", "contradiction"):
            label = next(v for v in order.values() if v.lower() == kind)
            models[(order_name, kind)] = write_tiny_nli_model(
                root / f"{order_name}-{kind}", id2label=order, force_label=label
            )
    models["random"] = write_tiny_nli_model(root / "random", id2label=ORDER_B, seed=3)
    models["generic"] = write_tiny_nli_model(root / "generic", id2label={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    return models


def _gsm8k_rows(path, count):
    rows = []
    with open(path) as handle:
        for line in handle:
            rows.append(json.loads(line))
            if len(rows) == count:
                break
    return rows


@pytest.mark.parametrize("order", ["a", "b"])
def test_forced_entailment_and_contradiction_in_both_label_orders(forced_models, gsm8k_train, order):
    rows = _gsm8k_rows(gsm8k_train, 3)
    batch = RewardBatch.from_texts(
        [r["answer"] for r in rows], [r["question"] for r in rows], [r["answer"] for r in rows]
    )

    entail = ReCEvalCorrectness(ReCEvalCorrectness.Settings(nli_model=str(forced_models[(order, "entailment")])))
    output = entail.score(batch)
    assert all(s > 0.999 for s in output.scores)
    assert all(v > 0.999 for d in output.details for v in d["intra"] + d["inter"])

    contradict = ReCEvalCorrectness(ReCEvalCorrectness.Settings(nli_model=str(forced_models[(order, "contradiction")])))
    output = contradict.score(batch)
    assert all(v < 1e-3 for d in output.details for v in d["inter"])
    assert all(s < 1e-3 for s in output.scores)
    assert output.metrics["inter_mean"] < 1e-3
    for i, details in enumerate(output.details):
        assert len(details["step_values"]) == len(batch.segmentations[i].steps) == len(output.step_scores[i])
        assert details["min_step"] == 0


def test_unmappable_model_is_refused(forced_models):
    scorer = NLIScorer(str(forced_models["generic"]))
    with pytest.raises(NLILabelError, match="LABEL_0"):
        scorer.score([("a", "b")])
    component = ReCEvalCorrectness(ReCEvalCorrectness.Settings(nli_model=str(forced_models["generic"])))
    mix = RewardMix.from_recipe_rewards({"receval_correctness": {"nli_model": str(forced_models["generic"])}})
    out = mix.score_all(RewardBatch.from_texts(["A is 2.\nSo B is 3."], ["Q?"]))["receval_correctness"]
    assert out.scores == [None] and out.failures == {"exception": 1}
    assert component.needs_model() == str(forced_models["generic"])


def test_batched_deduplicated_scorer_matches_one_pair_per_pass(forced_models):
    pairs = [("Tom has 3 apples.", "Tom has apples."), ("A short one.", "B."), ("Tom has 3 apples.", "Tom has apples.")]
    pairs += [(f"Sam buys {i} pens and {i + 2} books at the store.", f"Sam has {2 * i + 2} items.") for i in range(9)]
    scorer = NLIScorer(str(forced_models["random"]), batch_size=4, cache_size=5)
    results = scorer.score(pairs)
    assert scorer.stats["computed"] == len(set(pairs)) == 11
    assert scorer.stats["forward_passes"] == 3
    naive = NLIScorer(str(forced_models["random"])).score_one_by_one(pairs)
    for pair, expected in zip(pairs, naive):
        assert results[pair] == pytest.approx(expected, abs=1e-5)
    assert len({results[p] for p in pairs}) > 1  # a random model: not constant
    assert len(scorer._cache) == 5  # bounded
    again = scorer.score(pairs)
    assert scorer.stats["cache_hits"] == 5 and scorer.stats["computed"] == 11 + 6  # evicted ones computed again
    assert all(again[p] == pytest.approx(results[p], abs=1e-6) for p in pairs)
    kept = list(scorer._cache)
    scorer.score(kept)
    assert scorer.stats["computed"] == 17 and scorer.stats["cache_hits"] == 10  # what is cached is not recomputed


# --- information gain -------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_lm():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from procrl.models.loading import ensure_tiny_model

    directory = ensure_tiny_model()
    return AutoModelForCausalLM.from_pretrained(directory).eval(), AutoTokenizer.from_pretrained(directory)


def _direct_mean_logprob(model, tokenizer, context, target):
    context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    target_ids = tokenizer(target, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([context_ids + target_ids])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
    positions = range(len(context_ids) - 1, len(context_ids) + len(target_ids) - 1)
    return sum(logprobs[p, ids[0, p + 1]].item() for p in positions) / len(target_ids)


def test_batched_target_logprobs_match_unpadded_forward(tiny_lm):
    model, tokenizer = tiny_lm
    pairs = [
        ("Tom has 3 apples. Therefore,", " The answer is 3."),
        ("Q\nA short step. Therefore,", " The answer is 12345."),
        ("Therefore,", " The answer is 7."),
        ("Tom has 3 apples. Therefore,", " The answer is 3."),
        (
            "A much longer context about Natalia selling clips to her friends in April and May. Therefore,",
            " The answer is 72.",
        ),
    ]
    scorer = TargetLogProbScorer("reference", batch_size=3)
    scorer.bind("cpu", tokenizer, SimpleNamespace(ref_model=model))
    values = scorer.mean_logprobs(pairs)
    assert scorer.stats["unique"] == 4 and scorer.stats["forward_passes"] == 2
    for (context, target), value in zip(pairs, values):
        assert value == pytest.approx(_direct_mean_logprob(model, tokenizer, context, target), abs=1e-4)


def test_reference_resolution(tiny_lm):
    model, tokenizer = tiny_lm
    with pytest.raises(ReferenceModelError, match="no trainer"):
        reference_lm(None)
    with pytest.raises(ReferenceModelError, match="beta"):
        reference_lm(SimpleNamespace(ref_model=None, model=model, args=SimpleNamespace(beta=0.0)))
    assert reference_lm(SimpleNamespace(ref_model=model))[0] is model


def test_reference_is_the_lora_policy_with_adapters_disabled(tiny_lm):
    import copy

    from peft import LoraConfig, get_peft_model

    base, tokenizer = tiny_lm
    policy = get_peft_model(
        copy.deepcopy(base), LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    )
    trainer = SimpleNamespace(ref_model=None, model=policy, args=SimpleNamespace(beta=0.0))
    pair = [("Tom has 3 apples. Therefore,", " The answer is 3.")]
    scorer = TargetLogProbScorer("reference")
    scorer.bind("cpu", tokenizer, trainer)
    reference_value = scorer.mean_logprobs(pair)[0]
    assert reference_value == pytest.approx(_direct_mean_logprob(base, tokenizer, *pair[0]), abs=1e-4)
    assert abs(reference_value - _direct_mean_logprob(policy, tokenizer, *pair[0])) > 1e-4  # adapters back on after


def test_informativeness_component(tiny_lm, gsm8k_train):
    model, tokenizer = tiny_lm
    rows = _gsm8k_rows(gsm8k_train, 3)
    completions = [r["answer"] for r in rows] + ["I have no idea what to do here at all"]
    batch = RewardBatch.from_texts(completions, [r["question"] for r in rows] + ["Q?"], None)
    component = ReCEvalInformativeness(ReCEvalInformativeness.Settings(lm="reference", tau=0.5))
    assert component.needs_model() == "the trainer's reference model"
    unbound = component.score  # without a trainer the reference does not exist
    with pytest.raises(ReferenceModelError):
        unbound(batch)
    component.bind(RuntimeContext(device="cpu", tokenizer=tokenizer, trainer=SimpleNamespace(ref_model=model)))
    output = component.score(batch)
    # no predicted answer: no_answer_score (-1), the bottom of the range, not "no opinion"
    assert output.scores[3] == -1.0 and output.failures == {"no_answer": 1}
    assert output.details[3]["unscored"] == "no_answer"
    for i in range(3):
        details = output.details[i]
        assert len(details["step_values"]) == len(batch.segmentations[i].steps) == len(details["ig"])
        assert details["step_values"] == pytest.approx([math.tanh(g / 0.5) for g in details["ig"]])
        assert output.scores[i] == min(details["step_values"]) == details["step_values"][details["min_step"]]
    assert output.details[0]["target"] == " The answer is 72."
    assert {"step_mean", "ig_mean", "min_step_mean", "min_step_fraction_mean"} <= set(output.metrics)
    nothing = component.score(RewardBatch.from_texts(["no number here", ""], ["Q?", "Q?"]))
    assert nothing.scores == [-1.0, -1.0] and nothing.failures == {"no_answer": 1, "no_steps": 1}
    assert nothing.step_scores == [None, []]
    # the released code's GSM8K hypothesis: the question, then the answer statement
    both = ReCEvalInformativeness(ReCEvalInformativeness.Settings(lm="reference", target="question_and_answer"))
    both.bind(RuntimeContext(device="cpu", tokenizer=tokenizer, trainer=SimpleNamespace(ref_model=model)))
    output = both.score(RewardBatch.from_texts([rows[0]["answer"]], [rows[0]["question"]]))
    assert output.details[0]["target"] == " " + rows[0]["question"].strip() + " The answer is 72."
    details = output.details[0]
    assert details["step_values"] == pytest.approx([math.tanh(g / both.settings.tau) for g in details["ig"]])
    assert output.scores[0] == min(details["step_values"])


def test_settings_are_validated():
    with pytest.raises(ConfigError, match="tau"):
        RewardMix.from_recipe_rewards({"receval_informativeness": {"tau": 0}})
    with pytest.raises(ConfigError, match="target_template"):
        RewardMix.from_recipe_rewards({"receval_informativeness": {"target_template": "The answer is N."}})
    with pytest.raises(ConfigError, match="batch_size"):
        RewardMix.from_recipe_rewards({"receval_correctness": {"batch_size": 0}})
    with pytest.raises(ConfigError, match="dtype"):
        RewardMix.from_recipe_rewards({"receval_informativeness": {"dtype": "bf16"}})
    with pytest.raises(ConfigError, match="no_steps_score"):
        RewardMix.from_recipe_rewards({"receval_correctness": {"no_steps_score": -1.0}})
    with pytest.raises(ConfigError, match="target"):
        RewardMix.from_recipe_rewards({"receval_informativeness": {"target": "question"}})


def test_a_failing_splitter_fails_only_its_sample(forced_models):
    settings = ReCEvalCorrectness.Settings(
        nli_model=str(forced_models[("a", "entailment")]), rcu_splitter="tests.test_receval:picky_splitter"
    )
    output = ReCEvalCorrectness(settings).score(
        RewardBatch.from_texts(["A is 2.\nB is 3.", "A is 2.\nboom 3.", ""], ["Q is here.", "Q is here.", "Q?"])
    )
    # the splitter's failure is no opinion (-> fallback); a chain without steps scores no_steps_score (0)
    assert output.scores[0] > 0.999 and output.scores[1:] == [None, 0.0]
    assert output.failures == {"rcu_split_error": 1, "no_steps": 1}
