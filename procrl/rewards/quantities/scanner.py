"""The sides of an equation: the arithmetic run before an ``=`` and after it, in the plain text
:func:`~procrl.rewards.quantities.notation.plain_arithmetic` gives, each looked for at most
:data:`MAX_SIDE_SCAN` characters from the ``=``, every check reading a bounded neighbourhood."""

from __future__ import annotations

import re

from procrl.rewards.quantities.evaluate import CURRENCY, MAX_LENGTH

__all__ = ["MAX_SIDE_SCAN", "has_operator", "scan_left", "scan_right", "word_before"]

MAX_SIDE_SCAN = 4 * MAX_LENGTH  # characters scanned for one side of an equation
_SIDE_CHARS = set("0123456789.,+-*/xX×÷·⋅∗−–^()$£€¥₹% \t")
_BINARY_START = set("+*/×÷·⋅∗^xX")
_THREE_DIGITS = re.compile(r"\d{3}(?!\d)")
_OPERATOR_RE = re.compile(r"[\d)%]\s*(?:\*\*|[+\-*/×÷·⋅∗−–^xX])\s*[\d(.$£€¥₹]")
_TIGHT_PRODUCT = re.compile(r"\d\(\s*[\d$.]")  # "2(11)": a product


def has_operator(text: str) -> bool:
    return bool(_OPERATOR_RE.search(text) or _TIGHT_PRODUCT.search(text))


def _last_non_space(text: str, end: int) -> int:
    """Index of the last non-space character before ``end`` (-1 when there is none)."""
    index = end - 1
    while index >= 0 and text[index] in " \t":
        index -= 1
    return index


def word_before(text: str, index: int) -> str:
    """The word ending just before ``index`` (spaces skipped; at most 12 characters read)."""
    end = _last_non_space(text, index) + 1
    start = end
    while start > 0 and end - start < 12 and text[start - 1].isalpha():
        start -= 1
    return text[start:end].lower()


def scan_left(text: str, end: int) -> tuple[str, int]:
    """The arithmetic expression ending at ``text[end]`` (the left side of an ``=``) and its
    start; empty when it is a fragment of something larger ("X*1/4 =", "f(3) + 2 =") or longer
    than :data:`MAX_SIDE_SCAN` characters."""
    start = end
    limit = max(0, end - MAX_SIDE_SCAN)
    while start > 0 and text[start - 1] in _SIDE_CHARS and _side_char_ok(text, start - 1):
        if start == limit:
            return "", end  # too long to be a calculation
        start -= 1
    raw = text[start:end]
    side = raw.strip().lstrip(",)%").strip()
    if not side or side[0] in _BINARY_START or (side[0] in "-−–" and side[1:2] in (" ", "\t")):
        return "", end  # begins with a binary operator (or a dash): part of a longer expression
    side_start = start + raw.index(side[0])
    last = _last_non_space(text, start)
    if last >= 0:
        before = text[last]
        adjacent = last == side_start - 1
        lone_x = before in "xX" and (last == 0 or text[last - 1].isspace())
        if before.isdigit() or (before in "/_^{}\\." and adjacent) or lone_x:
            return "", end  # "60 minutes x 3/4", "\sqrt{16} + 2": the scan stopped mid-expression
        if before.isalpha() and adjacent:
            return "", end  # "x2 + 3", "f(3) + 2": a variable or a function, not a calculation
        if (before == ":" and adjacent) or (before == "," and (adjacent or (last > 0 and text[last - 1].isdigit()))):
            return "", end  # "14, 400 / 80", "6:00+48"; "Weekly cost: $150 * 4", "to 7: 7 + 10" are read
        if side[0] == "(" and word_before(text, side_start) == "of":
            return "", end  # "half of (3 + 5)": a fraction of the group, not the group
    inner_start, inner_end = _matched_span(side)
    return side[inner_start:inner_end], side_start + inner_start


def scan_right(text: str, start: int) -> str:
    """The arithmetic run starting at ``text[start]`` (the right side of an ``=``); empty when
    it goes on into something that is not arithmetic (algebra: "= 32 + x", "= 2(x - 4)",
    "= 2 x x")."""
    end = start
    limit = min(len(text), start + MAX_SIDE_SCAN)
    while end < len(text) and text[end] in _SIDE_CHARS and _side_char_ok(text, end):
        if end == limit:
            return ""  # too long to be a calculation
        end += 1
    side = text[start:end].rstrip()
    if side.endswith("/") and text[end : end + 1].isalpha():
        side = side[:-1].rstrip()  # "$80/month": a rate, the slash is the unit's
    if side.endswith("(") or (text[end : end + 1] in ("x", "X") and word_before(text, end + 1) == "x"):
        return ""  # "= 4(B - 3)", "= 3 x x": a product with a variable
    side = side.rstrip(",").rstrip()
    if side.rstrip(CURRENCY + " \t").endswith(tuple("+-−–*/×÷·⋅∗^xX")):
        return ""
    return _drop_unmatched_parentheses(side.rstrip(CURRENCY + " \t"))


def _drop_unmatched_parentheses(text: str) -> str:
    """Remove parentheses without a partner at either end ("(3+4" -> "3+4", "7)" -> "7")."""
    start, end = _matched_span(text)
    return text[start:end]


def _matched_span(text: str) -> tuple[int, int]:
    """``(start, end)`` of ``text`` without unmatched parentheses at either end; ``(0, 0)``
    when it is unbalanced inside."""
    opened = text.count("(") - text.count(")")
    start, end = 0, len(text)
    while opened != 0:
        if opened > 0 and start < end and text[start] == "(":
            start += 1
            opened -= 1
        elif opened < 0 and start < end and text[end - 1] == ")":
            end -= 1
            opened += 1
        else:
            return 0, 0  # unbalanced inside: not a well-formed side
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
    return start, end


def _side_char_ok(text: str, index: int) -> bool:
    """Context rules for characters that are arithmetic only in some places."""
    character = text[index]
    following = text[index + 1 : index + 2]
    if character in "xX":
        return _times_letter_at(text, index)
    if character == ",":  # thousands separator only: digit before, exactly three digits after
        return index > 0 and text[index - 1].isdigit() and _THREE_DIGITS.match(text, index + 1) is not None
    if character == ".":  # decimal point only (a full stop ends the side)
        return following.isdigit()
    return True


def _times_letter_at(text: str, index: int) -> bool:
    """``x`` at ``index`` is a multiplication sign (a standalone letter between operands)."""
    before = text[index - 1] if index > 0 else " "
    after = text[index + 1] if index + 1 < len(text) else " "
    if before.isalpha() or after.isalpha():
        return False
    left = _last_non_space(text, index)
    left_ok = left >= 0 and text[left] in "0123456789)%"
    right = index + 1
    while right < len(text) and text[right] in " \t":
        right += 1
    right_ok = right < len(text) and text[right] in "0123456789($.£€¥₹"
    return left_ok and right_ok
