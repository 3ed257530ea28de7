"""WindowedHistory: keeps every message in a backing history and shows the recent window that fits.

The window is the last ``max_messages`` messages and/or the last messages within ``max_tokens`` (measured by the
trim engine, ``ctxwin.trim.trim_messages``, with ``strategy="last"``). One system message always leads the window:
the manager's ``system_prompt`` when set, otherwise (with ``include_system``) a system message stored first in the
history. ``max_messages`` counts that system message, as ``trim_messages(token_counter=len)`` would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from ctxwin.counters.base import TokenCounter
from ctxwin.history.base import BaseChatMessageHistory
from ctxwin.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

CounterLike = TokenCounter | str | Callable[[list[BaseMessage]], int] | Callable[[BaseMessage], int]


class WindowedHistory(BaseChatMessageHistory):
    """A view of ``history`` limited to a recent window; writes go to ``history`` unchanged.

    ``counter`` (needed with ``max_tokens``) is a TokenCounter, a spec for ``ctxwin.registry.get_counter`` such as
    ``"gpt-4o"`` or ``"approximate"``, or anything else ``trim_messages`` takes as ``token_counter``.
    ``tool_pairs="keep"`` never lets the window begin with (or hold) a ToolMessage whose tool call was cut;
    ``"ignore"`` cuts blindly, as LangChain does.
    """

    def __init__(
        self,
        history: BaseChatMessageHistory,
        *,
        max_messages: int | None = None,
        max_tokens: int | None = None,
        counter: CounterLike | None = None,
        include_system: bool = True,
        tool_pairs: Literal["keep", "ignore"] = "keep",
        system_prompt: str | SystemMessage | None = None,
    ) -> None:
        if not all(callable(getattr(history, name, None)) for name in ("add_messages", "clear")):
            raise TypeError(f"history must be a chat message history, got {type(history).__name__}")
        for name, limit in (("max_messages", max_messages), ("max_tokens", max_tokens)):
            if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {limit!r}")
        if (max_tokens is None) != (counter is None):
            raise ValueError("max_tokens and counter go together: a token budget needs a counter and vice versa")
        if tool_pairs not in ("keep", "ignore"):
            raise ValueError(f"tool_pairs must be 'keep' or 'ignore', got {tool_pairs!r}")
        if system_prompt is not None and not isinstance(system_prompt, (str, SystemMessage)):
            raise TypeError(f"system_prompt must be a string or a SystemMessage, got {type(system_prompt).__name__}")
        self.history = history
        self.max_messages = max_messages
        self.max_tokens = max_tokens
        self.counter = _resolve(counter)
        self.include_system = include_system
        self.tool_pairs = tool_pairs
        self.system_prompt = SystemMessage(system_prompt) if isinstance(system_prompt, str) else system_prompt

    @property
    def all_messages(self) -> list[BaseMessage]:
        """Everything stored in the backing history."""
        return self.history.messages

    @property
    def messages(self) -> list[BaseMessage]:
        """The window: the leading system message, then the most recent messages within the limits."""
        stored = self.history.messages
        head: list[BaseMessage] = []
        if self.system_prompt is not None:
            head = [self.system_prompt]
        elif self.include_system and stored and isinstance(stored[0], SystemMessage):
            head, stored = [stored[0]], stored[1:]
        body = stored
        if self.max_messages is not None:
            body = last_messages(body, self.max_messages - len(head), keep_tool_pairs=self.tool_pairs == "keep")
        if self.max_tokens is None:
            return head + body
        from ctxwin.trim import trim_messages  # lazily: the engine sits above the message model only

        return trim_messages(
            head + body,
            max_tokens=self.max_tokens,
            token_counter=self.counter,
            strategy="last",
            include_system=bool(head),
            tool_pairs=self.tool_pairs,
        )

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.history.add_messages(messages)

    def clear(self) -> None:
        self.history.clear()


def last_messages(messages: Sequence[BaseMessage], count: int, *, keep_tool_pairs: bool) -> list[BaseMessage]:
    """The last ``count`` messages; with ``keep_tool_pairs``, minus ToolMessages whose tool call was cut off."""
    if count <= 0:
        return []
    start = max(0, len(messages) - count)
    window = list(messages[start:])
    if not keep_tool_pairs:
        return window
    cut_calls = {
        call["id"]
        for m in messages[:start]
        if isinstance(m, AIMessage)
        for call in [*m.tool_calls, *m.invalid_tool_calls]
    }
    window = [m for m in window if not (isinstance(m, ToolMessage) and m.tool_call_id in cut_calls)]
    while window and isinstance(window[0], ToolMessage):  # an orphan result with no call anywhere before it
        window.pop(0)
    return window


def _resolve(counter: CounterLike | None) -> CounterLike | None:
    if isinstance(counter, str):
        from ctxwin.registry import get_counter  # lazily: plugins load on first use

        resolved: TokenCounter = get_counter(counter)
        return resolved
    if counter is not None and not (
        callable(counter) or hasattr(counter, "count_messages") or hasattr(counter, "get_num_tokens_from_messages")
    ):
        raise TypeError(
            f"counter must be a TokenCounter, a counter spec string or a token-counting callable, "
            f"got {type(counter).__name__}"
        )
    return counter
