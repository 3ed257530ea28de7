"""ContextWindowLLM in real LlamaIndex runs: a ``FunctionAgent`` keeping its history in a ``Memory`` (async, the
agent's tool loop), and a ``SimpleChatEngine`` (sync), LlamaIndex's ``MockFunctionCallingLLM`` answering: every LLM
call fits by an independent recount, tool calls and results stay paired, the newest user message is sent, and between
cuts each call starts with the previous one byte for byte."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("llama_index") is None:
    pytest.skip("LlamaIndex is not installed (pip install -e '.[llama-index]')", allow_module_level=True)

import isolation_support as isolation
import llama_index.core
from agent_checks import check_prefixes, check_request, cut_flags, recording, tool_output
from isolation_support import SYSTEM, WINDOW, Checked, log
from llama_index.core import Settings
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool

from ctxwin import get_counter
from ctxwin.integrations._conversations import TurnDoesNotFit
from ctxwin.integrations.llama_index import ContextWindowLLM, _read, _tools, tokenizer
from ctxwin.planner import BudgetExceeded

# LlamaIndex's workflows inspect the agent with inspect.getmembers, reading pydantic's deprecated attributes.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODEL = "gpt-4o"
BUDGET = 20_000
SYSTEM_PROMPT = "You are a build assistant. Read the logs with the tool before answering."
TURNS = 26  # two LLM calls a turn: more than 50


def build_log(turn: int) -> str:
    """Read the build log of a turn."""
    return tool_output(turn)


class Script:
    """A user message gets a tool call (an agent) or an answer (a chat engine), a tool result gets an answer;
    records what each call was sent."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[ChatMessage], list[Any]]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        tools = list(kwargs.get("tools") or [])
        self.calls.append(([m.model_copy(deep=True) for m in messages], tools))
        last = messages[-1]
        if last.role == "user" and tools:
            turn = int((last.content or "").split()[1].rstrip(":"))
            call = ToolCallBlock(tool_call_id=f"call_{turn}", tool_name="build_log", tool_kwargs={"turn": turn})
            return ChatMessage(role="assistant", blocks=[call])
        answer = f"The failure is E{len(self.calls)}. " + tool_output(len(self.calls))[:400]
        return ChatMessage(role="assistant", content=answer)


def question(turn: int) -> str:
    return f"Turn {turn}: what failed in shard-{turn} this time?"


def check_calls(script: Script, fitted: list[Any], per_turn: int) -> int:
    calls = script.calls
    assert len(calls) >= 50 and len(calls) == len(fitted)
    for index, (messages, tools) in enumerate(calls):
        check_request([m for _, m in _read(messages)], _tools({"tools": tools}) or [], BUDGET,
                      question(index // per_turn), MODEL)
        assert all(isinstance(m, ChatMessage) for m in messages)
    dumped = [[m.model_dump_json() for m in messages] for messages, _ in calls]
    cuts = check_prefixes(dumped, cut_flags(fitted))
    assert cuts <= len(calls) // 3, f"{cuts} cuts in {len(calls)} calls"
    return cuts


@pytest.mark.slow
def test_a_function_agent_fits_every_call_of_its_tool_loop() -> None:
    script = Script()
    llm = ContextWindowLLM(MockFunctionCallingLLM(response_generator=script), MODEL, context_window=BUDGET,
                           reserve_output=0)
    fitted = recording(llm.fitter)
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(build_log)], llm=llm, system_prompt=SYSTEM_PROMPT)
    memory = Memory.from_defaults(session_id="builds", token_limit=10_000_000)  # whole: ctxwin decides

    async def run() -> None:
        for turn in range(TURNS):
            await agent.run(user_msg=question(turn), memory=memory)

    asyncio.run(run())
    check_calls(script, fitted, per_turn=2)


