"""The strategy contract: an explicit ``StepContext``, ``BaseStrategy`` defaults, objects of the ``Strategy`` shape
adapted once (the old ``apply(messages, budget, meter)`` with a DeprecationWarning), what a step replaced reported
by reference to its input, and the planner's options reaching the steps that read them."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest

from ctxwin.counters import get_counter
from ctxwin.messages import BaseMessage, HumanMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.planner.chain import build_chain
from ctxwin.strategies import BaseStrategy, StepContext, StepResult, Summarize, TrimToBudget, TruncateToolOutput
from ctxwin.strategies.meter import Meter
from ctxwin.strategies.summarize import is_summary

from .test_plan_properties import COUNTER
from .test_planner import conversation


class KeepNewestHalf(BaseStrategy):
    """A strategy written against the contract, recording the contexts it was given."""

    name = "newest_half"

    def __init__(self) -> None:
        self.contexts: list[StepContext] = []

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        self.contexts.append(context)
        cut = len(messages) // 2
        return StepResult(messages[cut:], [f"dropped {cut}"], dropped=messages[:cut])


class OldStyle:
    """A user strategy of the old shape: ``apply(messages, budget, meter)``."""

    name = "old_half"
    keeps = "last"

    def apply(self, messages: list[BaseMessage], budget: Any, meter: Any) -> StepResult:
        assert budget.messages_budget > 0 and meter.total(messages) > 0  # what old strategies read
        cut = len(messages) // 2
        return StepResult(messages[cut:], [f"dropped {cut}"], dropped=messages[:cut])


class NewShape:
    """An object of the Strategy shape that is not a BaseStrategy."""

    name = "new_half"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        cut = len(messages) // 2
        return StepResult(messages[cut:], [f"dropped {cut}"], dropped=messages[:cut])


def planner(*strategies: Any, **options: Any) -> Planner:
    return Planner(counter=COUNTER, context_window=1500, reserve_output=0, strategies=list(strategies), **options)


def test_a_step_gets_a_frozen_context_saying_what_later_steps_keep() -> None:
    step = KeepNewestHalf()
    planner(step, TruncateToolOutput(), TrimToBudget(strategy="first")).plan(conversation(1, turns=60))
    (context,) = step.contexts
    assert context.later_keeps == "first"  # truncate_tool_output keeps "all": the trim after it decides
    assert context.budget.messages_budget == 1500
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.later_keeps = None  # type: ignore[misc]
    assert not hasattr(context.meter, "later_keeps")


def test_an_old_style_strategy_still_works_with_a_deprecation_warning() -> None:
    messages = conversation(2, turns=60)
    with pytest.warns(
        DeprecationWarning, match=r"strategies\[0\]: apply\(messages, budget, meter\) is deprecated"
    ) as record:
        old = planner(OldStyle(), "trim")
    assert record[0].filename == __file__  # the warning points at the caller's line, not into ctxwin
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = planner(NewShape(), "trim")
    old_plan, new_plan = old.plan(messages), new.plan(messages)
    assert old_plan.messages == new_plan.messages
    assert [s.as_dict() | {"name": ""} for s in old_plan.steps] == [s.as_dict() | {"name": ""} for s in new_plan.steps]
    assert old.strategies[0].keeps == "last"  # the old protocol's keeps attribute, read once


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (object(), r"strategies\[0\] must be a registered name or a strategy"),
        (type("NoName", (), {"apply": lambda self, m, c: None})(), r"strategies\[0\] must be a registered name"),
        (type("Odd", (), {"name": "odd", "apply": lambda self, m: None})(), r"strategies\[0\]: apply must take"),
    ],
)
def test_what_is_not_a_strategy_is_a_type_error_naming_it(item: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        planner(item)


def test_an_adapted_strategy_must_return_a_step_result() -> None:
    bad = type("Bad", (), {"name": "bad", "apply": lambda self, messages, context: messages})()
    with pytest.raises(TypeError, match="strategy 'bad': apply must return a StepResult, got list"):
        planner(bad).plan(conversation(3, turns=60))


def test_replaced_pairs_each_input_message_with_its_copy() -> None:
    messages = conversation(4, turns=6, big_tool=3000)
    budget = Planner(counter=COUNTER, context_window=4000, reserve_output=0).budget
    result = TruncateToolOutput().apply(messages, StepContext(budget, Meter(get_counter(COUNTER))))
    assert result.replaced and len(result.replaced) == len(result.truncated)
    for (original, copy), truncated in zip(result.replaced, result.truncated, strict=True):
        assert original is truncated and any(original is m for m in messages)
        assert copy is result.messages[messages.index(original)] and isinstance(copy, ToolMessage)
        assert copy.id == original.id and copy.text != original.text


def test_the_planners_summarizer_reaches_a_summarize_step_given_as_an_object() -> None:
    messages = conversation(5, turns=40)
    plan = planner(Summarize(), "trim", summarizer=lambda ms: f"{len(ms)} earlier messages").plan(messages)
    summary = next(m for m in plan.messages if is_summary(m))
    assert "earlier messages" in summary.text


def test_summarizing_is_a_property_of_the_step_not_of_its_name() -> None:
    class MySummary(Summarize):
        pass

    assert [s.summarizes for s in build_chain(["filter", "summarize", "trim"]) or []] == [False, True, False]
    assert MySummary(name="digest").summarizes and not KeepNewestHalf().summarizes
    assert build_chain(None) is None


def test_the_default_chain_is_built_from_objects() -> None:
    names = [type(s).__name__ for s in Planner(counter=COUNTER, context_window=1500).strategies]
    assert names == ["FilterMessages", "TruncateToolOutput", "TrimToBudget"]
    with_summary = Planner(counter=COUNTER, context_window=1500, keep_last=2).strategies
    assert [s.name for s in with_summary] == ["filter", "truncate_tool_output", "summarize", "trim"]


def test_one_name_is_a_chain_of_one() -> None:
    assert [s.name for s in Planner(counter=COUNTER, context_window=1500, strategies="trim").strategies] == ["trim"]
    with pytest.raises(TypeError, match="strategies must be a strategy name or a list"):
        Planner(counter=COUNTER, context_window=1500, strategies=5)  # type: ignore[arg-type]


def test_a_conversation_that_fits_runs_no_step() -> None:
    step = KeepNewestHalf()
    plan = planner(step).plan([HumanMessage("hi")])
    assert plan.fits and plan.steps == [] and step.contexts == []
