"""ContextWindow (a capability) and ContextWindowProcessor (a history processor) in real Pydantic AI runs, a
``FunctionModel`` answering: every model request fits by an independent recount, tool pairs stay whole, the newest
user message is sent, and between cuts each request starts with the previous one byte for byte."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import pytest

if importlib.util.find_spec("pydantic_ai") is None:
    pytest.skip("Pydantic AI is not installed (pip install -e '.[pydantic-ai]')", allow_module_level=True)

import isolation_support as isolation
from agent_checks import check_prefixes, check_request, cut_flags, recording, tool_output
from isolation_support import SYSTEM, WINDOW, Checked, log
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxwin.integrations._conversations import TurnDoesNotFit
from ctxwin.integrations.pydantic_ai import ContextWindow, ContextWindowProcessor, _read, _tool
from ctxwin.messages import SystemMessage
from ctxwin.planner import BudgetExceeded
from ctxwin.planner._config import FitConfig

MODEL = "gpt-4o"
BUDGET = 20_000
INSTRUCTIONS = "You are a build assistant. Read the logs with the tool before answering."
TURNS = 26  # two model requests a turn: more than 50


class Scripted:
    """A FunctionModel's function: a user prompt gets a tool call, a tool return gets an answer; records what
    each request was sent."""

    def __init__(self) -> None:
        self.requests: list[tuple[list[ModelMessage], AgentInfo]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append((list(messages), info))
        last = messages[-1].parts[-1]
        if isinstance(last, UserPromptPart) and isinstance(last.content, str):
            turn = int(last.content.split()[1].rstrip(":"))
            return ModelResponse(parts=[ToolCallPart("build_log", {"turn": turn}, tool_call_id=f"call_{turn}")])
        return ModelResponse(parts=[TextPart(f"The failure is E{len(self.requests)}.")])


def agent(script: Scripted, **kwargs: Any) -> Agent[None, str]:
    built: Agent[None, str] = Agent(FunctionModel(script), instructions=INSTRUCTIONS, **kwargs)

    @built.tool_plain
    def build_log(turn: int) -> str:
        """Read the build log of a turn."""
        return tool_output(turn)

    return built


def question(turn: int) -> str:
    return f"Turn {turn}: what failed in shard-{turn} this time?"


def check_requests(script: Scripted, fitted: list[Any]) -> int:
    requests = script.requests
    assert len(requests) >= 50 and len(requests) == len(fitted)
    for index, (messages, info) in enumerate(requests):
        sent = [SystemMessage(info.instructions or ""), *(m for _, m in _read(messages))]
        tools = [_tool(t) for t in [*info.function_tools, *info.output_tools]]
        check_request(sent, tools, BUDGET, question(index // 2), MODEL)
        assert all(isinstance(m, ModelMessage.__args__) for m in messages)  # type: ignore[attr-defined]
    dumped = [[ModelMessagesTypeAdapter.dump_json([m]).decode() for m in messages] for messages, _ in requests]
    cuts = check_prefixes(dumped, cut_flags(fitted))
    assert cuts <= len(requests) // 3, f"{cuts} cuts in {len(requests)} requests"
    return cuts


@pytest.mark.slow
def test_the_capability_fits_every_request_of_synchronous_runs() -> None:
    script = Scripted()
    capability = ContextWindow(MODEL, context_window=BUDGET, reserve_output=0)
    fitted = recording(capability.fitter)
    built = agent(script, capabilities=[capability])
    history: list[ModelMessage] | None = None
    for turn in range(TURNS):
        history = built.run_sync(question(turn), message_history=history).all_messages()
    check_requests(script, fitted)
    assert history is not None and len(history) == 4 * TURNS, "the stored history is left whole"


@pytest.mark.slow
def test_the_history_processor_fits_every_request_of_async_runs() -> None:
    script = Scripted()
    processor = ContextWindowProcessor(MODEL, config=FitConfig(context_window=BUDGET - 200, reserve_output=0))
    fitted = recording(processor.fitter)
    built = agent(script, capabilities=[ProcessHistory(processor)])

    async def run() -> list[ModelMessage]:
        history: list[ModelMessage] | None = None
        for turn in range(TURNS):
            history = (await built.run(question(turn), message_history=history)).all_messages()
        return history or []

    history = asyncio.run(run())
    check_requests(script, fitted)
    assert len(history) < 4 * TURNS, "a history processor's result is the run's history"


def test_a_turn_that_cannot_fit_ends_the_run() -> None:
    script = Scripted()
    built = agent(script, capabilities=[ContextWindow(MODEL, context_window=1_500, reserve_output=0,
                                                      strategies=["trim"])])
    with pytest.raises(BudgetExceeded) as error:
        built.run_sync(question(4))
    assert isinstance(error.value, TurnDoesNotFit)
    assert len(script.requests) == 1, "the request whose tool return does not fit is never made"


def test_options_are_the_fit_configs() -> None:
    with pytest.raises(TypeError, match="keep_frist"):
        ContextWindow(MODEL, keep_frist=0.2)
    config = FitConfig(model="gpt-4o-mini", context_window=9_000)
    assert ContextWindowProcessor(None, config=config).config == config


@pytest.mark.slow
@pytest.mark.parametrize("processor", [False, True], ids=["capability", "history processor"])
def test_the_recall_tool_finds_what_the_requests_left_out(processor: bool) -> None:
    """A tool return from an earlier run leaves the requests (the head keeps the first turns); the agent, in a later
    run continuing the conversation with ``message_history=``, calls the recall tool and reads it back. The history
    processor's history, which Pydantic AI keeps as the run's, continues the same session run after run."""
    definitions = [{"type": "function", "function": {"name": name, "description": "", "parameters": {
        "type": "object", "properties": {key: {"type": "string"} for key in keys}}}}
        for name, keys in (("lease_log", ("turn",)), ("recall_conversation", ("query", "handle")))]
    fitting = (ContextWindowProcessor(MODEL, context_window=8_000, reserve_output=0, tools=definitions) if processor
               else ContextWindow(MODEL, context_window=8_000, reserve_output=0))
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        last = messages[-1].parts[-1]
        if isinstance(last, UserPromptPart) and isinstance(last.content, str):
            turn = int(last.content.split()[1].rstrip(":"))
            if turn == 8:
                call = ToolCallPart("recall_conversation", {"query": "warehouse lease reference"}, tool_call_id="r")
            else:
                call = ToolCallPart("lease_log", {"turn": turn}, tool_call_id=f"call_{turn}")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("Done.")])

    capability = ProcessHistory(fitting) if isinstance(fitting, ContextWindowProcessor) else fitting
    built: Agent[None, str] = Agent(FunctionModel(model), instructions=INSTRUCTIONS, capabilities=[capability],
                                    tools=[fitting.recall_tool()])

    @built.tool_plain
    def lease_log(turn: int) -> str:
        """Read the lease log of a turn."""
        return ("The warehouse lease reference is LEASE-Q7-55219.\n" if turn == 3 else "") + tool_output(turn)

    history: list[ModelMessage] | None = None
    for turn in range(9):
        history = built.run_sync(question(turn), message_history=history).all_messages()
    before = ModelMessagesTypeAdapter.dump_json(seen[-2]).decode()
    assert "LEASE-Q7-55219" not in before, "the early return had left the requests"
    assert "LEASE-Q7-55219" in ModelMessagesTypeAdapter.dump_json(seen[-1][-1:]).decode()
    assert len(fitting.fitter._conversations) == 1, "every run continued the one session"


def users_agent(checked: Checked, fitting: ContextWindow | ContextWindowProcessor) -> Agent[None, str]:
    """One agent for every user, its model answering by the isolation script from what each request was sent."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent = [SystemMessage(info.instructions or ""), *(m for _, m in _read(messages))]
        step = checked.respond(sent, [_tool(t) for t in [*info.function_tools, *info.output_tools]])
        if step.tool:
            return ModelResponse(parts=[ToolCallPart(step.tool, step.args, tool_call_id=step.id)])
        return ModelResponse(parts=[TextPart(step.text)])

    if isinstance(fitting, ContextWindow):
        built: Agent[None, str] = Agent(FunctionModel(model), instructions=SYSTEM, capabilities=[fitting],
                                        tools=[fitting.recall_tool()])
    else:  # the history processor is not shown the tools: they are given to it
        built = Agent(FunctionModel(model), instructions=SYSTEM, capabilities=[ProcessHistory(fitting)],
                      tools=[fitting.recall_tool()])

    @built.tool_plain
    def read_log(user: int, turn: int) -> str:
        """Read a user's account log of a turn."""
        return log(user, turn)

    return built


