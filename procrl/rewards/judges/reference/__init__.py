"""The reference first-error judge (``first_error: {backend: reference}``): no model; every
quantity a step states is checked against the question's numbers and the gold solution's
intermediate values; k = the first step stating a quantity that cannot be reached.

Why: the arithmetic judge only catches a calculation that is false. Most reasoning errors in
GSM8K-style solutions are a wrong operation on right numbers, a misread quantity or a skipped
condition: every equation is true, but the solution states a number the gold solution never
reaches (``9000 + 2000 = 11000`` for a gold ``9000 - 2000 = 7000``). GSM8K-style training data
carries every intermediate quantity of a sound solution (``<<48/2=24>>24``); this judge uses them.

What a step states is read with the arithmetic judge's reader (:mod:`procrl.rewards.quantities`):
every number it writes, every calculation it shows with its operands, and the solution of every
equation in one unknown it sets up (:mod:`.equations`). What is known: the question's numbers
(digits, fractions, percents, number words), the constants, and every quantity the completion
accepted before. The gold's path: every number the gold solution states that the question does
not, with, for each, how the gold computes it.

:data:`RULES` lists the rules in the order they apply, each with its name, its stage, the recipe
option that also switches it, and its statement with one real example (``RULES[i].statement``);
a recipe switches any of them off by name (``rules_off``). By stage:

* reading (what is known, and the gold's path): ``constants``, ``units``, ``percent``,
  ``rounding``, ``regroup`` (off), ``factor_as_constant``;
* lookahead (a value off the path that leads back to it): ``lookahead``, ``known_value_link``,
  ``solution_by_use``, ``slip_onto_path``, ``number_read_wrong``, ``known_target``,
  ``reached_without_it``, ``towards_answer``;
* quantity (each stated quantity in reading order; the first rule with a decision decides, and a
  quantity no rule accepts is the first error): ``false_calculation``, ``restatement``,
  ``on_path``, ``leap``, ``leads_back``, ``derivable`` (off);
* blame (the step named for a flagged quantity): ``result_in_another_role``, ``restated_result``;
* answer (a wrong final answer and no quantity flagged: a wrong step is named, never the answer
  line): ``closing_conclusion``, ``ends_on_gold_answer``, ``first_off_path``, ``answer_equation``,
  ``answer_calculation``, ``answer_statement``.

A step that states no quantity is neither an error nor checked; a chain with no step checked is
``unverified`` (the component's ``unverified_score``). A gold that is only a final answer gives
no opinion (status ``no_reference``). Bounded work: a question and a gold are read to their first
``MAX_READ_CHARS`` characters, a completion to its first ``MAX_QUANTITIES`` quantities (more, with
no error among them: status ``too_long``), the lookahead reads ``LOOKAHEAD_WINDOW`` quantities on
either side. Simplified on purpose: magnitudes only (``a - b`` and ``b - a`` state the same
quantity); derivations are binary ``+ - * /``; algebra the gold states in symbols is read through
its numbers only.

Rules measured and not adopted are in the research record (benchmarks/reference_judge/README.md).

* :mod:`.values`: magnitudes with tolerance, and what a few operations reach from them;
* :mod:`.gold`: the question's numbers and the gold solution read into its path of values;
* :mod:`.steps`: the quantities a completion's step states;
* :mod:`.rules`: what is known, and the lookahead;
* :mod:`.verdict`: the engine, the quantity, blame and answer rules, and :data:`RULES`;
* :mod:`.rule`: what a rule is.
* :mod:`.judge`: :class:`ReferenceJudge`, the backend.

>>> [rule.name for rule in RULES][:3]
['constants', 'units', 'percent']
>>> ReferenceRules(off=("leap",)).on("leap")
False
"""

from procrl.rewards.judges.reference.gold import MAX_READ_CHARS, Derivation, Reference, question_numbers, read_reference
from procrl.rewards.judges.reference.judge import ReferenceJudge
from procrl.rewards.judges.reference.rule import Rule
from procrl.rewards.judges.reference.rules import CONSTANTS, LOOKAHEAD_WINDOW
from procrl.rewards.judges.reference.values import Values
from procrl.rewards.judges.reference.verdict import (
    DEFAULT_RULES,
    MAX_QUANTITIES,
    RULE_NAMES,
    RULES,
    concluded_answer,
    judge_steps,
    stated_final_answer,
)
from procrl.rewards.judges.reference_rules import TRANSFORMATIONS, ReferenceRules

__all__ = [
    "CONSTANTS",
    "DEFAULT_RULES",
    "LOOKAHEAD_WINDOW",
    "MAX_QUANTITIES",
    "MAX_READ_CHARS",
    "RULES",
    "RULE_NAMES",
    "Rule",
    "TRANSFORMATIONS",
    "Derivation",
    "Reference",
    "ReferenceJudge",
    "ReferenceRules",
    "Values",
    "judge_steps",
    "question_numbers",
    "read_reference",
    "stated_final_answer",
    "concluded_answer",
]
