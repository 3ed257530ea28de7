"""The middleware and the hook keep one cache-stable session per thread: with a checkpointer and a thread id, each
model call sends the previous call's messages unchanged plus what was appended, except at a few cuts; two threads
do not mix; every call stays within the budget."""

from __future__ import annotations

import itertools
import json
import warnings
from typing import Any

import pytest
from agent_support import MODEL, SYSTEM_PROMPT, TOOLS, Call, RecordingChatModel, check_call, user_message
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, messages_to_dict
from langgraph.checkpoint.memory import InMemorySaver

from ctxwin.integrations.langchain import ContextWindowMiddleware, pre_model_hook

with warnings.catch_warnings():  # moved to langchain.agents.create_agent in LangGraph 1.0, still supported
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

BUDGET = 6000
TURNS = 24


def as_bytes(messages: list[BaseMessage]) -> list[str]:
    return [json.dumps(m, sort_keys=True) for m in messages_to_dict(messages)]


def continued(calls: list[Call]) -> int:
    """How many calls send the previous call's messages, byte for byte, as their beginning."""
    return sum(
        as_bytes(after.messages[: len(before.messages)]) == as_bytes(before.messages)
        for before, after in itertools.pairwise(calls)
    )


def chat(agent: object, model: RecordingChatModel, thread: str, turns: int = TURNS) -> list[Call]:
    """``turns`` user turns on one thread (the checkpointer holds the history); the calls of that thread."""
    config = {"configurable": {"thread_id": thread}}
    first = len(model.calls)
    for turn in range(turns):
        seen = len(model.calls)
        state = agent.invoke({"messages": [user_message(turn)]}, config)  # type: ignore[attr-defined]
        for call in model.calls[seen:]:
            check_call(call, BUDGET, state["messages"])
    return model.calls[first:]


def test_the_middleware_keeps_each_threads_prefix() -> None:
    model = RecordingChatModel()
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver(),
                         middleware=[ContextWindowMiddleware(MODEL, context_window=BUDGET, reserve_output=0)])
    calls = chat(agent, model, "a")
    assert continued(calls) >= 0.85 * (len(calls) - 1)
    # another thread starts its own session: its first call holds its system prompt and first message only
    other = chat(agent, model, "b", turns=2)
    assert [type(m).__name__ for m in other[0].messages] == ["SystemMessage", "HumanMessage"]


def test_without_sessions_the_cut_moves_every_call() -> None:
    model = RecordingChatModel()
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver(),
                         middleware=[ContextWindowMiddleware(MODEL, context_window=BUDGET, reserve_output=0,
                                                             cache_stable=False)])
    stable_model = RecordingChatModel()
    stable = create_agent(stable_model, TOOLS, system_prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver(),
                          middleware=[ContextWindowMiddleware(MODEL, context_window=BUDGET, reserve_output=0)])
    turns = TURNS // 2  # enough for both to cut, one of them at almost every call
    assert continued(chat(agent, model, "t", turns)) < continued(chat(stable, stable_model, "t", turns))


def test_the_hook_keeps_each_threads_prefix() -> None:
    model = RecordingChatModel()
    hook = pre_model_hook(MODEL, tools=TOOLS, prompt=SYSTEM_PROMPT, context_window=BUDGET, reserve_output=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(model, TOOLS, prompt=SYSTEM_PROMPT, pre_model_hook=hook,
                                   checkpointer=InMemorySaver())
    calls = chat(agent, model, "h")
    assert continued(calls) >= 0.85 * (len(calls) - 1)



@pytest.mark.parametrize(
    ("make", "owner", "option"),
    [(lambda: ContextWindowMiddleware(MODEL, tool_output_cap=2.0), "ContextWindowMiddleware", "tool_output_cap"),
     (lambda: pre_model_hook(MODEL, tool_output_cap=0), "pre_model_hook", "tool_output_cap"),
     (lambda: ContextWindowMiddleware(MODEL, keep_first=0), "ContextWindowMiddleware", "keep_first"),
     (lambda: pre_model_hook(MODEL, keep_first=1.5), "pre_model_hook", "keep_first")],
)
def test_a_bad_session_option_is_refused_when_the_agent_is_built(make: Any, owner: str, option: str) -> None:
    with pytest.raises(ValueError, match=f"^{owner}: {option} must be a share"):
        make()


@pytest.mark.parametrize(("keep_first", "head_fill"), [(None, 0.0), (0.3, 0.1)])
def test_the_threads_sessions_take_keep_first(keep_first: float | None, head_fill: float) -> None:
    middleware = ContextWindowMiddleware(MODEL, context_window=BUDGET, reserve_output=0, keep_first=keep_first,
                                         head_fill=head_fill)
    model = RecordingChatModel()
    agent = create_agent(model=model, tools=TOOLS, system_prompt=SYSTEM_PROMPT, middleware=[middleware],
                         checkpointer=InMemorySaver())
    chat(agent, model, "k", turns=2)
    (thread,) = middleware.fitter.conversations._conversations.values()
    assert (thread.session.config.keep_first, thread.session.config.head_fill) == (keep_first, head_fill)


def test_a_head_fill_above_keep_first_is_refused_when_the_agent_is_built() -> None:
    with pytest.raises(ValueError, match=r"^pre_model_hook: head_fill"):
        pre_model_hook(MODEL, head_fill=0.3, keep_first=0.2)
