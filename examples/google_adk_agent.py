"""A Google ADK agent whose every model call fits gpt-4o's budget: ``ContextWindowCallback``.

Offline: a scripted ``BaseLlm`` calls the tool once per user turn and then answers; ADK's in-memory session keeps
the whole history. Each model call prints what it was sent. Run: ``python examples/google_adk_agent.py`` (needs
``ctxwin[google-adk]``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from agent_calls import BUDGET, MODEL, SYSTEM_PROMPT, TURNS, Calls, build_log
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from ctxwin import SystemMessage
from ctxwin.integrations.google_adk import ContextWindowCallback, to_messages

calls = Calls()


class ScriptedLlm(BaseLlm):
    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        declarations = [d for tool in llm_request.config.tools or [] for d in tool.function_declarations or []]
        tools = [{"type": "function", "function": {"name": d.name, "description": d.description or "",
                                                   "parameters": d.parameters_json_schema or {}}}
                 for d in declarations]
        instruction = str(llm_request.config.system_instruction or "")
        raw = [c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents]
        calls.show([SystemMessage(instruction), *to_messages(llm_request.contents)], tools, raw)
        last = llm_request.contents[-1].parts[-1]
        if last.text is not None:
            night = int(last.text.split()[-1].rstrip("?"))
            call = types.FunctionCall(name="build_log", args={"night": night}, id=f"call_{night}")
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
        else:
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Every step passed.")]))


def main() -> None:
    agent = LlmAgent(name="builds", model=ScriptedLlm(), instruction=SYSTEM_PROMPT, tools=[build_log],
                     before_model_callback=ContextWindowCallback(MODEL, context_window=BUDGET, reserve_output=0))
    runner = InMemoryRunner(agent=agent, app_name="builds")
    session = asyncio.run(runner.session_service.create_session(app_name="builds", user_id="me"))
    for night in range(TURNS):
        print(f"turn {night}")
        question = types.Content(role="user", parts=[types.Part(text=f"Did the build pass on night {night}?")])
        list(runner.run(user_id="me", session_id=session.id, new_message=question))
    stored = asyncio.run(runner.session_service.get_session(app_name="builds", user_id="me", session_id=session.id))
    print(f"the session keeps all {len(stored.events) if stored else 0} events; each call was fitted to {BUDGET}")


if __name__ == "__main__":
    main()
