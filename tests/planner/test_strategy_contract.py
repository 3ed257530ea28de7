"""The strategy contract: a ``StepContext`` of the budget and the plan's counts, ``BaseStrategy`` defaults, objects of
the ``Strategy`` shape adapted once (any other ``apply`` signature refused), one list of ``Change`` records naming
copies by their input messages, and the planner's options given to the summarize step's constructor."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ctxwin.counters import get_counter
from ctxwin.messages import BaseMessage, HumanMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.planner._chain import build_chain
from ctxwin.strategies import (
    BaseStrategy,
    Change,
    StepContext,
    StepResult,
    Summarize,
    TrimToBudget,
    TruncateToolOutput,
)
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._summarize import is_summary

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
        return StepResult(messages[cut:], [f"dropped {cut}"], [Change("dropped", messages[:cut])])


class NewShape:
    """An object of the Strategy shape that is not a BaseStrategy."""

    name = "new_half"
    keeps = "last"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        assert context.budget.messages_budget > 0 and context.counts.total(messages) > 0
        cut = len(messages) // 2
        return StepResult(messages[cut:], [f"dropped {cut}"], [Change("dropped", messages[:cut])])


def planner(*strategies: Any, **options: Any) -> Planner:
    return Planner(counter=COUNTER, context_window=1500, reserve_output=0, strategies=list(strategies), **options)


def test_a_step_gets_a_frozen_context_saying_what_later_steps_keep() -> None:
    step = KeepNewestHalf()
    planner(step, TruncateToolOutput(), TrimToBudget(strategy="first"), ledger_share=0).plan(conversation(1, turns=60))
    (context,) = step.contexts
    assert context.later_keeps == "first"  # truncate_tool_output keeps "all": the trim after it decides
    assert context.budget.messages_budget == 1500
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.later_keeps = None  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(context)] == ["budget", "counts", "later_keeps", "pinned", "head",
                                                             "ledger"]


def test_an_object_of_the_strategy_shape_runs_as_a_base_strategy_would() -> None:
    messages = conversation(2, turns=60)
    shaped, based = planner(NewShape(), "trim"), planner(KeepNewestHalf(), "trim")
    shaped_plan, based_plan = shaped.plan(messages), based.plan(messages)
    assert shaped_plan.messages == based_plan.messages
    assert [s.as_dict() | {"name": ""} for s in shaped_plan.steps] == [
        s.as_dict() | {"name": ""} for s in based_plan.steps
    ]
    assert shaped_plan.steps[0].dropped_ids == [m.id for m in messages[: len(messages) // 2]]
    assert shaped.strategies[0].keeps == "last"  # its keeps attribute, read once


def test_the_old_three_argument_apply_is_refused_when_the_planner_is_built() -> None:
    old = type("Old", (), {"name": "old", "apply": lambda self, messages, budget, meter: None})()
    with pytest.raises(TypeError, match=r"strategies\[0\]: apply must take \(messages, context\)"):
        planner(old)


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


def test_a_truncated_change_pairs_each_input_message_with_its_copy() -> None:
    messages = conversation(4, turns=6, big_tool=3000)
    budget = Planner(counter=COUNTER, context_window=4000, reserve_output=0).budget
    result = TruncateToolOutput().apply(messages, StepContext(budget, Meter(get_counter(COUNTER))))
    (change,) = result.changes
    assert change.kind == "truncated" and change.copies is not None and change.messages
    assert result.touched("truncated") == list(change.messages) and result.touched("dropped") == []
    for original, copy in zip(change.messages, change.copies, strict=True):
        assert any(original is m for m in messages)
        assert copy is result.messages[messages.index(original)] and isinstance(copy, ToolMessage)
        assert copy.id == original.id and copy.text != original.text


def test_a_change_with_a_copy_count_that_does_not_match_is_an_error() -> None:
    messages = conversation(4, turns=2)
    with pytest.raises(ValueError, match="1 copies for 2 messages"):
        Change("truncated", messages[:2], messages[:1])
    with pytest.raises(ValueError, match=r"Change\.kind must be"):
        Change("lost", messages)  # type: ignore[arg-type]


def test_a_step_that_replaced_messages_is_reported_under_the_ids_of_the_originals() -> None:
    messages = conversation(4, turns=6, big_tool=3000)
    plan = Planner(counter=COUNTER, context_window=4000, reserve_output=0, strategies=["truncate_tool_output"]).plan(
        messages
    )
    (step,) = plan.steps
    assert step.truncated_ids and set(step.truncated_ids) <= {m.id for m in messages if isinstance(m, ToolMessage)}


def test_the_planners_summarizer_goes_to_the_constructor_of_a_summarize_step_left_without_one() -> None:
    messages = conversation(5, turns=40)
    given = Summarize()
    built = planner(given, "trim", summarizer=lambda ms: f"{len(ms)} earlier messages", keep_last=3)
    step = built.strategies[0]
    assert isinstance(step, Summarize) and step is not given and given.summarizer is None
    assert step.keep_last_messages == 3 and step.summarizer is not None
    summary = next(m for m in built.plan(messages).messages if is_summary(m))
    assert "earlier messages" in summary.text
    own = Summarize(summarizer=lambda ms: "mine", keep_last_messages=1)
    assert planner(own, "trim", summarizer=lambda ms: "planner's", keep_last=3).strategies[0] is own


def test_summarizing_is_a_property_of_the_step_not_of_its_name() -> None:
    class MySummary(Summarize):
        pass

    assert [s.summarizes for s in build_chain(["filter", "summarize", "trim"]) or []] == [False, True, False]
    assert MySummary(name="digest").summarizes and not KeepNewestHalf().summarizes
    assert build_chain(None) is None


def test_the_default_chain_is_built_from_objects() -> None:
    names = [type(s).__name__ for s in Planner(counter=COUNTER, context_window=1500).strategies]
    assert names == ["DropCompacted", "ClearReasoning", "FilterMessages", "TruncateToolOutput", "TrimToBudget"]
    with_summary = Planner(counter=COUNTER, context_window=1500, keep_last=2).strategies
    assert [s.name for s in with_summary] == ["drop_compacted", "clear_reasoning", "filter", "truncate_tool_output",
                                              "summarize", "trim"]


def test_one_name_is_a_chain_of_one() -> None:
    assert [s.name for s in Planner(counter=COUNTER, context_window=1500, strategies="trim").strategies] == ["trim"]
    with pytest.raises(TypeError, match="strategies must be a strategy name or a list"):
        Planner(counter=COUNTER, context_window=1500, strategies=5)  # type: ignore[arg-type]


def test_a_conversation_that_fits_runs_no_step() -> None:
    step = KeepNewestHalf()
    plan = planner(step).plan([HumanMessage("hi")])
    assert plan.fits and plan.steps == [] and step.contexts == []
