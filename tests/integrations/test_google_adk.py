"""ContextWindowCallback in real Google ADK runs (``InMemoryRunner.run`` and ``run_async``), a scripted ``BaseLlm``
answering: every model call fits by an independent recount, function calls and responses stay paired, the newest
user message is sent, and between cuts each call starts with the previous one byte for byte."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncGenerator
from typing import Any

import pytest

if importlib.util.find_spec("google.adk") is None:
    pytest.skip("Google ADK is not installed (pip install -e '.[google-adk]')", allow_module_level=True)

import isolation_support as isolation
from agent_checks import check_prefixes, check_request, cut_flags, recording, tool_output
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from isolation_support import SYSTEM, WINDOW, Checked, log

from ctxwin.integrations._conversations import TurnDoesNotFit
from ctxwin.integrations.google_adk import ContextWindowCallback, _read, _text, _tools
from ctxwin.messages import SystemMessage
from ctxwin.planner import BudgetExceeded
from ctxwin.planner._config import FitConfig

MODEL = "gpt-4o"
BUDGET = 20_000
INSTRUCTION = "You are a build assistant. Read the logs with the tool before answering."
TURNS = 26  # two model calls a turn: more than 50


class ScriptedLlm(BaseLlm):
    """A user message gets a function call, a function response gets an answer; records each request."""

    model: str = "scripted"
    requests: list[LlmRequest] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        last = llm_request.contents[-1].parts[-1]
        if last.text is not None:
            turn = int(last.text.split()[1].rstrip(":"))
            call = types.FunctionCall(name="build_log", args={"turn": turn}, id=f"call_{turn}")
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
        else:
            answer = f"The failure is E{len(self.requests)}."
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=answer)]))


def build_log(turn: int) -> str:
    """Read the build log of a turn."""
    return tool_output(turn)


def question(turn: int) -> str:
    return f"Turn {turn}: what failed in shard-{turn} this time?"


def runner(callback: ContextWindowCallback) -> tuple[InMemoryRunner, ScriptedLlm]:
    llm = ScriptedLlm(requests=[])
    agent = LlmAgent(name="builder", model=llm, instruction=INSTRUCTION, tools=[build_log],
                     before_model_callback=callback)
    return InMemoryRunner(agent=agent, app_name="builds"), llm


def ask(turn: int) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=question(turn))])


def check_requests(llm: ScriptedLlm, fitted: list[Any]) -> int:
    requests = llm.requests
    assert len(requests) >= 50 and len(requests) == len(fitted)
    for index, request in enumerate(requests):
        sent = [SystemMessage(_text(request.config.system_instruction)), *(m for _, m in _read(request.contents))]
        check_request(sent, _tools(request), BUDGET, question(index // 2), MODEL)
        assert all(isinstance(content, types.Content) for content in request.contents)
    dumped = [[c.model_dump_json(exclude_none=True) for c in request.contents] for request in requests]
    cuts = check_prefixes(dumped, cut_flags(fitted))
    assert cuts <= len(requests) // 3, f"{cuts} cuts in {len(requests)} requests"
    return cuts


@pytest.mark.slow
def test_a_synchronous_run_fits_every_call() -> None:
    callback = ContextWindowCallback(MODEL, context_window=BUDGET, reserve_output=0)
    fitted = recording(callback.fitter(None))
    run, llm = runner(callback)
    session = asyncio.run(run.session_service.create_session(app_name="builds", user_id="u"))
    for turn in range(TURNS):
        list(run.run(user_id="u", session_id=session.id, new_message=ask(turn)))
    check_requests(llm, fitted)


@pytest.mark.slow
def test_async_runs_of_two_sessions_fit_every_call_and_do_not_mix() -> None:
    callback = ContextWindowCallback(config=FitConfig(counter="tiktoken:o200k_base", context_window=BUDGET,
                                                      reserve_output=0))
    fitted = recording(callback.fitter(None))
    run, llm = runner(callback)

    async def chat() -> list[str]:
        ids = [(await run.session_service.create_session(app_name="builds", user_id="u")).id for _ in range(2)]
        for turn in range(TURNS):
            for session_id in ids:
                async for _ in run.run_async(user_id="u", session_id=session_id, new_message=ask(turn)):
                    pass
        return ids

    ids = asyncio.run(chat())
    assert len(llm.requests) == 4 * TURNS
    for parity, _ in enumerate(ids):  # the sessions' calls alternate, two by two
        own = [i for i in range(len(llm.requests)) if (i // 2) % 2 == parity]
        script = ScriptedLlm(requests=[llm.requests[i] for i in own])
        check_requests(script, [fitted[i] for i in own])


def test_a_turn_that_cannot_fit_ends_the_run() -> None:
    run, llm = runner(ContextWindowCallback(MODEL, context_window=1_500, reserve_output=0, strategies=["trim"]))
    session = asyncio.run(run.session_service.create_session(app_name="builds", user_id="u"))
    with pytest.raises(BudgetExceeded) as error:
        list(run.run(user_id="u", session_id=session.id, new_message=ask(4)))
    assert isinstance(error.value, TurnDoesNotFit)
    assert len(llm.requests) == 1, "the call whose function response does not fit is never made"


def test_the_requests_model_names_the_counter() -> None:
    callback = ContextWindowCallback(context_window=BUDGET)
    assert callback.fitter("gpt-4o-mini").planner.model == "gpt-4o-mini"
    assert callback.fitter("gpt-4o-mini") is callback.fitter("gpt-4o-mini")
    with pytest.raises(ValueError, match="names no model"):
        callback.fitter(None)


class UsersLlm(BaseLlm):
    """One model for every user, named like a model ctxwin knows (the callback takes each request's model): each
    request is answered by the isolation script from what it was sent."""

    model: str = MODEL
    checked: Any = None

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        instruction = SystemMessage(_text(llm_request.config.system_instruction))
        sent = [instruction, *(m for _, m in _read(llm_request.contents))]
        step = self.checked.respond(sent, _tools(llm_request))
        if step.tool:
            part = types.Part(function_call=types.FunctionCall(name=step.tool, args=step.args, id=step.id))
        else:
            part = types.Part(text=step.text)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def read_log(user: int, turn: int) -> str:
    """Read a user's account log of a turn."""
    return log(user, turn)


def users_runner(checked: Checked) -> InMemoryRunner:
    """The documented setup: the callback takes each request's model, and its recall tool is among the agent's."""
    callback = ContextWindowCallback(context_window=WINDOW, reserve_output=0, recall_share=0)
    agent = LlmAgent(name="support", model=UsersLlm(checked=checked), instruction=SYSTEM,
                     tools=[read_log, callback.recall_tool()], before_model_callback=callback)
    return InMemoryRunner(agent=agent, app_name="support")


def said(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


@pytest.mark.slow
def test_users_in_threads_sharing_a_session_id_recall_their_own_conversation() -> None:
    """Every user's session is called "default" (ADK tells sessions apart by app, user and id): each user, in a
    thread of their own (``Runner.run``), gets back their own conversation only."""
    checked = Checked()
    run = users_runner(checked)

    def chat(user: int) -> None:
        asyncio.run(run.session_service.create_session(app_name="support", user_id=f"u{user}", session_id="default"))
        for text in isolation.messages(user):
            list(run.run(user_id=f"u{user}", session_id="default", new_message=said(text)))

    isolation.in_threads(chat)
    checked.done()


@pytest.mark.slow
def test_users_in_asyncio_tasks_recall_their_own_conversation() -> None:
    checked = Checked()
    run = users_runner(checked)

    async def chat(user: int) -> None:
        session = await run.session_service.create_session(app_name="support", user_id="u")
        for text in isolation.messages(user):
            async for _ in run.run_async(user_id="u", session_id=session.id, new_message=said(text)):
                pass

    isolation.in_tasks(chat)
    checked.done()
