"""An OpenAI Agents SDK agent whose every model call fits gpt-4o's budget: ``ContextWindowFilter``.

Offline: the SDK's own ``ScriptedModel`` calls the tool once per user turn and then answers; the SDK ``Session``
keeps the whole history. Each model call prints what it was sent. Run: ``python examples/openai_agents_agent.py``
(needs ``ctxwin[openai-agents]``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_calls import BUDGET, MODEL, SYSTEM_PROMPT, TURNS, Calls, build_log
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.models.openai_responses import Converter
from agents.testing import ScriptedModel, assistant_message, function_call

from ctxwin import convert_to_messages
from ctxwin.integrations.openai_agents import ContextWindowFilter


class ShowingModel(ScriptedModel):
    """The SDK's scripted model, printing each call."""

    calls_shown = Calls()

    async def get_response(  # type: ignore[override]
        self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, output_schema: Any,
        handoffs: Any, tracing: Any, **kwargs: Any,
    ) -> Any:
        messages = convert_to_messages([{"role": "system", "content": system_instructions}, *input])
        self.calls_shown.show(messages, Converter.convert_tools(tools, handoffs).tools, input)
        return await super().get_response(system_instructions, input, model_settings, tools, output_schema,
                                          handoffs, tracing, **kwargs)


def main() -> None:
    set_tracing_disabled(True)
    steps: list[Any] = []
    for night in range(TURNS):
        steps.append([function_call("read_build_log", {"night": night}, call_id=f"call_{night}")])
        steps.append([assistant_message(f"Night {night}: every step passed.", item_id=f"answer_{night}")])
    agent = Agent(name="builds", instructions=SYSTEM_PROMPT, model=ShowingModel(steps),
                  tools=[function_tool(build_log, name_override="read_build_log")])
    run_config = RunConfig(call_model_input_filter=ContextWindowFilter(MODEL, context_window=BUDGET,
                                                                       reserve_output=0))
    session = SQLiteSession("builds")
    for night in range(TURNS):
        print(f"turn {night}")
        Runner.run_sync(agent, f"Did the build pass on night {night}?", session=session, run_config=run_config)
    kept = asyncio.run(session.get_items())
    print(f"the session keeps all {len(kept)} items; each call was fitted to {BUDGET}")


if __name__ == "__main__":
    main()
