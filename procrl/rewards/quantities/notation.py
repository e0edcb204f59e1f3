"""From real notation to the plain arithmetic the equation scanner reads, character for character
(same length: offsets into the step stay valid): LaTeX, markdown and bullets out, ``percent``,
``of`` and ``times`` as operators, unit words after numbers blanked (and returned)."""

from __future__ import annotations

import re

__all__ = ["ANNOTATION", "NEXT_WORD", "plain_arithmetic"]


ANNOTATION = re.compile(r"<<([^<>]*?)=([^<>=]*)>>")


def _padded(replacement: str, length: int) -> str:
    return replacement.ljust(length)


def _latex_sign(match: re.Match) -> str:
    """A LaTeX sign as its plain character, padded to the command's length."""
    return _LATEX_SIGNS[match.group(0)].ljust(len(match.group(0)))


# LaTeX commands whose argument is text to keep (units, labels, a boxed result).
_LATEX_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mathit|mathsf|mbox|hbox|operatorname|boxed|fbox|"
    r"underline)\s*\{([^{}\n]{0,120})\}"
)
_LATEX_FRACTION = re.compile(r"\\[dt]?frac\s*\{([^{}\n]{1,120})\}\s*\{([^{}\n]{1,120})\}")
_LATEX_EXPONENT = re.compile(r"\^\{([^{}\n]{1,20})\}")
# 1{,}000 / 1\,000 / 1\!000 inside a number: a thousands separator (the digits move left).
_LATEX_THOUSANDS = re.compile(r"\{,\}|\\,|\\!")
_LATEX_NUMBER = re.compile(r"(?<![\d.])\d{1,3}(?:(?:\{,\}|\\,|\\!|,)\d{3})+(?!\d)")
_LATEX_SIGNS = {
    "\\times": "×",
    "\\cdot": "·",
    "\\div": "÷",
    "\\ast": "*",
    "\\left(": "(",
    "\\right)": ")",
    "\\left[": "(",
    "\\right]": ")",
    "\\left.": "",
    "\\right.": "",
    "\\%": "%",
    "\\$": "$",
    "\\[": "",
    "\\]": "",
    "\\(": "",
    "\\)": "",
    "\\,": "",
    "\\!": "",
    "\\;": "",
    "\\:": "",
    "\\ ": "",
    "\\quad": "",
    "\\qquad": "",
    "\\displaystyle": "",
    "&": "",
}
_LATEX_SIGN = re.compile("|".join(re.escape(key) for key in sorted(_LATEX_SIGNS, key=len, reverse=True)))
# Markdown: bold / underline emphasis markers (a tight ``2**3`` is a power and stays).
_EMPHASIS = re.compile(r"(?<![\d)])\*\*|\*\*(?![\d(])|__")
# A list bullet or number at the start of a line.
_BULLET = re.compile(r"(?m)^[ \t]*(?:[-*•]|\d{1,3}[.)]|\(\d{1,3}\)|\([a-z]\))(?=[ \t])")
# "New total = ...\n= $40,000 + ...": a chain continued on the next line.
_CONTINUATION = re.compile(r"\n[ \t]*(?==(?!=))")
_PERCENT_WORD = re.compile(r"(?<=\d)([ \t]?)percent\b", re.IGNORECASE)
_PERCENT_OF = re.compile(r"(?<=%)[ \t]+of(?=[ \t]+[$£€¥₹(]?\d|[ \t]+\([ \t]*[$£€¥₹]?\d)")
# "2/3 of 90", "\frac{2}{3} of 90" (a fraction of a number): 'of' is a product there too.
_FRACTION_OF = re.compile(r"(?:(?<![\d.])\d+/\d+|\(\(\d+\)/\(\d+\)\))[ \t]+(of)(?=[ \t]+[$£€¥₹]?\d)")
_TIMES_WORD = re.compile(r"(?<=[\d%)])[ \t]+times(?=[ \t]+[$£€¥₹]?\d)")

