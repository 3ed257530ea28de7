"""Chain names: the defaults, the bench's own names, registered strategies, and clear errors for the rest."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ctxwin._plugins import register_plugin, unregister_plugin
from ctxwin.cli._bench.chains import DEFAULT_CHAINS, Chain, parse_chains, step_names
from ctxwin.hookspecs import hookimpl
from ctxwin.strategies._base import StepResult
from ctxwin.strategies._filter import FilterMessages
from ctxwin.strategies._summarize import Summarize
from ctxwin.strategies._trim import TrimToBudget
from ctxwin.strategies._truncate import TruncateToolOutput


def test_default_chains() -> None:
    chains = parse_chains(DEFAULT_CHAINS)
    assert [c.steps for c in chains] == [
        ("last",),
        ("first",),
        ("summarize", "trim"),
        ("truncate-tools", "trim"),
        ("fit",),
    ]
    last, first, summarize, truncate, fit = (c.strategies() for c in chains)
    assert isinstance(last, list) and isinstance(last[0], TrimToBudget) and last[0].strategy == "last"
    assert isinstance(first, list) and isinstance(first[0], TrimToBudget) and first[0].strategy == "first"
    assert isinstance(summarize, list) and isinstance(summarize[0], Summarize)
    assert isinstance(truncate, list) and isinstance(truncate[0], TruncateToolOutput)
    assert fit is None  # the planner's default chain, exactly what ctxwin.fit uses


def test_each_planner_gets_fresh_strategy_objects() -> None:
    chain = Chain("filter+trim", ("filter", "trim"))
    one, two = chain.strategies(), chain.strategies()
    assert one is not None and two is not None
    assert isinstance(one[0], FilterMessages) and all(a is not b for a, b in zip(one, two, strict=True))


def test_spaces_are_ignored() -> None:
    assert parse_chains(" summarize + trim , last ") == [
        Chain("summarize+trim", ("summarize", "trim")),
        Chain("last", ("last",)),
    ]


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'lats' in chain 'lats'") as info:
        parse_chains("last,lats")
    for name in ("last", "first", "summarize", "truncate-tools", "fit", "filter", "trim", "truncate_tool_output"):
        assert name in str(info.value)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("fit+trim", "cannot be combined"),
        ("summarize++trim", "empty step"),
        ("last,,first", "empty chain"),
        ("", "empty chain"),
        ("last,last", "more than once"),
    ],
)
def test_bad_chains(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_chains(text)


class _Halve:
    """A plugin strategy: keeps the second half of the messages."""

    name = "halve"

    def apply(self, messages: Any, context: Any) -> StepResult:
        return StepResult(messages[len(messages) // 2 :])


class _NeedsOptions(_Halve):
    def __init__(self, size: int) -> None:
        self.size = size


class _Plugin:
    @hookimpl
    def register_strategies(self, register: Any) -> None:
        register("halve", _Halve)
        register("needs_options", _NeedsOptions)


@pytest.fixture
def plugin() -> Iterator[None]:
    register_plugin(_Plugin(), name="bench-test-strategies")
    try:
        yield
    finally:
        unregister_plugin("bench-test-strategies")


@pytest.mark.usefixtures("plugin")
def test_registered_strategies_can_be_named() -> None:
    assert "halve" in step_names()
    (chain,) = parse_chains("halve+trim")
    built = chain.strategies()
    assert built is not None and isinstance(built[0], _Halve)


@pytest.mark.usefixtures("plugin")
def test_a_strategy_that_needs_options_is_an_error_at_parse_time() -> None:
    with pytest.raises(ValueError, match=r"'needs_options'.*default options"):
        parse_chains("needs_options")