@pytest.mark.slow
def test_a_chat_engine_fits_every_synchronous_call() -> None:
    script = Script()
    llm = ContextWindowLLM(MockFunctionCallingLLM(response_generator=script), MODEL, context_window=BUDGET // 4,
                           reserve_output=0)
    fitted = recording(llm.fitter)
    engine = SimpleChatEngine.from_defaults(llm=llm, system_prompt=SYSTEM_PROMPT,
                                            memory=Memory.from_defaults(token_limit=10_000_000))
    for turn in range(2 * TURNS):
        engine.chat(question(turn))
    calls = script.calls
    assert len(calls) == len(fitted) == 2 * TURNS
    for index, (messages, _) in enumerate(calls):
        check_request([m for _, m in _read(messages)], [], BUDGET // 4, question(index), MODEL)
    assert check_prefixes([[m.model_dump_json() for m in messages] for messages, _ in calls], cut_flags(fitted))


def test_a_turn_that_cannot_fit_is_not_sent() -> None:
    script = Script()
    llm = ContextWindowLLM(MockFunctionCallingLLM(response_generator=script), MODEL, context_window=1_500,
                           reserve_output=0, strategies=["trim"])
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(build_log)], llm=llm, system_prompt=SYSTEM_PROMPT)

    async def run() -> None:
        await agent.run(user_msg=question(4))

    with pytest.raises(BudgetExceeded) as error:
        asyncio.run(run())
    assert isinstance(error.value, TurnDoesNotFit)
    assert len(script.calls) == 1, "the call whose tool result does not fit is never made"


def users_llm(checked: Checked) -> ContextWindowLLM:
    """One LLM for every user, answering by the isolation script from what each call was sent."""

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        step = checked.respond([m for _, m in _read(messages)], _tools(kwargs) or [])
        if step.tool:
            call = ToolCallBlock(tool_call_id=step.id, tool_name=step.tool, tool_kwargs=step.args)
            return ChatMessage(role="assistant", blocks=[call])
        return ChatMessage(role="assistant", content=step.text)

    return ContextWindowLLM(MockFunctionCallingLLM(response_generator=respond), MODEL, context_window=WINDOW,
                            reserve_output=0, recall_share=0)


def read_log(user: int, turn: int) -> str:
    """Read a user's account log of a turn."""
    return log(user, turn)


def users_agent(checked: Checked) -> FunctionAgent:
    llm = users_llm(checked)
    tools = [FunctionTool.from_defaults(read_log), FunctionTool.from_defaults(llm.recall_tool())]
    return FunctionAgent(tools=tools, llm=llm, system_prompt=SYSTEM)


async def chat(agent: FunctionAgent, user: int) -> None:
    memory = Memory.from_defaults(session_id=f"user-{user}", token_limit=10_000_000)
    for text in isolation.messages(user):
        await agent.run(user_msg=text, memory=memory)


@pytest.mark.slow
@pytest.mark.parametrize("threads", [False, True], ids=["asyncio tasks", "threads"])
def test_users_at_once_recall_their_own_conversation_in_the_agents_tool_step(threads: bool) -> None:
    """LlamaIndex runs an agent's tools in a workflow step of their own: the recall tool finds its conversation by
    the run's ``Context``, never the conversation fitted last."""
    isolation.users_at_once(lambda checked: functools.partial(chat, users_agent(checked)), threads=threads)


def test_llamaindex_counts_with_ctxwins_counter_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """LlamaIndex's global tokenizer (a Memory's token_limit, the text splitters) is tiktoken's cl100k unless set,
    downloaded when tiktoken's cache is cold: a ContextWindowLLM sets ctxwin's counter for its model instead, and
    nothing is downloaded (tiktoken's cache stays empty; the suite's socket guard would refuse a download)."""
    monkeypatch.setattr(llama_index.core, "global_tokenizer", None)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    ContextWindowLLM(MockFunctionCallingLLM(), MODEL, context_window=BUDGET)
    memory = Memory.from_defaults(token_limit=10_000)
    text = tool_output(3)
    assert len(Settings.tokenizer(text)) == len(memory.tokenizer_fn(text)) == get_counter(MODEL).count_text(text)
    assert list(tmp_path.iterdir()) == []


def test_the_tokenizer_is_ctxwins_count() -> None:
    text = tool_output(5)
    assert len(tokenizer(MODEL)(text)) == get_counter(MODEL).count_text(text)
    assert len(tokenizer("approximate")(text)) == get_counter("approximate").count_text(text)
    assert tokenizer(get_counter(MODEL))("") == []
