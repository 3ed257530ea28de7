"""A Pydantic AI agent whose every model request fits gpt-4o's budget: the ``ContextWindow`` capability.

Offline: a ``FunctionModel`` calls the tool once per user turn and then answers; the run's history is passed on to
the next run whole (the capability fits what is sent, not what is kept). Each request prints what it was sent.
Run: ``python examples/pydantic_ai_agent.py`` (needs ``ctxwin[pydantic-ai]``).
"""

from __future__ import annotations

from agent_calls import BUDGET, MODEL, SYSTEM_PROMPT, TURNS, Calls, build_log
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxwin import SystemMessage
from ctxwin.integrations.pydantic_ai import ContextWindow, to_messages

calls = Calls()


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                               "parameters": t.parameters_json_schema}} for t in info.function_tools]
    raw = [ModelMessagesTypeAdapter.dump_python([m], mode="json")[0] for m in messages]
    calls.show([SystemMessage(info.instructions or ""), *to_messages(messages)], tools, raw)
    last = messages[-1].parts[-1]
    if isinstance(last, UserPromptPart) and isinstance(last.content, str):
        night = int(last.content.split()[-1].rstrip("?"))
        return ModelResponse(parts=[ToolCallPart("read_build_log", {"night": night}, tool_call_id=f"call_{night}")])
    return ModelResponse(parts=[TextPart("Every step passed.")])


def main() -> None:
    agent: Agent[None, str] = Agent(FunctionModel(model), instructions=SYSTEM_PROMPT,
                                    capabilities=[ContextWindow(MODEL, context_window=BUDGET, reserve_output=0)])
    agent.tool_plain(name="read_build_log")(build_log)
    history: list[ModelMessage] | None = None
    for night in range(TURNS):
        print(f"turn {night}")
        history = agent.run_sync(f"Did the build pass on night {night}?", message_history=history).all_messages()
    print(f"the run's history keeps all {len(history or [])} messages; each request was fitted to {BUDGET}")


if __name__ == "__main__":
    main()
