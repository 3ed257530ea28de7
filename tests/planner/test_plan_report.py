"""What a plan tells people: ``str(plan)`` / ``plan.report()`` in a few lines, a session's plan saying what its
request leaves out of the history and its recall between cuts as a step, recall excerpts labelled with the roles
providers use, a budget below what must stay explained part by part, and estimated figures called estimates."""

from __future__ import annotations

from typing import Any

import pytest

import ctxwin
from ctxwin import Planner, fit
from ctxwin.counters import BaseTokenCounter, get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from ctxwin.planner._report import Plan

COUNTER = "approximate"


def chat(turns: int, *, question: str | None = None) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("You answer questions about the offices.")]
    for i in range(turns):
        messages += [HumanMessage(f"Question {i}: where is office OF-{i:03d} and who runs it?"),
                     AIMessage(f"Office OF-{i:03d} is in building {i}; it is run by team {i}. " * 4)]
    if question is not None:
        messages.append(HumanMessage(question))
    return messages


def test_a_plan_prints_as_a_short_report() -> None:
    plan = fit(chat(120, question="Where is office OF-002?"), None, counter=COUNTER, context_window=3_000,
               reserve_output=500)
    text = str(plan)
    assert text == plan.report()
    assert len(text.splitlines()) <= 8 and len(text) < 1_200, text
    assert repr(plan) != text  # the dataclass repr stays for debugging
    verdict = text.splitlines()[0]
    assert verdict.startswith("fits: ") and f"{plan.tokens_before:,} -> {plan.tokens_after:,} tokens" in verdict
    assert f"input budget of {plan.budget.max_input_tokens:,}" in verdict
    dropped = {name for step in plan.steps for name in step.dropped_ids}
    assert f"dropped {len(dropped):,}," in text and plan.left_out == len(dropped)
    assert plan.recalled is not None and f"recalled {len(plan.recalled.excerpts)} excerpt" in text
    for step in plan.steps:  # every step that changed the request is named with its figures
        if step.tokens_before != step.tokens_after:
            assert f"{step.name} {step.tokens_before:,} -> {step.tokens_after:,}" in text


def _session_turns(planner: Planner, turns: int, asked_at: int) -> list[Plan[Any]]:
    session = planner.session(chat(0))
    plans = []
    for i in range(turns):
        question = "Which building holds office OF-103?" if i == asked_at else f"Next question {i}."
        session.add_messages([HumanMessage(question)])
        plans.append(session.plan())
        session.add_messages([AIMessage(f"Answer {i}: office OF-{100 + i:03d} is in building {i}. " * 6)])
    return plans


def test_a_sessions_plan_says_what_its_request_leaves_out_of_the_history() -> None:
    planner = Planner(None, counter=COUNTER, context_window=2_500, reserve_output=0, recall_share=0)
    plans = _session_turns(planner, 40, asked_at=-1)
    between_cuts = [p for p in plans if p.cache is not None and not p.cache.cut and p.left_out]
    assert between_cuts  # requests that appended to a cut request, whose steps dropped nothing this time
    for plan in between_cuts:
        history = plan.history
        assert history is not None and not any(step.dropped_ids for step in plan.steps)
        sent = {id(m) for m in plan.messages}
        assert plan.left_out == history.left_out > 0
        assert f"left out of the history: {plan.left_out:,} of {history.messages:,} messages" in str(plan)
        assert plan.summary()["left_out"] == plan.left_out
        assert len(sent) + plan.left_out >= history.messages  # every message is sent or left out


def test_recall_between_cuts_is_a_step_of_the_plan() -> None:
    planner = Planner(None, counter=COUNTER, context_window=2_500, reserve_output=0)
    plans = _session_turns(planner, 40, asked_at=30)
    asked = plans[30]
    assert asked.recalled is not None and asked.cache is not None and not asked.cache.cut
    [recall] = [step for step in asked.steps if step.name == "recall"]
    assert recall.tokens_after - recall.tokens_before >= asked.recalled.tokens > 0
    assert asked.tokens_before == recall.tokens_before and asked.tokens_after == recall.tokens_after
    assert "steps: recall " in str(asked) and "OF-103" in str(asked.messages[-2].content)


@pytest.mark.parametrize("output", ["openai", "anthropic", "responses", "messages"])
def test_recall_excerpts_are_labelled_with_the_roles_providers_use(output: str) -> None:
    plan = fit(chat(60, question="Where is office OF-002?"), None, counter=COUNTER, context_window=2_000,
               reserve_output=300, output=output)  # type: ignore[call-overload]
    assert plan.recalled is not None
    text = str(plan.request)
    assert ", user ---" in text and ", assistant ---" in text
    assert ", human ---" not in text and ", ai ---" not in text


def test_a_budget_below_what_must_stay_says_what_it_holds_and_what_would_help() -> None:
    counter = get_counter(COUNTER)
    system = SystemMessage("Always answer in the voice of a ship's captain. " * 120)
    last = HumanMessage("What is the weather like at sea today? " * 10)
    messages = [system, HumanMessage("hello"), AIMessage("Ahoy."), last]
    tool = {"type": "function", "function": {"name": "forecast", "description": "the sea forecast " * 20,
                                             "parameters": {"type": "object", "properties": {}}}}
    plan = fit(messages, None, counter=COUNTER, context_window=1_500, reserve_output=500, tools=[tool],
               summarizer=ctxwin.extractive_summarizer)
    assert not plan.fits
    [warning] = [w for w in plan.warnings if w.startswith("does not fit")]
    assert f"the system prompt {counter.count_message(system):,}" in warning
    assert f"the last user message {counter.count_message(last):,}" in warning
    assert f"tools {plan.budget.tools_tokens:,}" in warning and plan.budget.tools_tokens > 0
    helps = warning.split("Would help: ")[1]
    assert "a context_window of at least" in helps and "(the model takes" not in helps
    assert "reserve_output" in helps and "a shorter system prompt" in helps
    assert "summar" not in helps  # a summary never replaces what must stay


class _Words(BaseTokenCounter):
    """Exact by its own declaration, as a tokenizer's counter is."""

    name = "words"

    def count_text(self, text: str) -> int:
        return len(text.split())


def test_estimated_figures_are_called_estimates() -> None:
    exact = fit(chat(3), None, counter=_Words(), context_window=4_000)
    estimated = fit(chat(3), None, counter=COUNTER, context_window=4_000)
    assert "estimate" not in str(exact) and not exact.summary()["estimated"]
    assert str(estimated).startswith("fits: ") and "tokens, estimated," in str(estimated).splitlines()[0]
    assert "the figures are estimates" in str(estimated) and estimated.summary()["estimated"]