# Units and labels after a number: up to four words (a word may carry "/unit"), or a
# parenthetical label, followed by an operator, '=' or ')'.
_WORD = r"[A-Za-z][A-Za-z'’\-]{0,24}(?![A-Za-z'’\-])(?:[ \t]*/[ \t]*[A-Za-z][A-Za-z\-]{0,24}(?![A-Za-z\-]))?"
_LABEL = r"\([ \t]*[A-Za-z][A-Za-z '’,\-]{0,40}\)"
_PIECE = rf"(?:{_WORD}|{_LABEL}|(?<=\d)[\"″'′])"  # 36" (inches), 5' (feet)
_UNIT_RUN = re.compile(
    rf"(?<=[\d%)])[ \t]*(?:/[ \t]*)?({_PIECE}(?:[ \t]+{_PIECE}){{0,3}})"
    r"(?=[ \t]*(?:=|\)|(?:[+\-*×÷·⋅∗−–^]|(?<![A-Za-z])[xX]|(?<=[ \t])/)[ \t]*(?:[\d($£€¥₹]|\.\d)))"
)
# Words that make a run prose, not a unit ("3 apples and 4 ...", "5 so 2 + ...").
_NOT_UNIT_WORDS = frozenset(
    "is are was were be so then and or but that which who to the we he she it they this these there "
    "equals equal gives give makes make plus minus times divided multiplied by than if when because "
    "since thus therefore hence".split()
)


def plain_arithmetic(text: str) -> tuple[str, dict[int, str]]:
    """``text`` rewritten into the plain arithmetic the equation scanner reads, character for
    character (same length): LaTeX, markdown and bullets out, unit words after numbers blanked.
    Also returns the blanked units: offset just after the number -> the unit run as written."""
    visible = ANNOTATION.sub(lambda m: " " * len(m.group(0)), text)
    if "\\" in visible or "&" in visible or "{" in visible:
        for _ in range(2):  # \boxed{\text{18}}: the inner command first
            visible = _LATEX_WRAPPER.sub(lambda m: " " * (m.start(1) - m.start()) + m.group(1) + " ", visible)
        visible = _latex_thousands(visible)
        for _ in range(2):  # \frac{1}{\frac{2}{3}}
            visible = _LATEX_FRACTION.sub(
                lambda m: _padded(f"(({m.group(1)})/({m.group(2)}))", len(m.group(0))), visible
            )
        visible = _LATEX_EXPONENT.sub(lambda m: "^(" + m.group(1) + ")", visible)
        visible = _LATEX_SIGN.sub(_latex_sign, visible)
    if "*" in visible or "_" in visible:
        visible = _EMPHASIS.sub(lambda m: "  ", visible)
    visible = _BULLET.sub(lambda m: " " * len(m.group(0)), visible)
    if "\n" in visible:
        visible = _CONTINUATION.sub(lambda m: " " * len(m.group(0)), visible)
    visible = _PERCENT_WORD.sub(lambda m: "%".ljust(len(m.group(0))), visible)
    visible = _PERCENT_OF.sub(lambda m: " ×".ljust(len(m.group(0))), visible)
    visible = _FRACTION_OF.sub(lambda m: m.group(0)[: m.start(1) - m.start()] + "× ", visible)
    visible = _TIMES_WORD.sub(lambda m: " ×".ljust(len(m.group(0))), visible)
    units: dict[int, str] = {}

    def blank_unit(match: re.Match) -> str:
        run = match.group(1)
        if run.startswith("(") and "/" in match.group(0)[: match.start(1) - match.start()]:
            return match.group(0)  # "/(x dollars)": a division by a group, not a rate
        words = re.sub(r"\([^()]*\)", " ", run).replace("/", " ").lower().split()
        inside = " ".join(re.findall(r"\(([^()]*)\)", run)).lower().split()
        if any(len(word) == 1 and word.isalpha() and word != "a" for word in inside):
            return match.group(0)  # "(x dollars)": a variable inside, algebra
        for index, word in enumerate(words):
            if word in _NOT_UNIT_WORDS:
                return match.group(0)
            if len(word) == 1 and word.isalpha() and not (word == "a" and index < len(words) - 1):
                return match.group(0)  # a single letter is a variable ("2x + 3"), not a unit
        units[match.start()] = run
        return " " * len(match.group(0))

    visible = _UNIT_RUN.sub(blank_unit, visible)
    return visible, units


def _latex_thousands(text: str) -> str:
    """``1{,}000`` / ``1\\,000`` / ``1{,}000{,}000`` -> ``1,000`` with the digits moved left and
    the spaces after the number (same length)."""
    if "{,}" not in text and "\\," not in text and "\\!" not in text:
        return text
    return _LATEX_NUMBER.sub(lambda m: _LATEX_THOUSANDS.sub(",", m.group(0)).ljust(len(m.group(0))), text)


# --- the equation scanner ----------------------------------------------------------------------


# The word after a number (its unit when no blanked run follows it).
NEXT_WORD = re.compile(r"[ \t]*([A-Za-z$][A-Za-z]{0,24})")
