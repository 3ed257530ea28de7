"""A LangChain v1 agent whose every model call fits gpt-4o's budget: ``ContextWindowMiddleware``.

Offline: the chat model is a small fake that calls the tool once per user turn and then answers; one tool output is
a 4,000-line build log (about 70,000 tokens). Each model call prints what it was sent, counted with gpt-4o's exact
counter (system prompt and tool definitions included). Run: ``python examples/langchain_agent.py`` (needs
``ctxwin[langchain]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from ctxwin import get_counter
from ctxwin.integrations.langchain import ContextWindowMiddleware

BUDGET = 4000  # tokens a request may use (a small window, to see the fitting at work)


@tool
def read_build_log(night: int) -> str:
    """Read the build log of a night."""
    lines = 4_000 if night == 3 else 40
    return "\n".join(f"[night {night} step {i}] compiling module_{i % 17}.c ... ok" for i in range(lines))


class FakeModel(BaseChatModel):
    """Calls ``read_build_log`` for each user question, then answers; prints what each call was sent."""

    @property
    def _llm_type(self) -> str:
        return "fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        tokens = get_counter("gpt-4o").count_messages(messages, tools=kwargs.get("tools"))
        print(f"  model call: {len(messages)} messages, {tokens} tokens (budget {BUDGET})")
        last = messages[-1]
        if isinstance(last, HumanMessage):
            night = int(last.text.split()[-1].rstrip("?"))
            call = {"name": "read_build_log", "args": {"night": night}, "id": f"call_{night}", "type": "tool_call"}
            reply = AIMessage("", tool_calls=[call])
        else:
            reply = AIMessage(f"The build log has {len(last.text.splitlines())} lines; every step passed.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def main() -> None:
    agent = create_agent(
        FakeModel(),
        [read_build_log],
        system_prompt="You are a build assistant. Read the logs before answering.",
        middleware=[ContextWindowMiddleware("gpt-4o", context_window=BUDGET, reserve_output=0)],
    )
    history: list[BaseMessage] = []
    for night in range(12):
        print(f"turn {night}")
        history = agent.invoke({"messages": [*history, HumanMessage(f"Did the build pass on night {night}?")]})[
            "messages"
        ]
    stored = get_counter("gpt-4o").count_messages(history)
    print(f"the agent's state keeps all {len(history)} messages ({stored} tokens); each call was fitted to {BUDGET}")


if __name__ == "__main__":
    main()
