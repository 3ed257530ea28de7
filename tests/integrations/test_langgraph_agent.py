"""``pre_model_hook`` inside a real LangGraph ReAct agent (``create_react_agent``) with a recording fake model."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from agent_support import (
    BIG_TURN,
    MODEL,
    SYSTEM_PROMPT,
    TOOLS,
    RecordingChatModel,
    big_log,
    check_call,
    filler,
    user_message,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel

from ctxwin import BudgetExceeded, get_counter
from ctxwin.integrations.langchain import pre_model_hook

with warnings.catch_warnings():  # moved to langchain.agents.create_agent in LangGraph 1.0, still supported
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

BUDGET = 6000
TURNS = 30


def react_agent(model: RecordingChatModel, prompt: Any = SYSTEM_PROMPT, **options: Any) -> Any:
    budget = {"context_window": BUDGET, "reserve_output": 0}
    hook = pre_model_hook(MODEL, tools=TOOLS, prompt=prompt, **{**budget, **options})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, TOOLS, prompt=prompt, pre_model_hook=hook)


@pytest.mark.slow
def test_thirty_turns_every_call_within_the_budget() -> None:
    model = RecordingChatModel()
    agent = react_agent(model)
    history: list[BaseMessage] = []
    for turn in range(TURNS):
        seen = len(model.calls)
        history = agent.invoke({"messages": [*history, user_message(turn)]})["messages"]
        assert len(model.calls) == seen + 2
        for call in model.calls[seen:]:
            check_call(call, BUDGET, history)
    # The stored history is whole (the hook only sets llm_input_messages), the 50k-token log included.
    assert len(history) == TURNS * 4
    assert [m for m in history if isinstance(m, ToolMessage)][BIG_TURN].content == big_log()
    assert get_counter(MODEL).count_messages(history) > 2 * BUDGET
    assert sum(isinstance(m, HumanMessage) for m in model.calls[-1].messages) < TURNS // 2  # old turns dropped


@pytest.mark.slow
def test_rewrite_state_replaces_the_stored_history_by_the_fitted_one() -> None:
    model = RecordingChatModel()
    agent = react_agent(model, rewrite_state=True)
    history: list[BaseMessage] = []
    for turn in range(BIG_TURN + 1):
        history = agent.invoke({"messages": [*history, user_message(turn)]})["messages"]
    log = [m for m in history if isinstance(m, ToolMessage)][-1]
    assert log.text[:200] == big_log()[:200] and len(log.text) < len(big_log()) // 4  # the state holds it shortened
    assert not any(m.id == "user-0" for m in history)  # and no longer the turns dropped to fit
    assert get_counter(MODEL).count_messages(history) <= BUDGET + 200  # at most the last answer past the fit


def test_must_keep_over_budget_raises_and_never_sends_the_whole_history() -> None:
    model = RecordingChatModel()
    agent = react_agent(model, context_window=600)
    with pytest.raises(BudgetExceeded, match="budget allows 600"):
        agent.invoke({"messages": [HumanMessage("Turn 0: " + filler(1, 900))]})
    assert model.calls == []


def test_nothing_left_but_the_prompt_is_refused() -> None:
    """A history with no user message that trimming empties: an empty ``llm_input_messages`` would make the agent
    send the whole history, so the hook refuses."""
    model = RecordingChatModel()
    agent = react_agent(model, context_window=300)
    with pytest.raises(BudgetExceeded,
                       match=r"the newest message \(the conversation has no user message\) needs \d+ tokens"):
        agent.invoke({"messages": [AIMessage(filler(2, 400), id="a")]})
    assert model.calls == []


def test_async_graph_with_a_chat_model_summarizer() -> None:
    summarizer = RecordingChatModel(replies=["Builds kept failing in the linker."])
    model = RecordingChatModel()
    agent = react_agent(model, summarizer=summarizer)

    async def run() -> None:
        history: list[BaseMessage] = []
        for turn in range(12):
            seen = len(model.calls)
            history = (await agent.ainvoke({"messages": [*history, user_message(turn)]}))["messages"]
            for call in model.calls[seen:]:
                check_call(call, BUDGET, history)

    asyncio.run(run())
    assert summarizer.calls
    assert any(isinstance(m, SystemMessage) and "linker" in m.text for m in model.calls[-1].messages)


def test_prompt_must_be_countable() -> None:
    with pytest.raises(TypeError, match="prompt must be a string or a SystemMessage"):
        pre_model_hook(MODEL, prompt=lambda state: state)  # type: ignore[arg-type]


def test_a_state_without_messages_is_named() -> None:
    with pytest.raises(ValueError, match="no 'messages'"):
        pre_model_hook(MODEL).invoke({"other": 1})


def test_a_pydantic_state_is_read_by_its_messages() -> None:
    class State(BaseModel):
        messages: list[BaseMessage]

    history = [user_message(0)]
    update = pre_model_hook(MODEL, tools=TOOLS, prompt=SYSTEM_PROMPT).invoke(State(messages=history))
    assert update == {"llm_input_messages": history} and update["llm_input_messages"][0] is history[0]
