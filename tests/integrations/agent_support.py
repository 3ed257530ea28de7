"""What the agent tests share: a chat model that records every call and answers by a script, the tools, and the
checks every model call must pass (LangChain objects, within the budget by the model's exact counter, tool pairs
whole, never empty)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_checks import check_pairs
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from ctxwin import get_counter

MODEL = "gpt-4o"
SYSTEM_PROMPT = "You are a build assistant. Look things up with the tools before answering; cite the turn number."
BIG_TURN = 4  # the turn whose tool output is the 50k-token log
BIG_TOKENS = 50_000


@dataclass
class Call:
    """One model call: the messages and the tool definitions (as sent, OpenAI format) the model was given."""

    messages: list[BaseMessage]
    tools: list[dict[str, Any]]


class RecordingChatModel(BaseChatModel):
    """Answers a user message with a tool call and a tool result with text; with ``replies``, returns those in
    turn instead (a summarizer). Records what every call received."""

    calls: list[Call] = Field(default_factory=list)
    replies: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(Call(list(messages), list(kwargs.get("tools") or [])))
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        number = len(self.calls)
        if self.replies:
            return AIMessage(self.replies[(number - 1) % len(self.replies)])
        last = messages[-1]
        if isinstance(last, HumanMessage):
            turn = int(last.text.split()[1].rstrip(":"))
            call = {"name": "build_log", "args": {"turn": turn}, "id": f"call_{number}", "type": "tool_call"}
            return AIMessage("", tool_calls=[call], id=f"ai-{number}")
        return AIMessage(f"Turn answer {number}: " + filler(number, 60), id=f"ai-{number}")


def filler(seed: int, words: int) -> str:
    """Deterministic varied text of about ``words`` words."""
    vocabulary = ["compile", "linker", "cache", "module", "warning", "retry", "artifact", "shard", "timeout", "ok"]
    return " ".join(f"{vocabulary[(seed * 7 + i * 3) % len(vocabulary)]}{(seed + i) % 97}" for i in range(words))


def big_log() -> str:
    """A build log of at least BIG_TOKENS tokens for the model's counter."""
    return "\n".join(f"[{i:05d}] step {filler(i, 12)}" for i in range(1900))


@tool
def build_log(turn: int) -> str:
    """Read the build log of a turn."""
    return big_log() if turn == BIG_TURN else f"log of turn {turn}: " + filler(turn, 120)


TOOLS = [build_log]


def user_message(turn: int) -> HumanMessage:
    return HumanMessage(f"Turn {turn}: what failed? " + filler(turn + 1000, 80), id=f"user-{turn}")


def check_call(call: Call, budget: int, history: Sequence[BaseMessage], system: str | None = SYSTEM_PROMPT) -> None:
    """One model call: LangChain messages within ``budget`` by the model's counter (system message and tools
    included), the system prompt first, the newest user message of ``history`` present, tool pairs whole."""
    messages = call.messages
    assert all(isinstance(m, BaseMessage) for m in messages)
    assert call.tools, "the tools were sent"
    assert get_counter(MODEL).count_messages(messages, tools=call.tools) <= budget
    if system is not None:
        assert isinstance(messages[0], SystemMessage) and messages[0].text == system
    conversation = [m for m in messages if not isinstance(m, SystemMessage)]
    assert conversation, "never an empty history"
    newest_user = next(m for m in reversed(history) if isinstance(m, HumanMessage))
    assert any(m.id == newest_user.id for m in conversation)
    check_pairs(conversation)
