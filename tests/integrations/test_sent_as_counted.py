"""Every framework sends what ctxwin counted: each stack's real agent loop, with ctxwin's recall tool among its tools,
talks through the framework's own OpenAI client to a local chat completions server (LlamaIndex, whose OpenAI client
is not installable here, through a scripted LLM), and every request body it sends is recounted on its own with
ctxwin's counter: its messages and every tool definition, the recall tool's included, within the budget. The
LiteLLM proxy's bodies are recounted the same way in test_litellm_proxy.py."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from agent_checks import recording, tool_output
from openai_server import chat_server, check_body, tool_names

from ctxwin import get_counter
from ctxwin.recall import RECALL_TOOL_NAME

# LlamaIndex's workflows inspect the agent with inspect.getmembers, reading pydantic's deprecated attributes.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODEL = "gpt-4o"
WINDOW = 16_000
RESERVE = 1_000
BUDGET = WINDOW - RESERVE
SYSTEM_PROMPT = "You are a build assistant. Read the logs with the tool before answering."
TURNS = 14  # two model calls a turn; the tool outputs outgrow the window after about eight


def question(turn: int) -> str:
    return f"Turn {turn}: what failed in shard-{turn} this time?"


def build_log(turn: int) -> str:
    """Read the build log of a turn."""
    return tool_output(turn)


def needs(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")


def check_bodies(bodies: Sequence[dict[str, Any]], fitted: Sequence[Any]) -> None:
    """Each body within the budget by an independent recount, the recall tool among the tools sent, and the tool
    definitions ctxwin counted for it (``fitted``: the integration's fitted calls, in order) those it sent."""
    assert len(bodies) == len(fitted) == 2 * TURNS
    counter = get_counter(MODEL)
    for index, (body, call) in enumerate(zip(bodies, fitted, strict=True)):
        assert RECALL_TOOL_NAME in tool_names(body) and "build_log" in tool_names(body)
        check_body(body, MODEL, BUDGET, question(index // 2))
        assert call.plan.budget.tools_tokens == counter.count_tools(body["tools"]), f"call {index}: tools counted"
        assert (body.get("max_tokens") or body.get("max_completion_tokens") or 0) <= RESERVE
    assert any(call.plan.cache and call.plan.cache.cut for call in fitted), "the conversation outgrew the window"


def run_turns(run: Callable[[int], Any]) -> None:
    for turn in range(TURNS):
        run(turn)


@pytest.mark.slow
def test_langchain() -> None:
    needs("langchain_openai")
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    from ctxwin.integrations.langchain import ContextWindowMiddleware

    with chat_server() as server:
        model = ChatOpenAI(model=MODEL, base_url=server.url, api_key="fake", max_retries=0)  # type: ignore[arg-type]
        middleware = ContextWindowMiddleware(MODEL, context_window=WINDOW, reserve_output=RESERVE, recall_tool=True)
        fitted = recording(middleware.fitter.conversations)
        agent = create_agent(model, [tool(build_log)], system_prompt=SYSTEM_PROMPT, middleware=[middleware],
                             checkpointer=InMemorySaver())
        run_turns(lambda turn: agent.invoke({"messages": [{"role": "user", "content": question(turn)}]},
                                            {"configurable": {"thread_id": "builds"}}))
        check_bodies(server.bodies, fitted)


@pytest.mark.slow
def test_openai_agents() -> None:
    needs("agents")
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        RunConfig,
        Runner,
        SQLiteSession,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    from ctxwin.integrations.openai_agents import ContextWindowFilter

    set_tracing_disabled(True)  # no trace export from a test
    with chat_server() as server:
        flt = ContextWindowFilter(MODEL, context_window=WINDOW, reserve_output=RESERVE)
        fitted = recording(flt.fitter)
        client = AsyncOpenAI(base_url=server.url, api_key="fake", max_retries=0)
        agent = Agent(name="builder", instructions=SYSTEM_PROMPT,
                      model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
                      tools=[function_tool(build_log), function_tool(flt.recall_tool())])
        session = SQLiteSession("builds")
        run_turns(lambda turn: Runner.run_sync(agent, question(turn), session=session,
                                               run_config=RunConfig(call_model_input_filter=flt)))
        check_bodies(server.bodies, fitted)


@pytest.mark.slow
def test_pydantic_ai() -> None:
    needs("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from ctxwin.integrations.pydantic_ai import ContextWindow

    with chat_server() as server:
        capability = ContextWindow(MODEL, context_window=WINDOW, reserve_output=RESERVE)
        fitted = recording(capability.fitter)
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=server.url, api_key="fake"))
        agent: Agent[None, str] = Agent(model, instructions=SYSTEM_PROMPT, capabilities=[capability],
                                        tools=[build_log, capability.recall_tool()])
        history: list[Any] = []

        def turn(number: int) -> None:
            history[:] = agent.run_sync(question(number), message_history=history).all_messages()

        run_turns(turn)
        check_bodies(server.bodies, fitted)


@pytest.mark.slow
def test_google_adk() -> None:
    """ADK sends a function's string result as ``{"result": ...}``, which its LiteLLM model sends as JSON: a
    shortened result is sent encoded once, as it was counted."""
    needs("google.adk", "litellm")
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from ctxwin.integrations.google_adk import ContextWindowCallback

    with chat_server() as server:
        callback = ContextWindowCallback(MODEL, context_window=WINDOW, reserve_output=RESERVE)
        fitted = recording(callback.fitter(MODEL))
        agent = LlmAgent(name="builder", model=LiteLlm(model=f"openai/{MODEL}", api_base=server.url, api_key="fake"),
                         instruction=SYSTEM_PROMPT, tools=[build_log, callback.recall_tool()],
                         before_model_callback=callback)
        runner = InMemoryRunner(agent=agent, app_name="builds")
        session = runner.session_service.create_session_sync(app_name="builds", user_id="user")

        def turn(number: int) -> None:
            message = types.Content(role="user", parts=[types.Part(text=question(number))])
            for _ in runner.run(user_id="user", session_id=session.id, new_message=message):
                pass

        run_turns(turn)
        check_bodies(server.bodies, fitted)
        results = [m["content"] for body in server.bodies for m in body["messages"] if m["role"] == "tool"]
        shortened = [r for r in results if "tokens of tool output cut by ctxwin" in r]
        assert shortened, "some tool results were shortened"
        assert all(isinstance(json.loads(r)["result"], str) and not json.loads(r)["result"].startswith('{"result"')
                   for r in shortened), "a shortened result is encoded once"


@pytest.mark.slow
def test_agent_framework() -> None:
    """The tools are given to the strategy as the agent takes them: plain functions; the recall tool is counted
    from when it is made."""
    needs("agent_framework", "agent_framework_openai")
    from agent_framework import Agent
    from agent_framework.openai import OpenAIChatCompletionClient

    from ctxwin.integrations.agent_framework import CtxwinCompactionStrategy

    with chat_server() as server:
        strategy = CtxwinCompactionStrategy(MODEL, instructions=SYSTEM_PROMPT, tools=[build_log],
                                            context_window=WINDOW, reserve_output=RESERVE)
        fitted = recording(strategy.fitter)
        recall = strategy.recall_tool()
        client = OpenAIChatCompletionClient(MODEL, api_key="fake", base_url=server.url)
        agent = Agent(client=client, instructions=SYSTEM_PROMPT, tools=[build_log, recall],
                      compaction_strategy=strategy)

        async def run() -> None:
            session = agent.create_session()
            for turn in range(TURNS):
                await agent.run(question(turn), session=session)

        asyncio.run(run())
        check_bodies(server.bodies, fitted)


@pytest.mark.slow
def test_llama_index() -> None:
    """LlamaIndex's OpenAI LLM is not installable beside this openai SDK: a scripted LLM takes each call's
    ChatMessages and tools, written here as the chat completions body OpenAI's client would send, independently
    of the integration's own reading."""
    needs("llama_index")
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.memory import Memory
    from llama_index.core.tools import FunctionTool

    from ctxwin.integrations.llama_index import ContextWindowLLM

    bodies: list[dict[str, Any]] = []

    def as_openai(message: ChatMessage) -> dict[str, Any]:
        role = str(message.role.value)
        text = "".join(block.text for block in message.blocks if isinstance(block, TextBlock))
        calls = [{"id": block.tool_call_id, "type": "function", "function": {
            "name": block.tool_name, "arguments": json.dumps(block.tool_kwargs)}}
            for block in message.blocks if isinstance(block, ToolCallBlock)]
        if role == "tool":
            return {"role": "tool", "tool_call_id": message.additional_kwargs["tool_call_id"], "content": text}
        return {"role": role, "content": text, **({"tool_calls": calls} if calls else {})}

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        tools = [t.metadata.to_openai_tool() for t in kwargs.get("tools") or []]
        bodies.append({"model": MODEL, "messages": [as_openai(m) for m in messages], "tools": tools})
        last = messages[-1]
        if last.role == "user":
            turn = int((last.content or "").split()[1].rstrip(":"))
            call = ToolCallBlock(tool_call_id=f"call_{len(bodies)}", tool_name="build_log", tool_kwargs={"turn": turn})
            return ChatMessage(role="assistant", blocks=[call])
        return ChatMessage(role="assistant", content=f"The failure is E{len(bodies)}.")

    llm = ContextWindowLLM(MockFunctionCallingLLM(response_generator=respond), MODEL, context_window=WINDOW,
                           reserve_output=RESERVE)
    fitted = recording(llm.fitter)
    tools = [FunctionTool.from_defaults(build_log), FunctionTool.from_defaults(llm.recall_tool())]
    agent = FunctionAgent(tools=tools, llm=llm, system_prompt=SYSTEM_PROMPT)
    memory = Memory.from_defaults(session_id="builds", token_limit=10_000_000)

    async def run() -> None:
        for turn in range(TURNS):
            await agent.run(user_msg=question(turn), memory=memory)

    asyncio.run(run())
    check_bodies(bodies, fitted)
