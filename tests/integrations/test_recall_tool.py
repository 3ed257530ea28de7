"""The recall tool in LangChain form: the middleware and the hook offer it over the session of the conversation each
call is in (the run's thread id, else the graph state's messages, say which), and several users of one agent, in
threads and asyncio tasks, without thread ids, each get back their own conversation only."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from isolation_support import MODEL, SYSTEM, WINDOW, Checked, in_tasks, in_threads, log, messages, secret
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages import HumanMessage as LCHuman
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxwin.integrations.langchain import ContextWindowMiddleware, pre_model_hook, recall_tool
from ctxwin.messages import HumanMessage, convert_to_messages
from ctxwin.planner import Planner
from ctxwin.recall import RECALL_TOOL_NAME

with warnings.catch_warnings():  # moved to langchain.agents.create_agent in LangGraph 1.0, still supported
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


class ScriptedChatModel(BaseChatModel):
    """Answers by the isolation script (``Checked.respond``), which checks every request it is sent."""

    checked: Any  # a pydantic field: the checks are a plain object

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any,
    ) -> ChatResult:
        step = self.checked.respond(convert_to_messages(messages), kwargs.get("tools") or [])
        calls = [{"name": step.tool, "args": step.args, "id": step.id, "type": "tool_call"}] if step.tool else []
        return ChatResult(generations=[ChatGeneration(message=AIMessage(step.text, tool_calls=calls))])


@tool
def read_log(user: int, turn: int) -> str:
    """Read a user's account log of a turn."""
    return log(user, turn)


def middleware_agent(checked: Checked, **options: Any) -> Any:
    middleware = ContextWindowMiddleware(MODEL, context_window=WINDOW, reserve_output=0, recall_tool=True, **options)
    return create_agent(ScriptedChatModel(checked=checked), [read_log], system_prompt=SYSTEM, middleware=[middleware])


def hook_agent(checked: Checked, **options: Any) -> Any:
    hook = pre_model_hook(MODEL, tools=[read_log], prompt=SYSTEM, context_window=WINDOW, reserve_output=0,
                          recall_tool=True, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(ScriptedChatModel(checked=checked), [read_log, hook.recall_tool], prompt=SYSTEM,
                                  pre_model_hook=hook)


def chat(agent: Any, user: int) -> None:
    """One user's conversation, the whole history handed to each run (no thread id, no checkpointer)."""
    history: list[Any] = []
    for text in messages(user):
        history = agent.invoke({"messages": [*history, LCHuman(text)]})["messages"]
        assert "no longer fits" not in history[-1].text, history[-1].text


async def achat(agent: Any, user: int) -> None:
    history: list[Any] = []
    for text in messages(user):
        history = (await agent.ainvoke({"messages": [*history, LCHuman(text)]}))["messages"]
        assert "no longer fits" not in history[-1].text, history[-1].text


@pytest.mark.slow
@pytest.mark.parametrize("make", [middleware_agent, hook_agent], ids=["middleware", "hook"])
def test_users_in_threads_without_thread_ids_recall_their_own_conversation(make: Any) -> None:
    checked = Checked()
    agent = make(checked, recall_share=0)  # nothing recalled into the requests: the PIN comes from the tool
    in_threads(lambda user: chat(agent, user))
    checked.done()


@pytest.mark.slow
def test_users_in_asyncio_tasks_without_thread_ids_recall_their_own_conversation() -> None:
    checked = Checked()
    agent = middleware_agent(checked)
    in_tasks(lambda user: achat(agent, user))
    checked.done()


def test_the_middleware_adds_the_recall_tool_over_each_threads_session() -> None:
    """With thread ids (a checkpointer), each thread's tool searches that thread's session; another thread that left
    nothing out finds nothing."""
    checked = Checked()
    agent = create_agent(ScriptedChatModel(checked=checked), [read_log], system_prompt=SYSTEM,
                         checkpointer=InMemorySaver(), middleware=[
                             ContextWindowMiddleware(MODEL, context_window=WINDOW, reserve_output=0, recall_share=0,
                                                     ledger_share=0, recall_tool=True)])
    for user in range(2):
        said = messages(user)
        for text in [*said[:2], said[-1]] if user else said:
            agent.invoke({"messages": [LCHuman(text)]}, {"configurable": {"thread_id": f"t{user}"}})
    assert any(secret(0) in answer for answer in checked.recalled[0])
    assert "Nothing left out" in checked.recalled[1][0] and secret(0) not in checked.recalled[1][0]


def test_the_hook_offers_the_tool_and_counts_it() -> None:
    hook = pre_model_hook(MODEL, context_window=WINDOW, reserve_output=0, recall_tool=True)
    assert hook.recall_tool.name == RECALL_TOOL_NAME  # type: ignore[attr-defined]
    assert "runtime" not in hook.recall_tool.tool_call_schema.model_json_schema()["properties"]  # type: ignore
    with pytest.raises(ValueError, match="cache_stable"):
        pre_model_hook(MODEL, context_window=WINDOW, reserve_output=0, recall_tool=True, cache_stable=False)
    with pytest.raises(ValueError, match="rewrite_state=True forgets"):
        pre_model_hook(MODEL, context_window=WINDOW, reserve_output=0, recall_tool=True, rewrite_state=True)


def test_a_session_as_a_langchain_tool() -> None:
    session = Planner(counter="tiktoken:o200k_base", context_window=400, reserve_output=0, ledger_share=0).session()
    session.add_messages([HumanMessage("The Lyon warehouse lease is LY-2231-X."), ("ai", "Noted."),
                          *[HumanMessage(f"filler {i} " * 40) for i in range(6)]])
    session.plan()
    tool = recall_tool(session)
    assert "LY-2231-X" in tool.invoke({"query": "Lyon warehouse lease"})
    assert "LY-2231-X" in recall_tool(session.recall_tool).invoke({"handle": "#0"})
