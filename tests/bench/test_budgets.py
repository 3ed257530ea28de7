"""Budget parsing: k is 1,000, plain ints and decimals work, anything else is a clear error."""

from __future__ import annotations

import pytest

from ctxwin.cli._budgets import parse_budget, parse_budgets


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("4k", 4000), ("4K", 4000), ("2500", 2500), ("1.5k", 1500), ("1.1k", 1100), (" 16k ", 16000), (".5k", 500)],
)
def test_budget_forms(text: str, tokens: int) -> None:
    assert parse_budget(text) == tokens


def test_budget_list_keeps_the_order_given() -> None:
    assert parse_budgets("64k,4k,16k") == [64000, 4000, 16000]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("0", "must be positive"),
        ("0k", "must be positive"),
        ("-4k", "must be positive"),
        ("4x", "is not a number of tokens"),
        ("4 k", "is not a number of tokens"),
        ("", "is not a number of tokens"),
        ("1.2345k", "not a whole number"),
        ("2.5", "not a whole number"),
        ("1e3", "is not a number of tokens"),
    ],
)
def test_bad_budgets_are_named(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error) as info:
        parse_budget(text)
    assert repr(text) in str(info.value) and "4k" in str(info.value)  # names the input and shows the form


@pytest.mark.parametrize(("text", "error"), [("4k,,8k", "empty item"), ("4k,", "empty item"), ("4k,4000", "4,000")])
def test_bad_budget_lists(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_budgets(text)


@pytest.mark.parametrize("text", ["1000000000000000000", "1,000,001k", "9" * 400])
def test_absurd_budgets_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"more tokens than any model takes \(at most 1,000,000,000\)"):
        parse_budget(text, zero=True)
    assert parse_budget("1,000,000k") == 1_000_000_000
