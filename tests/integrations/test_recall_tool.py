"""The recall tool in LangChain form: the middleware and the hook offer it over the thread's session, and it finds
what that session's requests left out."""

from __future__ import annotations

import pytest
from agent_support import MODEL, SYSTEM_PROMPT, TOOLS, RecordingChatModel, user_message
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage as LCHuman
from langgraph.checkpoint.memory import InMemorySaver

from ctxwin.integrations.langchain import ContextWindowMiddleware, pre_model_hook, recall_tool
from ctxwin.messages import HumanMessage
from ctxwin.planner import Planner
from ctxwin.recall import RECALL_TOOL_NAME

BUDGET = 3000


def test_the_middleware_adds_the_recall_tool_over_each_threads_session() -> None:
    model = RecordingChatModel()
    # ledger_share=0: the ticket the user stated would be carried in the ledger's block, not left out
    middleware = ContextWindowMiddleware(MODEL, context_window=BUDGET, reserve_output=0, recall_tool=True,
                                         ledger_share=0)
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver(),
                         middleware=[middleware])
    config = {"configurable": {"thread_id": "a"}}
    agent.invoke({"messages": [LCHuman("turn 0: my ticket is INC-48213, keep it")]}, config)
    for turn in range(1, 8):
        agent.invoke({"messages": [user_message(turn)]}, config)
    assert RECALL_TOOL_NAME in {t["function"]["name"] for t in model.calls[-1].tools}
    assert all("INC-48213" not in str(m.content) for m in model.calls[-1].messages)  # left out...
    (tool,) = middleware.tools
    assert "INC-48213" in tool.invoke({"query": "ticket"}, config)  # ...and found in that thread's session
    assert "Nothing" in tool.invoke({"query": "ticket"}, {"configurable": {"thread_id": "b"}})


def test_the_hook_offers_the_tool_and_counts_it() -> None:
    hook = pre_model_hook(MODEL, context_window=BUDGET, reserve_output=0, recall_tool=True)
    assert hook.recall_tool.name == RECALL_TOOL_NAME  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="cache_stable"):
        pre_model_hook(MODEL, context_window=BUDGET, reserve_output=0, recall_tool=True, cache_stable=False)


def test_a_session_as_a_langchain_tool() -> None:
    session = Planner(counter="tiktoken:o200k_base", context_window=400, reserve_output=0, ledger_share=0).session()
    session.add_messages([HumanMessage("The Lyon warehouse lease is LY-2231-X."), ("ai", "Noted."),
                          *[HumanMessage(f"filler {i} " * 40) for i in range(6)]])
    session.plan()
    tool = recall_tool(session)
    assert "LY-2231-X" in tool.invoke({"query": "Lyon warehouse lease"})
    assert "LY-2231-X" in recall_tool(session.recall_tool).invoke({"handle": "#0"})
