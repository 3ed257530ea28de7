"""Token amounts as people write them: ``2500``, ``4k`` (k is 1,000, not 1,024), ``1.5k``, ``8_000``, ``8,000``.

``parse_budget`` is the one parser for a number of tokens: ``ctxwin bench --budgets`` and ``ctxwin fit``'s
``--context-window`` / ``--reserve`` all read their values with it.
"""

from __future__ import annotations

import re
from decimal import Decimal

from ctxwin._errors import InvalidInputError

# Digits grouped by thousands with commas (8,000) or by underscores (8_000), an optional fraction, an optional k.
_BUDGET = re.compile(r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:_\d+)*(?:\.\d+)?|\.\d+)([kK]?)")
_EXPECTED = "expected a {sign} whole number of tokens such as 2500, 4k or 1.5k (k = 1,000)"
# A hundred times the largest context window any model has: more is a typo, not a budget.
MAX_TOKENS = 1_000_000_000


def parse_budget(text: str, *, what: str = "budget", zero: bool = False) -> int:
    """One amount of tokens; ValueError naming the text (as ``what``) for negative, fractional, unreadable or
    absurdly large values, and for zero unless ``zero``."""
    expected = _EXPECTED.format(sign="non-negative" if zero else "positive")
    match = _BUDGET.fullmatch(text.strip())
    if match is None and _BUDGET.fullmatch(text.strip().removeprefix("-")):
        raise InvalidInputError(f"{what} {text!r} must be {'non-negative' if zero else 'positive'}; {expected}")
    if match is None:
        raise InvalidInputError(f"{what} {text!r} is not a number of tokens; {expected}")
    number, suffix = match.groups()
    # Decimal: 1.1k is exactly 1100, not 1100.0000000000002
    tokens = Decimal(number.replace(",", "")) * (1000 if suffix else 1)
    if tokens != tokens.to_integral_value():
        raise InvalidInputError(f"{what} {text!r} is {tokens} tokens, not a whole number; {expected}")
    if tokens < 0 or (tokens == 0 and not zero):
        raise InvalidInputError(f"{what} {text!r} must be {'non-negative' if zero else 'positive'}; {expected}")
    if tokens > MAX_TOKENS:
        raise InvalidInputError(f"{what} {text!r} is more tokens than any model takes (at most {MAX_TOKENS:,})")
    return int(tokens)


def parse_budgets(text: str) -> list[int]:
    """A comma-separated list of budgets, in the order given; an empty item or a repeated budget is an error."""
    items = text.split(",")
    if any(not item.strip() for item in items):
        expected = _EXPECTED.format(sign="positive")
        raise InvalidInputError(f"budgets {text!r} has an empty item; {expected}, separated by commas")
    budgets = [parse_budget(item) for item in items]
    repeated = sorted({b for b in budgets if budgets.count(b) > 1})
    if repeated:
        raise InvalidInputError(f"budgets {text!r} name {', '.join(f'{b:,}' for b in repeated)} more than once")
    return budgets
