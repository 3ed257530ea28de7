"""A Microsoft Agent Framework agent whose every model call fits gpt-4o's budget: ``CtxwinCompactionStrategy``.

Offline: a scripted chat client (with the framework's function-invocation loop) calls the tool once per user turn
and then answers; the agent's session keeps the whole history. Each model call prints what it was sent. Run:
``python examples/agent_framework_agent.py`` (needs ``ctxwin[agent-framework]``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from agent_calls import BUDGET, MODEL, SYSTEM_PROMPT, TURNS, Calls, build_log
from agent_framework import Agent, BaseChatClient, ChatResponse, Content, FunctionInvocationLayer, Message, tool

from ctxwin import SystemMessage
from ctxwin.integrations.agent_framework import CtxwinCompactionStrategy, to_messages

read_build_log = tool(build_log, name="read_build_log")


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    def __init__(self) -> None:
        super().__init__()
        self.calls = Calls()

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse[Any]:
        tools = [t.to_json_schema_spec() for t in options.get("tools") or []]
        raw = [(m.role, [c.to_dict() for c in m.contents]) for m in messages]
        self.calls.show([SystemMessage(options.get("instructions") or ""), *to_messages(messages)], tools, raw)
        last = messages[-1]
        if last.role == "user":
            night = int(last.text.split()[-1].rstrip("?"))
            call = Content.from_function_call(call_id=f"call_{night}", name="read_build_log",
                                              arguments={"night": night})
            return ChatResponse(messages=[Message(role="assistant", contents=[call])])
        return ChatResponse(messages=[Message(role="assistant", contents=["Every step passed."])])


def main() -> None:
    strategy = CtxwinCompactionStrategy(MODEL, instructions=SYSTEM_PROMPT, tools=[read_build_log],
                                        context_window=BUDGET, reserve_output=0)
    agent = Agent(client=ScriptedClient(), instructions=SYSTEM_PROMPT, tools=[read_build_log],
                  compaction_strategy=strategy)

    async def run() -> None:
        session = agent.create_session()
        for night in range(TURNS):
            print(f"turn {night}")
            await agent.run(f"Did the build pass on night {night}?", session=session)

    asyncio.run(run())
    print(f"each call was fitted to {BUDGET}; the session's history keeps every message")


if __name__ == "__main__":
    main()
