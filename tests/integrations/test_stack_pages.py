"""docs/stacks/*.md run as written: each page's python blocks in order in one namespace, the names a page says are
yours (the model or client, the instructions, a tool) given as offline stand-ins; then the agent each block built
holds a conversation long enough to leave things out, and its recall tool, wired as the page wires it, reads back
what the requests no longer show."""

from __future__ import annotations

import asyncio
import importlib.util
import re
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_checks import tool_output

from ctxwin.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

PAGES = Path(__file__).resolve().parents[2] / "docs" / "stacks"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)
INSTRUCTIONS = "You are a facilities assistant. Read the logs with the tool before answering."
LEASE = "LEASE-Q7-55219"
TURNS = 10
ASK = "Recall: what was the warehouse lease reference?"


def blocks(page: str) -> list[str]:
    return [body for language, body in BLOCK.findall((PAGES / page).read_text(encoding="utf-8"))
            if language == "python"]


def read_log(turn: int) -> str:
    """Read the facilities log of a turn."""
    return (f"The warehouse lease reference is {LEASE}.\n" if turn == 4 else "") + tool_output(turn) * 3


class Probe:
    """The stand-in model's script, over what each call was sent (as ctxwin messages): a "Turn k" message gets a
    ``read_log`` call, the recall question a recall call, anything else an answer; the recall answers and the
    requests' texts are kept."""

    def __init__(self) -> None:
        self.answers: list[str] = []
        self.asked_with: list[str] = []  # the text of each request that held the recall question

    def __call__(self, sent: Sequence[BaseMessage]) -> tuple[str, dict[str, Any], str] | str:
        last = sent[-1]
        if isinstance(last, ToolMessage):
            if last.tool_call_id == "recall":
                self.answers.append(last.text)
            return "Done."
        asked = next((m.text for m in reversed(sent) if isinstance(m, HumanMessage)), "")
        if asked == ASK:
            self.asked_with.append("\n".join(m.text for m in sent))
            return "recall_conversation", {"query": "warehouse lease reference"}, "recall"
        turn = re.match(r"Turn (\d+):", asked)
        if turn:
            return "read_log", {"turn": int(turn.group(1))}, f"log-{turn.group(1)}"
        return "Noted."

    def check(self) -> None:
        """The recall tool answered from this conversation: the lease reference came back, from the tool or in the
        request that asked (where query-aware recall put it), and never an error saying it could not tell."""
        assert self.answers, "the recall tool was never called"
        assert not any("cannot tell" in answer for answer in self.answers), self.answers
        assert any(LEASE in answer for answer in self.answers) or LEASE in self.asked_with[-1], self.answers


def questions() -> list[str]:
    return [*(f"Turn {turn}: read the facilities log." for turn in range(TURNS)), ASK]


def run_page(page: str, namespace: dict[str, Any], drive: Callable[[dict[str, Any]], None]) -> None:
    """Each block of ``page`` in turn, then ``drive`` with the namespace it left."""
    for number, body in enumerate(blocks(page), 1):
        exec(compile(body, f"docs/stacks/{page} python block {number}", "exec"), namespace)
        drive(namespace)


def needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


@pytest.mark.slow
def test_openai_agents_page() -> None:
    needs("agents")
    from agents import RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from ctxwin.messages import convert_to_messages

    set_tracing_disabled(True)
    probe = Probe()

    def respond(call: Any) -> list[Any]:
        step = probe(convert_to_messages([{"role": "system", "content": call.system_instructions}, *call.input]))
        if isinstance(step, str):
            return [assistant_message(step)]
        return [function_call(step[0], step[1], call_id=step[2])]

    model = ScriptedModel([ModelStep.respond(respond) for _ in range(100)])

    def drive(namespace: dict[str, Any]) -> None:
        session = SQLiteSession("drive")
        for text in questions():
            Runner.run_sync(namespace["agent"], text, session=session,
                            run_config=RunConfig(call_model_input_filter=namespace["fit"]))

    run_page("openai-agents.md", {"model": model, "INSTRUCTIONS": INSTRUCTIONS, "read_log": function_tool(read_log)},
             drive)
    probe.check()


@pytest.mark.slow
def test_pydantic_ai_page() -> None:
    needs("pydantic_ai")
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from ctxwin.integrations.pydantic_ai import to_messages

    probes: list[Probe] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = probes[-1]([SystemMessage(info.instructions or ""), *to_messages(messages)])
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        return ModelResponse(parts=[ToolCallPart(step[0], step[1], tool_call_id=step[2])])

    def drive(namespace: dict[str, Any]) -> None:
        probes.append(Probe())
        history: list[ModelMessage] | None = None
        for text in questions():  # each question a run of its own, continuing the last
            history = namespace["agent"].run_sync(text, message_history=history).all_messages()
        probes[-1].check()

    definitions = [{"type": "function", "function": {"name": name, "description": "", "parameters": {
        "type": "object", "properties": {key: {"type": kind} for key, kind in fields}}}}
        for name, fields in (("read_log", [("turn", "integer")]),
                             ("recall_conversation", [("query", "string"), ("handle", "string")]))]
    probes.append(Probe())
    run_page("pydantic-ai.md", {"model": FunctionModel(respond), "INSTRUCTIONS": INSTRUCTIONS, "read_log": read_log,
                                "TOOL_DEFINITIONS": definitions}, drive)
    assert len(probes) == 3  # the page's own run, then one conversation per block


