"""ReCEval (docs/spec.md section 3): step correctness with an NLI model and step informativeness
as information gain under a causal LM; a chain scores its weakest step.

Per step i with conclusion c_i and premises P_i (Reasoning Content Units, RCUs):

* intra-step correctness = P_entail(P_i plus all earlier conclusions, joined with " and " =>
  c_i); no premises -> 1.0;
* inter-step correctness = 1 - max over p in {question sentences} U {c_1..c_{i-1}} of
  P_contradiction(p => c_i), each pair scored separately; no such p -> 1.0;
* information gain IG_i = mean token log p(t | q, steps<=i, " Therefore,") - the same with
  steps<i, t = the chain's predicted answer statement (default ``" The answer is N."``).

``receval_correctness`` = min_i min(intra_i, inter_i) in [0, 1];
``receval_informativeness`` = min_i tanh(IG_i / tau) in [-1, 1]. Per-step values are the
per-step scores.

No opinion is never the best score: a chain without steps or with more than ``max_steps``
gets ``no_steps_score`` (the bottom of the range: 0 / -1), a completion without a predicted
answer ``no_answer_score`` (-1, informativeness); only a failure of the model or of a custom
splitter gives None, which the mix resolves by the component's ``fallback`` (group mean).

Modules: ``rcu.py`` (the premise/conclusion split, pure text in, RCUs out), ``formulas.py`` (the
formulas, the NLI pairs and information-gain contexts: pure functions), ``components.py`` (the two
components); the models live in :mod:`procrl.rewards.scorers.nli` and
:mod:`procrl.rewards.scorers.info_gain`. This package's names are the public ones: a recipe's
``rcu_splitter`` defaults to ``procrl.rewards.receval:split_rcus``.
"""

from __future__ import annotations

from procrl.rewards.receval.components import ReCEvalCorrectness, ReCEvalInformativeness
from procrl.rewards.receval.formulas import (
    CorrectnessPlan,
    chain_minimum,
    correctness_step_scores,
    format_answer,
    information_gains,
    informativeness_contexts,
    informativeness_step_scores,
    informativeness_target,
    inter_step_score,
    intra_step_score,
    plan_correctness_pairs,
    score_correctness_plan,
)
from procrl.rewards.receval.rcu import RCU, letter_words, load_rcu_splitter, split_rcus

__all__ = [
    "RCU",
    "CorrectnessPlan",
    "ReCEvalCorrectness",
    "ReCEvalInformativeness",
    "chain_minimum",
    "correctness_step_scores",
    "format_answer",
    "information_gains",
    "informativeness_contexts",
    "informativeness_step_scores",
    "informativeness_target",
    "inter_step_score",
    "intra_step_score",
    "letter_words",
    "load_rcu_splitter",
    "plan_correctness_pairs",
    "score_correctness_plan",
    "split_rcus",
]