def fittings() -> list[Any]:
    options = {"context_window": WINDOW, "reserve_output": 0, "recall_share": 0}
    tools = [{"type": "function", "function": {"name": name, "description": "", "parameters": {
        "type": "object", "properties": {key: {"type": kind} for key in keys}}}}
        for name, keys, kind in (("read_log", ("user", "turn"), "integer"),
                                 ("recall_conversation", ("query", "handle"), "string"))]
    return [ContextWindow(MODEL, **options), ContextWindowProcessor(MODEL, tools=tools, **options)]


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 1], ids=["capability", "processor"])
def test_users_in_threads_continued_run_after_run_recall_their_own_conversation(index: int) -> None:
    """Each user in a thread (``run_sync``), their conversation continued run after run with
    ``message_history=``: the recall tool of a later run finds what the earlier runs' requests left out."""
    checked = Checked()
    agent = users_agent(checked, fittings()[index])

    def chat(user: int) -> None:
        history: list[ModelMessage] | None = None
        for text in isolation.messages(user):
            history = agent.run_sync(text, message_history=history).all_messages()

    isolation.in_threads(chat)
    checked.done()


@pytest.mark.slow
def test_users_in_asyncio_tasks_recall_their_own_conversation() -> None:
    checked = Checked()
    agent = users_agent(checked, fittings()[0])

    async def chat(user: int) -> None:
        history: list[ModelMessage] | None = None
        for text in isolation.messages(user):
            history = (await agent.run(text, message_history=history)).all_messages()

    isolation.in_tasks(chat)
    checked.done()
