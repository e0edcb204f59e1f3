"""The reference first-error judge (``first_error: {backend: reference}``): no model; every
quantity a step states is checked against the question's numbers and the gold solution's
intermediate values; k = the first step stating a quantity that cannot be reached.

Why: the arithmetic judge only catches a calculation that is false. Most reasoning errors in
GSM8K-style solutions are a wrong operation on right numbers, a misread quantity or a skipped
condition: every equation is true, but the solution states a number the gold solution never
reaches (``9000 + 2000 = 11000`` for a gold ``9000 - 2000 = 7000``). GSM8K-style training data
carries every intermediate quantity of a sound solution (``<<48/2=24>>24``); this judge uses them.

**What a step states** is read with the arithmetic judge's reader (:mod:`procrl.rewards.quantities`:
LaTeX, unicode operators, markdown, bullets, currency, thousands separators, unit words): every
number it writes (:func:`~procrl.rewards.quantities.stated_numbers`; magnitudes, since a ``-`` may be an
operator or a dash; "Step 3" labels and years after "in"/"since"/... are not quantities) and
every calculation it shows (:func:`~procrl.rewards.quantities.find_claims`: the result of ``a op b = c``
or ``<<a op b=c>>`` with its operands), and the solution of every equation in one unknown it sets
up (:mod:`~procrl.rewards.judges.reference.equations`: "4x + 21 = 44" states x = 5.75, with the
equation's numbers as its operands): a wrong set-up is wrong where it is written, not where the
solution is first spelled out. A solution is read after its equation's numbers, is no restated
result, and leads a chain on only when a later calculation uses it.

**What is known** at a point of the completion:

* the question's numbers *Q*: digits, fractions (the value and both parts), percents (as written
  and over 100), number words ("three", "half", "a dozen", "twice"), and the constants 0, 1, 2,
  100; with ``units``, a conversion factor of the unit written after a number or of two units
  its step names ("60 minutes", "3 hours x 60 = 180 minutes", "7 days", "100 cents");
* the gold's path *G*: every number the gold solution states that the question does not
  (calculator results, results of its equations and its prose's numbers, fraction parts, the
  ``#### N`` or ``\\boxed{}`` answer), but not a conversion factor of 12 or more that a gold
  calculation is written with and that the gold never computes nor writes after "=" (the 60 of
  "180/60 = 3 hours" is a constant there: "30 + 30 = 60 pages" lands on it by coincidence; the
  smaller factors are also counts a question implies in words, octuplets, a cow's 4 legs, and
  stay); with ``percent`` what is left of or added to a share of
  the question (``100% - 30% = 70%``, ``1 - 1/3``); with ``regroup`` (off by default) the partial
  results of its calculations regrouped: runs of neighbouring terms or factors of one chain
  (``16 - 3 - 4`` also gives ``3 + 4 = 7``; operands that are earlier gold results are expanded
  first, so ``12 + 5`` after ``3 * 4 = 12`` is one chain) and a sum distributed over the factors
  it multiplies (``(5 + 3) * 2`` gives ``5 * 2`` and ``3 * 2``). For each gold value the judge
  keeps how the gold computes it: its operand values, and for a result among them whether it is
  one (a completion must have established it);
* what the completion established before it: every quantity accepted so far.

**The rule**, for each stated quantity in reading order; k = the step of the first one that is
not accepted:

1. ``check_arithmetic``: a calculation shown false is an error (what the arithmetic judge flags);
2. restatement: a known value (rounded as written, as a percent, or with ``units`` converted into
   the unit written after it from another unit its step names: "150 minutes" for 2.5 hours) is
   accepted;
3. on the gold's path: a value of *G* is accepted. It is *worked out* when it is the result of a
   true calculation whose operands are known, or when one of the gold's ways of computing it
   takes at most ``max_depth`` operations from known values, one of them a result the completion
   established (``max_depth`` 2: two gold calculations in one sentence). Otherwise it is a leap
   (the gold answer written first, or the answer of a one-step problem stated from the question's
   numbers alone): ``leap: accept`` (default) accepts it without counting it as checked,
   ``flag`` makes it an error;
4. off the gold's path (``off_path``): ``lookahead`` (default) accepts a value from which a later
   quantity of the completion reaches the gold's path: a calculation with it among its operands, or
   a value within ``max_depth`` operations (``+ - * /`` over pairs) of it and what is known there
   that the gold's own ways do not reach without it; recursively, so an alternative decomposition
   passes ("3 + 4 = 7 eggs", then "16 - 7 = 9 eggs"; "5 * 12 = 60 minutes", then "60 / 10 = 6")
   while a wrong operation on right numbers leads nowhere and is flagged where it is first stated. A
   value reaching, within those operations, a later value that is a constant or a number of the
   question restated reaches nothing ("50 km/h x 3 days = 150 km", then "x 100": 150 - 50 = 100),
   unless its step calculates with an unknown ("\\frac{2x - 6}{6}"). A result that lands on a known
   value ("12 sessions x 2 hours = 24 hours", 24 the hours of a day) is still a link of such a chain
   when a later calculation carries it on (a bare number read wrong, "11 + 10 = 21" for the
   question's 21, is none); a false calculation whose own value is on the path counts as reaching it
   ("160 + 80 + 320 + 640 = 1280" for the gold's 1200: the slip is the error, not the decomposition
   before it). It also accepts a true calculation whose result is one operation with a number of the
   question from the gold's answer ("300 songs * 10 hours = 3000 hours" for a gold ``20 * 300 =
   6000``, ``6000 * 10 = 60000``), whether or not a later step uses it: the error is then the later
   step that does not.
   ``derivable`` accepts any value within ``max_depth`` operations of known and gold values (the
   naive rule: it lets wrong operations on right numbers through); ``flag`` flags every value off
   the path (the strict rule: it flags alternative decompositions).

Transformations (``transformations``, default ``[units, percent, rounding]``): ``units``,
``percent`` (also: a number written with ``%`` stands for its value over 100, on both sides),
``rounding`` (a value written with d decimals matches one that rounds or cuts to it; a whole
number matches the floor, ceiling or nearest whole of a non-whole value), ``regroup``. Measured
on real GSM8K solutions (docs/first-error.md "The reference judge"), ``regroup`` lets more wrong operations
through (its partial results coincide with wrong values) than it saves sound ones, which the
lookahead already accepts when they lead back to the path; it stays an option. Order of operands
needs no option: magnitudes are compared, so ``a - b`` and ``b - a`` state the same quantity.

**A wrong final answer is never "no error"**: when no quantity is flagged but the final answer
the completion states (``JudgeItem.answer``: its ``#### N``, ``\\boxed{}``, "the answer is" or bold
last line; a last number alone states none, so a solution cut short is judged by its quantities
alone) is not the gold's, a wrong step is named: the first value accepted off the gold's path
(the chain left the path there and came back to it by coincidence: "30 + 18 = 48", then "30 - 48
= -18", 18 a gold value, the answer 18 against the gold's 12). Else the wrong answer is a value
of the path taken as the answer: the step setting up the equation it solves ("x - $15 = $0"),
else the last step whose calculation results in it ("$300 - $150 = $150" after the right "$300/2
= $150"; "30 / 10 = 3 small bags", 3 a number of the question), else the last step stating it.
Never the answer line (it is no step); when no step states the answer, or the chain ends on the
gold's answer (the answer line read is then a misread one: "our answer is 5/24 ...
so m + n = 29"), -1; a gold that is only a final answer stays no opinion (``no_reference``).
**A result restated in a second role** is blamed for the calculation that uses it: when the
flagged quantity is a calculation one of whose operands is a result the completion computed and
then restated in a later step with no calculation and no operation word ("The value of the
sapphires is still $6400.", after 3 of the 8 were traded; not a conclusion opening with "so",
"therefore", "thus", "hence"), the restating step is named. **A result in the role of another
gold value**: when the flagged calculation is one of the gold's, by the same operation, with one
operand replaced by a result the completion stated earlier ("80 - 18 = 62" for the gold's "80 - 54
= 26", after "6 + 6 + 6 = 18" for what all the lawns paid), the last step stating that result is
named; not when the replaced operand is a question number or a constant (the calculation is then
the error), nor when the completion computed it by one of the gold's own ways (it stands in its
right role there, and using it in the wrong one is the calculation's error). Other rules that blame an earlier
step (an operand off the path blamed where it is stated, a step whose words commit to an
operation, a plan step or a colon-ended step just before) and a calculation landing on a question
number by an operation the gold does not take were measured on the development split and not
adopted (docs/first-error.md).

**Bounded work**: a question and a gold solution are read to their first ``MAX_READ_CHARS``
characters (the gold's answer line wherever it is; the verdict's note says so), a completion to
its first ``MAX_QUANTITIES`` quantities (more, with no error among them: None, status
``too_long``, resolved by the fallback), the lookahead reads ``LOOKAHEAD_WINDOW`` quantities on
either side, and a gold calculation is expanded into a later one only up to ``_MAX_SUBSTITUTED``
numbers: the cost grows linearly with the text.

A step that states no quantity (prose, a plan) is neither an error nor checked. ``checked_steps``
counts the steps with a quantity worked out on the gold's path (or off it and leading back to
it): a chain with none (hedging, copying the question's numbers, stating the gold answer without
working it out) is ``unverified``, and the first-error component gives it ``unverified_score``
(default -1), never the 0 of a checked chain.

**No reference**: when the gold is only a final answer (no value beyond the question's numbers
and the answer, no calculation), there is nothing to check against: the verdict is None with
status ``no_reference`` (counted as ``failures/no_reference``), resolved by the component's
``fallback`` (``group_mean`` by default): a defined no-opinion, never the best score.

Simplified on purpose: magnitudes only; derivations are binary ``+ - * /``; algebra the gold
states in symbols (``16x + 80``) is read through its numbers only, so solutions of "what is x"
questions are flagged more often; a value equal to a question number is a restatement even when a
step reached it by a wrong calculation (only ``check_arithmetic`` sees that). Pure text in,
verdicts out; the gold's values are cached per (question, gold) pair.

* :mod:`.values`: magnitudes with tolerance, and what a few operations reach from them;
* :mod:`.gold`: the question's numbers and the gold solution read into its path of values;
* :mod:`.steps`: the quantities a completion's step states;
* :mod:`.rules`: restatements, constants and the lookahead (an off-path value that leads back);
* :mod:`.verdict`: the first error, and a wrong final answer blamed on a step;
* :mod:`.judge`: :class:`ReferenceJudge`, the backend.
"""

from procrl.rewards.judges.reference.gold import MAX_READ_CHARS, Derivation, Reference, question_numbers, read_reference
from procrl.rewards.judges.reference.judge import ReferenceJudge
from procrl.rewards.judges.reference.rules import CONSTANTS, LOOKAHEAD_WINDOW
from procrl.rewards.judges.reference.values import Values
from procrl.rewards.judges.reference.verdict import (
    DEFAULT_RULES,
    MAX_QUANTITIES,
    concluded_answer,
    judge_steps,
    stated_final_answer,
)
from procrl.rewards.judges.settings import TRANSFORMATIONS, ReferenceRules

__all__ = [
    "CONSTANTS",
    "DEFAULT_RULES",
    "LOOKAHEAD_WINDOW",
    "MAX_QUANTITIES",
    "MAX_READ_CHARS",
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
