"""ContextWindowFilter in real OpenAI Agents SDK runs (``Runner.run_sync`` and ``Runner.run`` with an SDK
``Session``), the SDK's own ``ScriptedModel`` answering: every model call fits by an independent recount, tool pairs
stay whole, the newest user message is sent, and between cuts each call starts with the previous one byte for byte."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any

import pytest

if importlib.util.find_spec("agents") is None:
    pytest.skip("the OpenAI Agents SDK is not installed (pip install -e '.[openai-agents]')", allow_module_level=True)

import isolation_support as isolation
from agent_checks import check_prefixes, check_request, cut_flags, recording, tool_output
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.models.fake_id import FAKE_RESPONSES_ID
from agents.models.openai_responses import Converter
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from isolation_support import SYSTEM, USERS, WINDOW, Checked, log

from ctxwin.integrations._conversations import Fitted, TurnDoesNotFit
from ctxwin.integrations.openai_agents import ContextWindowFilter
from ctxwin.messages import convert_to_messages
from ctxwin.planner import BudgetExceeded
from ctxwin.planner._config import FitConfig

set_tracing_disabled(True)  # no trace export from a test

MODEL = "gpt-4o"
BUDGET = 20_000
INSTRUCTIONS = "You are a build assistant. Read the logs with the tool before answering."
TURNS = 26  # two model calls a turn: more than 50 calls


@function_tool
def build_log(turn: int) -> str:
    """Read the build log of a turn."""
    return tool_output(turn)


def script(turns: int) -> ScriptedModel:
    steps: list[Any] = []
    for turn in range(turns):
        steps.append([function_call("build_log", {"turn": turn}, call_id=f"call_{turn}")])
        steps.append([assistant_message(f"Turn {turn}: the failure is E{turn} in shard-{turn}.", item_id=f"m{turn}")])
    return ScriptedModel(steps)


def question(turn: int) -> str:
    return f"Turn {turn}: what failed in shard-{turn} this time?"


def check_calls(model: ScriptedModel, fitted: list[Fitted], asked: list[str]) -> int:
    calls = model.calls
    assert len(calls) >= 50 and len(calls) == len(fitted)
    for index, call in enumerate(calls):
        sent = convert_to_messages([{"role": "system", "content": call.system_instructions}, *call.input])
        tools = Converter.convert_tools(call.tools, call.handoffs).tools
        check_request(sent, tools, BUDGET, asked[index // 2], MODEL)
        assert call.system_instructions == INSTRUCTIONS
        assert all(isinstance(item, dict) for item in call.input), "Responses items, as the SDK sends them"
    cuts = check_prefixes([call.input for call in calls], cut_flags(fitted))
    assert cuts <= len(calls) // 3, f"{cuts} cuts in {len(calls)} calls"
    return cuts


@pytest.mark.slow
def test_a_synchronous_run_with_a_session_fits_every_call() -> None:
    model = script(TURNS)
    flt = ContextWindowFilter(MODEL, context_window=BUDGET, reserve_output=0)
    fitted = recording(flt.fitter)
    agent = Agent(name="builder", instructions=INSTRUCTIONS, model=model, tools=[build_log])
    session = SQLiteSession("sync")
    asked = [question(turn) for turn in range(TURNS)]
    for text in asked:
        Runner.run_sync(agent, text, session=session, run_config=RunConfig(call_model_input_filter=flt))
    check_calls(model, fitted, asked)
    # the session's history is left whole: the filter fits what is sent, not what is kept
    assert len(asyncio.run(session.get_items())) == 4 * TURNS


@pytest.mark.slow
def test_an_async_run_fits_every_call_and_conversations_do_not_mix() -> None:
    flt = ContextWindowFilter(MODEL, config=FitConfig(context_window=BUDGET, reserve_output=0),
                              conversation_id=lambda data: data.context["conversation"])
    fitted = recording(flt.fitter)
    models = {name: script(TURNS) for name in ("a", "b")}
    agents = {name: Agent(name="builder", instructions=INSTRUCTIONS, model=model, tools=[build_log])
              for name, model in models.items()}
    sessions = {name: SQLiteSession(name) for name in models}

    async def run() -> None:
        for turn in range(TURNS):
            for name in models:  # interleaved: the two conversations' calls alternate
                await Runner.run(agents[name], f"{name} " + question(turn), session=sessions[name],
                                 context={"conversation": name}, run_config=RunConfig(call_model_input_filter=flt))

    asyncio.run(run())
    for name, model in models.items():
        own = [f for f in fitted if any(getattr(m, "text", "").startswith(f"{name} Turn") for m in f.messages)]
        check_calls(model, own, [f"{name} " + question(turn) for turn in range(TURNS)])


def test_a_turn_that_cannot_fit_ends_the_run() -> None:
    model = ScriptedModel([[function_call("build_log", {"turn": 4}, call_id="call_4")], [assistant_message("x")]])
    agent = Agent(name="builder", instructions=INSTRUCTIONS, model=model, tools=[build_log])
    flt = ContextWindowFilter(MODEL, context_window=1_500, reserve_output=0, strategies=["trim"])
    with pytest.raises(BudgetExceeded) as error:
        Runner.run_sync(agent, question(4), run_config=RunConfig(call_model_input_filter=flt))
    assert isinstance(error.value, TurnDoesNotFit)
    assert len(model.calls) == 1, "the call whose tool output does not fit is never made"


def test_options_are_the_fit_configs() -> None:
    with pytest.raises(TypeError, match="keep_frist"):
        ContextWindowFilter(MODEL, keep_frist=0.2)
    with pytest.raises(ValueError, match="low_water"):
        ContextWindowFilter(MODEL, low_water=2)
    config = FitConfig(model="gpt-4o-mini", context_window=9_000)
    assert ContextWindowFilter(None, config=config).config == config
    with pytest.raises(ValueError, match="framework's own messages"):
        ContextWindowFilter(MODEL, output="openai")


@pytest.mark.slow
def test_the_recall_tool_finds_what_the_requests_left_out() -> None:
    """A tool output from the middle of the run leaves the requests (the head keeps the first turns); the agent
    calls the recall tool and reads it back."""
    flt = ContextWindowFilter(MODEL, context_window=8_000, reserve_output=0)
    recall = function_tool(flt.recall_tool())

    @function_tool
    def lease_log(turn: int) -> str:
        """Read the lease log of a turn."""
        return ("The warehouse lease reference is LEASE-Q7-55219.\n" if turn == 3 else "") + tool_output(turn)

    steps: list[Any] = []
    for turn in range(8):
        steps.append([function_call("lease_log", {"turn": turn}, call_id=f"call_{turn}")])
        steps.append([assistant_message(f"Turn {turn} done.", item_id=f"m{turn}")])
    steps.append([function_call("recall_conversation", {"query": "warehouse lease reference"}, call_id="recall")])
    steps.append([assistant_message("It is LEASE-Q7-55219.", item_id="final")])
    model = ScriptedModel(steps)
    agent = Agent(name="leases", instructions=INSTRUCTIONS, model=model, tools=[lease_log, recall])
    session = SQLiteSession("leases")
    for turn in range(9):
        Runner.run_sync(agent, question(turn), session=session, run_config=RunConfig(call_model_input_filter=flt))
    calls = model.calls
    before = json.dumps(calls[-2].input, default=str)
    after = [item for item in calls[-1].input if isinstance(item, dict) and item.get("call_id") == "recall"]
    assert "LEASE-Q7-55219" not in before, "the early output had left the requests"
    assert any("LEASE-Q7-55219" in str(item.get("output")) for item in after)


@pytest.mark.slow
def test_recall_handles_name_one_message_where_the_sdk_gives_every_reply_one_placeholder_id() -> None:
    """The SDK's chat-completions model gives every assistant item the placeholder id ``FAKE_RESPONSES_ID``: the
    recall tool's excerpts are headed by a handle that, called back, reads that very message (not the first of the
    many sharing the id)."""
    flt = ContextWindowFilter(MODEL, context_window=4_000, reserve_output=0, recall_share=0)
    answers: list[str] = []

    def respond(call: Any) -> list[Any]:
        last = call.input[-1]
        text = str(last.get("content") or last.get("output") or "") if isinstance(last, dict) else ""
        if text.startswith("Find "):
            return [function_call("recall_conversation", {"query": text.removeprefix("Find ")}, call_id="q")]
        if text.startswith("Open "):
            return [function_call("recall_conversation", {"handle": text.removeprefix("Open ")}, call_id="h")]
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            answers.append(str(last["output"]))
            return [assistant_message("Read.", item_id=FAKE_RESPONSES_ID)]
        turn = int(text.split(":")[0].removeprefix("Turn "))
        return [assistant_message(f"Noted: the vault code of turn {turn} is VAULT-{turn:04d}. "
                                  + tool_output(turn)[:2_000], item_id=FAKE_RESPONSES_ID)]

    model = ScriptedModel([ModelStep.respond(respond) for _ in range(40)])
    agent = Agent(name="vault", instructions=INSTRUCTIONS, model=model, tools=[function_tool(flt.recall_tool())])
    session = SQLiteSession("vault")
    config = RunConfig(call_model_input_filter=flt)
    for turn in range(10):
        Runner.run_sync(agent, f"Turn {turn}: note the vault code.", session=session, run_config=config)
    Runner.run_sync(agent, "Find VAULT-0003 vault code", session=session, run_config=config)
    found = answers[-1]
    heading = found.splitlines()[0]
    assert FAKE_RESPONSES_ID not in found and "\n" in found, found[:300]
    handle = heading.removeprefix("--- ").split(",")[0]
    Runner.run_sync(agent, f"Open {handle}", session=session, run_config=config)
    assert found.splitlines()[1] in answers[-1], (handle, answers[-1][:200])


def scripted_users(checked: Checked) -> ScriptedModel:
    """One model for every user: each call is answered by the isolation script from what it was sent."""

    def respond(call: Any) -> list[Any]:
        sent = convert_to_messages([{"role": "system", "content": call.system_instructions}, *call.input])
        step = checked.respond(sent, Converter.convert_tools(call.tools, call.handoffs).tools)
        if step.tool:
            return [function_call(step.tool, step.args, call_id=step.id)]
        return [assistant_message(step.text, item_id=f"m{len(checked.previous)}")]

    return ScriptedModel([ModelStep.respond(respond) for _ in range(USERS * 40)])


@function_tool
def read_log(user: int, turn: int) -> str:
    """Read a user's account log of a turn."""
    return log(user, turn)


