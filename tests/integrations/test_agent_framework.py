"""CtxwinCompactionStrategy in real Microsoft Agent Framework runs (``Agent.run`` with a session; the framework's
function-invocation loop), a scripted chat client answering: every model call fits by an independent recount, tool
calls and results stay paired, the newest user message is sent, and between cuts each call starts with the
previous one byte for byte; CtxwinTokenizer is ctxwin's exact count."""

from __future__ import annotations

import asyncio
import copy
import functools
import importlib.util
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

if importlib.util.find_spec("agent_framework") is None:
    pytest.skip("the Agent Framework is not installed (pip install -e '.[agent-framework]')",
                allow_module_level=True)

import isolation_support as isolation
from agent_checks import check_prefixes, check_request, cut_flags, recording, tool_output
from agent_framework import (
    EXCLUDED_KEY,
    Agent,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    TokenizerProtocol,
    TruncationStrategy,
    tool,
)
from isolation_support import SYSTEM, WINDOW, Checked, log

from ctxwin import get_counter
from ctxwin.integrations._conversations import TurnDoesNotFit
from ctxwin.integrations.agent_framework import CtxwinCompactionStrategy, CtxwinTokenizer, _read
from ctxwin.messages import SystemMessage
from ctxwin.planner import BudgetExceeded

MODEL = "gpt-4o"
BUDGET = 20_000
INSTRUCTIONS = "You are a build assistant. Read the logs with the tool before answering."
TURNS = 26  # two model calls a turn: more than 50


@tool
def build_log(turn: int) -> str:
    """Read the build log of a turn."""
    return tool_output(turn)


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A user message gets a function call, a function result gets an answer; records each call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[Message], dict[str, Any]]] = []

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse[Any]:
        self.calls.append((copy.deepcopy(list(messages)), dict(options)))  # the framework edits them later
        last = messages[-1]
        if last.role == "user":
            turn = int(last.text.split()[1].rstrip(":"))
            call = Content.from_function_call(call_id=f"call_{turn}", name="build_log", arguments={"turn": turn})
            return ChatResponse(messages=[Message(role="assistant", contents=[call])])
        return ChatResponse(messages=[Message(role="assistant", contents=[f"The failure is E{len(self.calls)}."])])


def question(turn: int) -> str:
    return f"Turn {turn}: what failed in shard-{turn} this time?"


def check_calls(client: ScriptedClient, fitted: list[Any]) -> int:
    calls = client.calls
    assert len(calls) >= 50 and len(calls) == len(fitted)
    for index, (messages, options) in enumerate(calls):
        sent = [SystemMessage(options["instructions"]), *(m for _, m in _read(messages))]
        tools = [t.to_json_schema_spec() for t in options["tools"]]
        check_request(sent, tools, BUDGET, question(index // 2), MODEL)
        assert all(isinstance(m, Message) and not m.additional_properties.get(EXCLUDED_KEY) for m in messages)
    # what a provider is sent of a message: its role and contents (its additional_properties are annotations)
    dumped = [[repr((m.role, [c.to_dict() for c in m.contents])) for m in messages] for messages, _ in calls]
    cuts = check_prefixes(dumped, cut_flags(fitted))
    assert cuts <= len(calls) // 3, f"{cuts} cuts in {len(calls)} calls"
    return cuts


@pytest.mark.slow
def test_agent_runs_with_a_session_fit_every_call() -> None:
    client = ScriptedClient()
    strategy = CtxwinCompactionStrategy(MODEL, instructions=INSTRUCTIONS, tools=[build_log],
                                        context_window=BUDGET, reserve_output=0)
    fitted = recording(strategy.fitter)
    agent = Agent(client=client, instructions=INSTRUCTIONS, tools=[build_log], compaction_strategy=strategy)

    async def run() -> None:
        session = agent.create_session()
        for turn in range(TURNS):
            await agent.run(question(turn), session=session)

    asyncio.run(run())
    check_calls(client, fitted)


def test_a_turn_that_cannot_fit_ends_the_run() -> None:
    client = ScriptedClient()
    strategy = CtxwinCompactionStrategy(MODEL, instructions=INSTRUCTIONS, tools=[build_log], context_window=1_500,
                                        reserve_output=0, strategies=["trim"])
    agent = Agent(client=client, instructions=INSTRUCTIONS, tools=[build_log], compaction_strategy=strategy)
    with pytest.raises(BudgetExceeded) as error:
        asyncio.run(agent.run(question(4)))
    assert isinstance(error.value, TurnDoesNotFit)
    assert len(client.calls) == 1, "the call whose tool result does not fit is never made"


def test_other_strategies_exclusions_are_respected() -> None:
    """A message another strategy excluded stays excluded, and the list keeps every original message."""
    messages = [Message(role="user", contents=[question(turn)]) for turn in range(4)]
    messages[1].additional_properties[EXCLUDED_KEY] = True
    strategy = CtxwinCompactionStrategy(MODEL, context_window=BUDGET)
    asyncio.run(strategy(messages))
    assert len(messages) == 4 and messages[1].additional_properties[EXCLUDED_KEY]
    assert not any(m.additional_properties.get(EXCLUDED_KEY) for m in (messages[0], messages[2], messages[3]))


def test_the_tokenizer_is_ctxwins_exact_count() -> None:
    tokenizer = CtxwinTokenizer(MODEL)
    assert isinstance(tokenizer, TokenizerProtocol)
    text = tool_output(7)
    assert tokenizer.count_tokens(text) == get_counter(MODEL).count_text(text)
    truncation = TruncationStrategy(max_n=2_000, compact_to=1_000, tokenizer=tokenizer)
    assert truncation.tokenizer is tokenizer


class UsersClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """One chat client for every user, answering by the isolation script from what each call was sent."""

    def __init__(self, checked: Checked) -> None:
        super().__init__()
        self.checked = checked

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse[Any]:
        sent = [SystemMessage(options["instructions"]), *(m for _, m in _read(messages))]
        step = self.checked.respond(sent, [t.to_json_schema_spec() for t in options["tools"]])
        if step.tool:
            call = Content.from_function_call(call_id=step.id, name=step.tool, arguments=step.args)
            return ChatResponse(messages=[Message(role="assistant", contents=[call])])
        return ChatResponse(messages=[Message(role="assistant", contents=[step.text])])


@tool
def read_log(user: int, turn: int) -> str:
    """Read a user's account log of a turn."""
    return log(user, turn)


def users_agent(checked: Checked) -> Agent[Any]:
    # the recall tool's definition is not given to the strategy here: the margin leaves room for it
    strategy = CtxwinCompactionStrategy(MODEL, instructions=SYSTEM, tools=[read_log], context_window=WINDOW,
                                        reserve_output=0, recall_share=0, safety_margin=300)
    return Agent(client=UsersClient(checked), instructions=SYSTEM, tools=[read_log, strategy.recall_tool()],
                 compaction_strategy=strategy)


async def chat(agent: Agent[Any], user: int) -> None:
    session = agent.create_session()
    for text in isolation.messages(user):
        await agent.run(text, session=session)


@pytest.mark.slow
@pytest.mark.parametrize("threads", [False, True], ids=["asyncio tasks", "threads"])
def test_users_at_once_recall_their_own_conversation(threads: bool) -> None:
    isolation.users_at_once(lambda checked: functools.partial(chat, users_agent(checked)), threads=threads)
