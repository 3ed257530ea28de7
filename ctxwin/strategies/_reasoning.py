"""``clear_reasoning``: the reasoning of earlier turns, which providers ignore, goes before any turn does. The current
turn, the latest assistant message and pinned ones are never touched, so what a provider requires back (Anthropic's
signed thinking) goes back byte for byte. What each provider does with earlier reasoning: docs/interop.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxwin._plural import plural
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage
from ctxwin.strategies._base import BaseStrategy, Change, StepContext, StepKeeps, StepResult, last_user_index
from ctxwin.strategies._shrink import later_region

REASONING_BLOCKS = frozenset({"reasoning", "thinking", "redacted_thinking"})
REASONING_KEY = "reasoning_content"  # DeepSeek's (and vLLM's, Qwen's servers') field beside the content
_THINK = re.compile(r"\A\s*<think>.*?</think>\s*", re.DOTALL)


def _without_think(text: str) -> str:
    return _THINK.sub("", text, count=1) if "</think>" in text else text


def cleared(message: AIMessage, keep_content: bool) -> AIMessage | None:
    """``message`` without its reasoning (``reasoning_content`` only unless ``keep_content``); None when it has
    none."""
    content: Any = message.content
    if isinstance(content, str):
        content = _without_think(content)
    else:
        content = [b for b in content if not (isinstance(b, dict) and b.get("type") in REASONING_BLOCKS)]
        first = next((i for i, b in enumerate(content) if isinstance(b, str) or b.get("type") == "text"), None)
        if first is not None:
            block = content[first]
            text = block if isinstance(block, str) else block.get("text")
            if isinstance(text, str) and (stripped := _without_think(text)) != text:
                content[first] = stripped if isinstance(block, str) else {**block, "text": stripped}
    kwargs = message.additional_kwargs
    if REASONING_KEY in kwargs and not keep_content:
        kwargs = {key: value for key, value in kwargs.items() if key != REASONING_KEY}
    if content == message.content and kwargs is message.additional_kwargs:
        return None
    return message.model_copy(update={"content": content, "additional_kwargs": kwargs})


def _in_tool_turns(messages: list[BaseMessage]) -> Callable[[int], bool]:
    """Whether the assistant message at an index is in a turn that called tools, each turn looked at once and only
    when asked about: a plan asks only about the messages a later trim may keep. Each message is walked over once
    (an agent run is one long turn)."""
    turns: dict[int, bool] = {}  # a turn's first index -> whether it called tools
    starts: dict[int, int] = {}  # an index walked over -> its turn's first index

    def in_tool_turn(index: int) -> bool:
        walked = []
        first = index
        while first > 0 and first not in starts and not isinstance(messages[first - 1], HumanMessage):
            walked.append(first)
            first -= 1
        first = starts.get(first, first)
        starts.update(dict.fromkeys(walked, first))
        if first not in turns:
            end = first
            while end < len(messages) and not isinstance(messages[end], HumanMessage):
                end += 1
            turns[first] = any(
                isinstance(m, AIMessage) and bool(m.tool_calls or m.invalid_tool_calls) for m in messages[first:end]
            )
        return turns[first]

    return in_tool_turn


@dataclass
class ClearReasoning(BaseStrategy):
    """Reasoning the providers ignore (see the module) removed from the assistant messages of earlier turns."""

    name: str = field(default="clear_reasoning")

    @property
    def keeps(self) -> StepKeeps:
        return "all"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        last = last_user_index(messages)
        if not last:
            return StepResult(messages)
        latest = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None)
        pinned = set(context.pinned(messages))
        in_tool_turn = _in_tool_turns(messages)
        made: dict[int, AIMessage | None] = {}

        def wanted(index: int) -> bool:
            return (
                index < last and index != latest and index not in pinned and isinstance(messages[index], AIMessage)
            )

        def copy(index: int) -> AIMessage | None:
            if index not in made:
                message = messages[index]
                assert isinstance(message, AIMessage)  # wanted
                made[index] = cleared(message, keep_content=in_tool_turn(index))
            return made[index]

        # What a later trim drops whatever it holds is left as it is (all at once: every message counts cleared).
        region, _, left = later_region(messages, wanted, copy, context, verbatim=False)
        out = messages
        originals: list[BaseMessage] = []
        copies: list[BaseMessage] = []
        for index in range(last) if region is None else region:
            if not wanted(index) or (smaller := copy(index)) is None:
                continue
            if out is messages:
                out = list(messages)  # never write into the input
            out[index] = smaller
            originals.append(messages[index])
            copies.append(smaller)
        if not copies:
            return StepResult(messages)
        note = f"cleared the reasoning of {plural(len(copies), 'earlier assistant message')} (providers ignore it)"
        return StepResult(out, [note, *([left] if left else [])], [Change("truncated", originals, copies)])