@pytest.mark.slow
def test_google_adk_page() -> None:
    needs("google.adk")
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    from ctxwin.integrations.google_adk import to_messages

    probe = Probe()

    class Gemini(BaseLlm):
        """Named as the page's model: the callback takes each request's model (``model=None``)."""

        model: str = "gemini-2.5-flash"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            step = probe(to_messages(llm_request.contents))
            if isinstance(step, str):
                part = types.Part(text=step)
            else:
                part = types.Part(function_call=types.FunctionCall(name=step[0], args=step[1], id=step[2]))
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    def drive(namespace: dict[str, Any]) -> None:
        runner = namespace["runner"]

        async def chat() -> None:
            session = await runner.session_service.create_session(app_name="support", user_id="u1")
            for text in questions():
                message = types.Content(role="user", parts=[types.Part(text=text)])
                async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
                    pass

        asyncio.run(chat())

    run_page("google-adk.md", {"model": Gemini(), "INSTRUCTIONS": INSTRUCTIONS, "read_log": read_log}, drive)
    probe.check()


@pytest.mark.slow
def test_agent_framework_page() -> None:
    needs("agent_framework")
    from agent_framework import BaseChatClient, ChatResponse, Content, FunctionInvocationLayer, Message, tool

    from ctxwin.integrations.agent_framework import to_messages

    probe = Probe()

    class Client(FunctionInvocationLayer[Any], BaseChatClient[Any]):
        async def _inner_get_response(  # type: ignore[override]
            self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
        ) -> ChatResponse[Any]:
            step = probe(to_messages(messages))
            if isinstance(step, str):
                return ChatResponse(messages=[Message(role="assistant", contents=[step])])
            call = Content.from_function_call(call_id=step[2], name=step[0], arguments=step[1])
            return ChatResponse(messages=[Message(role="assistant", contents=[call])])

    def drive(namespace: dict[str, Any]) -> None:
        async def chat() -> None:
            for text in questions():
                await namespace["agent"].run(text, session=namespace["session"])

        asyncio.run(chat())

    stand_ins = {"client": Client(), "INSTRUCTIONS": INSTRUCTIONS, "read_log": tool(read_log)}
    run_page("agent-framework.md", stand_ins, drive)
    probe.check()


@pytest.mark.slow
def test_llama_index_page() -> None:
    needs("llama_index")
    from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.memory import Memory
    from llama_index.core.tools import FunctionTool

    from ctxwin.integrations.llama_index import to_messages

    probe = Probe()

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        step = probe(to_messages(messages))
        if isinstance(step, str):
            return ChatMessage(role="assistant", content=step)
        return ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id=step[2], tool_name=step[0],
                                                                   tool_kwargs=step[1])])

    def drive(namespace: dict[str, Any]) -> None:
        memory = Memory.from_defaults(session_id="drive", token_limit=10_000_000)

        async def chat() -> None:
            for text in questions():
                await namespace["agent"].run(user_msg=text, memory=memory)

        asyncio.run(chat())

    base_llm = MockFunctionCallingLLM(response_generator=respond)
    run_page("llama-index.md", {"base_llm": base_llm, "INSTRUCTIONS": INSTRUCTIONS,
                                "read_log": FunctionTool.from_defaults(read_log)}, drive)
    probe.check()


@pytest.mark.slow
def test_litellm_page() -> None:
    """The hook the page builds fits a body (a proxy runs no tools: no recall tool there)."""
    needs("litellm")

    def drive(namespace: dict[str, Any]) -> None:
        body = {"model": "gpt-4o", "messages": [{"role": "system", "content": INSTRUCTIONS},
                                                {"role": "user", "content": "What failed?"}]}
        fitted = asyncio.run(namespace["hook"].async_pre_call_hook(None, None, body, "acompletion"))
        assert fitted["messages"] == body["messages"]

    run_page("litellm.md", {"my_summarizer": lambda messages: "summary"}, drive)


def test_every_stack_page_with_python_is_run_here() -> None:
    tested = {name.removeprefix("test_").removesuffix("_page").replace("_", "-") + ".md"
              for name in globals() if name.endswith("_page") and name.startswith("test_")}
    assert {page.name for page in PAGES.glob("*.md") if blocks(page.name)} == tested
