"""Budgets as people write them: ``2500``, ``4k`` (k is 1,000, not 1,024), ``1.5k``, comma-separated."""

from __future__ import annotations

import re
from decimal import Decimal

_BUDGET = re.compile(r"(\d+(?:\.\d+)?|\.\d+)([kK]?)")
_EXPECTED = "expected a positive whole number of tokens such as 2500, 4k or 1.5k (k = 1,000)"


def parse_budget(text: str) -> int:
    """One budget in tokens; ValueError naming the text for zero, negative, fractional or unreadable values."""
    match = _BUDGET.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"budget {text!r} is not a number of tokens; {_EXPECTED}")
    number, suffix = match.groups()
    tokens = Decimal(number) * (1000 if suffix else 1)  # Decimal: 1.1k is exactly 1100, not 1100.0000000000002
    if tokens != tokens.to_integral_value():
        raise ValueError(f"budget {text!r} is {tokens} tokens, not a whole number; {_EXPECTED}")
    if tokens <= 0:
        raise ValueError(f"budget {text!r} must be positive; {_EXPECTED}")
    return int(tokens)


def parse_budgets(text: str) -> list[int]:
    """A comma-separated list of budgets, in the order given; an empty item or a repeated budget is an error."""
    items = text.split(",")
    if any(not item.strip() for item in items):
        raise ValueError(f"budgets {text!r} has an empty item; {_EXPECTED}, separated by commas")
    budgets = [parse_budget(item) for item in items]
    repeated = sorted({b for b in budgets if budgets.count(b) > 1})
    if repeated:
        raise ValueError(f"budgets {text!r} name {', '.join(f'{b:,}' for b in repeated)} more than once")
    return budgets