def users_agent(checked: Checked) -> tuple[Agent[Any], RunConfig]:
    flt = ContextWindowFilter(MODEL, context_window=WINDOW, reserve_output=0, recall_share=0)
    agent = Agent(name="support", instructions=SYSTEM, model=scripted_users(checked),
                  tools=[read_log, function_tool(flt.recall_tool())])
    return agent, RunConfig(call_model_input_filter=flt)


@pytest.mark.slow
@pytest.mark.parametrize("oversize", [False, True], ids=["logs", "oversize logs"])
def test_users_in_threads_without_ids_recall_their_own_conversation(oversize: bool) -> None:
    """Each user in a thread of their own (``run_sync``), an SDK session each (which the filter is not told of);
    with ``oversize`` every log read is half the window to three windows long, and still at most one call in three
    is a cut."""
    checked = Checked()
    agent, config = users_agent(checked)

    def chat(user: int) -> None:
        session = SQLiteSession(f"user-{user}")
        for text in isolation.messages(user, oversize=oversize):
            Runner.run_sync(agent, text, session=session, run_config=config)

    isolation.in_threads(chat)
    checked.done()


@pytest.mark.slow
def test_users_in_asyncio_tasks_without_ids_recall_their_own_conversation() -> None:
    """Each user an asyncio task, the history handed back as input items (``to_input_list``), no session."""
    checked = Checked()
    agent, config = users_agent(checked)

    async def chat(user: int) -> None:
        history: list[Any] = []
        for text in isolation.messages(user):
            result = await Runner.run(agent, [*history, {"role": "user", "content": text}], run_config=config)
            history = result.to_input_list()

    isolation.in_tasks(chat)
    checked.done()


def test_the_recall_tool_outside_a_run_it_can_place_says_so() -> None:
    """A tool context from no run this filter fitted (a job queue's, another process's): an error, no search."""
    flt = ContextWindowFilter(MODEL, context_window=WINDOW, reserve_output=0)
    recall = flt.recall_tool()
    context = ToolContext(None, tool_name="recall_conversation", tool_call_id="c", tool_arguments="{}",
                          turn_input=[{"role": "user", "content": "User 7: what was my PIN code?"}])
    answer = recall(context, query="PIN code")
    assert "cannot tell which conversation" in answer and "conversation_id" in answer
