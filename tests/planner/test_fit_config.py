"""``FitConfig``: every option declared once, validated when built, taken by ``fit``, ``Planner``, sessions and
``fit_many`` alike; and the budget a plan fits is the one it is given, not a copy of the planner."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

import ctxwin
from ctxwin import FitConfig, Planner, fit
from ctxwin.batch import fit_many
from ctxwin.counters._base import BaseTokenCounter
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage
from ctxwin.planner._config import SESSION_OPTIONS, FitOptions
from ctxwin.planner._session import PlanSession

COUNTER = "approximate"


def chat(turns: int) -> list[Any]:
    messages: list[Any] = [SystemMessage("You answer questions about the INC-48213 outage.")]
    for i in range(turns):
        messages += [HumanMessage(f"question {i}: what did host db-{i}.eu-west-1 log at 03:{i:02d}?"),
                     AIMessage(f"db-{i} logged `ERR_CONN_RESET` {i} times; see /var/log/pg/{i}.log")]
    return messages


def test_the_typed_options_are_the_config_fields() -> None:
    fields = {f.name for f in dataclasses.fields(FitConfig)}
    assert set(FitOptions.__annotations__) | {"model", "strategies", "output"} == fields
    assert fields >= SESSION_OPTIONS


def test_every_option_is_documented_in_the_config_docstring() -> None:
    doc = inspect.getdoc(FitConfig) or ""
    missing = [f.name for f in dataclasses.fields(FitConfig) if f"``{f.name}``" not in doc]
    assert missing == []


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"context_window": -1}, ValueError, "context_window must be a non-negative int"),
        ({"safety_margin": 2.5}, ValueError, "safety_margin must be a non-negative int"),
        ({"output": "xml"}, ValueError, "output must be one of"),
        ({"broken_tool_pairs": "fix"}, ValueError, "broken_tool_pairs"),
        ({"cache_control": True}, ValueError, "needs output='anthropic'"),
        ({"summarizer": "gpt"}, TypeError, "summarizer must be callable"),
        ({"low_water": 0}, ValueError, "low_water"),
        ({"keep_first": 2}, ValueError, "keep_first must be a share"),
        ({"head_fill": 0.5}, ValueError, "needs a larger keep_first"),
        ({"cache_stable": "yes"}, TypeError, "cache_stable must be a bool"),
        ({"keep_lsat": 3}, TypeError, "unknown option 'keep_lsat' .*'keep_last'"),
    ],
)
def test_a_bad_option_is_refused_when_the_config_is_built(options: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        FitConfig.of(**options)
    with pytest.raises(error, match=match):
        fit(chat(1), **options)


def test_replace_validates_and_leaves_the_original() -> None:
    config = FitConfig(model="gpt-4o", keep_last=4)
    changed = config.replace(keep_last=2)
    assert (config.keep_last, changed.keep_last, changed.model) == (4, 2, "gpt-4o")
    with pytest.raises(ValueError, match="keep_last"):
        config.replace(keep_last=-2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.keep_last = 1  # type: ignore[misc]
    assert hash(config) == hash(FitConfig(model="gpt-4o", keep_last=4))


def test_fit_takes_a_config_or_its_options_and_plans_the_same() -> None:
    config = FitConfig(counter=COUNTER, context_window=400, reserve_output=0, safety_margin=40, keep_last=2)
    by_config = fit(chat(12), config=config)
    by_options = fit(chat(12), None, counter=COUNTER, context_window=400, reserve_output=0, safety_margin=40,
                     keep_last=2)
    assert by_config.messages == by_options.messages and by_config.budget == by_options.budget
    assert by_config.budget.safety_margin == 40 and by_config.tokens_after <= 360
    assert Planner(config=config).config == config


def test_fit_marks_cache_breakpoints_when_asked() -> None:
    plan = fit(chat(2), "claude-sonnet-4-5", output="anthropic", cache_control=True)
    assert "cache_control" in str(plan.request)


def test_a_session_reads_its_options_from_the_planner_config() -> None:
    planner = Planner(counter=COUNTER, context_window=2_000, reserve_output=0, keep_first=None, low_water=0.5)
    session = planner.session()
    assert (session.config.keep_first, session.config.low_water) == (None, 0.5)
    assert planner.session(low_water=0.8).config.low_water == 0.8 and planner.config.low_water == 0.5
    with pytest.raises(TypeError, match="'keep_last' is an option of the planner"):
        planner.session(keep_last=3)


def test_fit_many_takes_a_config() -> None:
    config = FitConfig(counter=COUNTER, context_window=300, reserve_output=0)
    (result,) = fit_many([chat(10)], workers=1, config=config)
    assert result.ok and result.messages == fit(chat(10), config=config).messages


def test_a_tools_variant_is_built_once_and_shares_the_counter() -> None:
    tool = {"type": "function", "function": {"name": "grep", "description": "search logs",
                                             "parameters": {"type": "object", "properties": {}}}}
    planner = Planner(counter=COUNTER, context_window=2_000, reserve_output=0)
    variant = planner.with_tools([tool])
    assert variant is planner.with_tools([tool]) and variant.counter is planner.counter
    assert variant.budget.tools_tokens > 0 == planner.budget.tools_tokens
    assert variant.config.tools == variant.tools and planner.config.tools is None


def test_a_session_cut_fits_its_target_and_reports_the_planner_budget() -> None:
    planner = Planner(counter=COUNTER, context_window=600, reserve_output=0, low_water=0.5, keep_first=None)
    session: PlanSession[Any] = planner.session(chat(6))
    session.plan()
    cuts = 0
    for turn in chat(30)[13:]:
        session.add_messages([turn])
        plan = session.plan()
        assert plan.budget == planner.budget  # the cut's target is no part of what the plan reports
        assert plan.fits and plan.budget.target is None
        if plan.cache is not None and plan.cache.cut:
            cuts += 1
            assert plan.tokens_after <= 0.5 * planner.budget.max_input_tokens + 1  # fitted to the low-water mark
    assert cuts


def test_budget_aiming_at_lowers_only_the_input_tokens() -> None:
    budget = ctxwin.Budget(1_000, 200, 50, 30)
    assert budget.aiming_at(None) is budget and budget.aiming_at(10_000) is budget
    lowered = budget.aiming_at(400)
    assert (lowered.max_input_tokens, lowered.messages_budget, lowered.safety_margin) == (400, 350, 30)


class _Words(BaseTokenCounter):
    name = "words"

    def count_text(self, text: str) -> int:
        return len(text.split())


class _EstimatedWords(_Words):
    name = "estimated-words"
    estimating = True


@pytest.mark.parametrize(("counter", "gives_room_back"), [(_Words(), False), (_EstimatedWords(), True)])
def test_observe_gives_room_back_only_to_a_counter_that_declares_it_estimates(
    counter: BaseTokenCounter, gives_room_back: bool
) -> None:
    session = Planner(counter=counter, context_window=1_000, reserve_output=0).session(chat(2))
    before = session.max_input_tokens
    plan = session.plan()
    session.observe({"prompt_tokens": plan.tokens_after // 2})  # the provider counted half
    assert (session.max_input_tokens > before) is gives_room_back
