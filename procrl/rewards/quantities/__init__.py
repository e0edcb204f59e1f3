"""Reading quantities out of prose, for the rewards that check them: the arithmetic judge, the
reference judge and ReCEval's premise/conclusion split.

* :mod:`.evaluate`: the safe evaluator (``ast``, no ``eval``);
* :mod:`.units`: the one unit vocabulary (names, spellings, kinds, conversions, multiplier words);
* :mod:`.notation`: LaTeX, markdown, bullets and unit words -> plain arithmetic, offsets kept;
* :mod:`.scanner`, :mod:`.excuses`, :mod:`.claims`: the calculations a step claims and which are wrong;
* :mod:`.values`: a computed value against the text stating it (rounding as written);
* :mod:`.numbers`: every number a text states, with its unit;
* :mod:`.results`: a clause with each calculation replaced by its stated result (ReCEval).
"""

from procrl.rewards.quantities.claims import check_step, find_claims, first_wrong_step
from procrl.rewards.quantities.evaluate import NotArithmeticError, evaluate, normalize_expression
from procrl.rewards.quantities.notation import plain_arithmetic
from procrl.rewards.quantities.numbers import StatedNumber, stated_numbers
from procrl.rewards.quantities.values import Claim, decimals, values_match

__all__ = [
    "Claim",
    "NotArithmeticError",
    "StatedNumber",
    "check_step",
    "decimals",
    "evaluate",
    "find_claims",
    "first_wrong_step",
    "normalize_expression",
    "plain_arithmetic",
    "stated_numbers",
    "values_match",
]
