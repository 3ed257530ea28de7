"""A LlamaIndex FunctionAgent whose every LLM call fits gpt-4o's budget: ``ContextWindowLLM``.

Offline: LlamaIndex's ``MockFunctionCallingLLM`` (scripted) calls the tool once per user turn and then answers; the
agent's ``Memory`` keeps the whole history (ctxwin decides what is sent). Each LLM call prints what it was sent.
Run: ``python examples/llama_index_agent.py`` (needs ``ctxwin[llama-index]``).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

from agent_calls import BUDGET, MODEL, SYSTEM_PROMPT, TURNS, Calls, build_log
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool

from ctxwin.integrations.llama_index import ContextWindowLLM, to_messages

calls = Calls()


def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    tools = [t.metadata.to_openai_tool() for t in kwargs.get("tools") or []]
    calls.show(to_messages(messages), tools, [m.model_dump(mode="json") for m in messages])
    last = messages[-1]
    if last.role == "user":
        night = int((last.content or "").split()[-1].rstrip("?"))
        call = ToolCallBlock(tool_call_id=f"call_{night}", tool_name="build_log", tool_kwargs={"night": night})
        return ChatMessage(role="assistant", blocks=[call])
    return ChatMessage(role="assistant", content="Every step passed.")


def main() -> None:
    warnings.simplefilter("ignore", DeprecationWarning)  # LlamaIndex's workflows read pydantic's old attributes
    llm = ContextWindowLLM(MockFunctionCallingLLM(response_generator=respond), MODEL, context_window=BUDGET,
                           reserve_output=0)
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(build_log)], llm=llm, system_prompt=SYSTEM_PROMPT)
    memory = Memory.from_defaults(session_id="builds", token_limit=10_000_000)  # whole: ctxwin decides

    async def run() -> None:
        for night in range(TURNS):
            print(f"turn {night}")
            await agent.run(user_msg=f"Did the build pass on night {night}?", memory=memory)

    asyncio.run(run())
    print(f"the memory keeps all {len(memory.get_all())} messages; each call was fitted to {BUDGET}")


if __name__ == "__main__":
    main()
