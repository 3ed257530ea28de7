"""Checks every framework's agent tests make at the model boundary, on what the model was sent (read back into
ctxwin messages): within the budget by the model's exact counter, tool pairs whole, the newest user message
present, and between cuts each request starting with the previous one byte for byte."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from ctxwin import get_counter
from ctxwin.messages import BaseMessage, HumanMessage


def filler(seed: int, words: int) -> str:
    """Deterministic text dense with identifiers, about ``words`` words."""
    parts = ["E{0}", "module_{0}.py:{1}", "0x{0:04x}", "retry#{1}", "shard-{0}", "INC-{1}{0}", "ok", "timeout"]
    return " ".join(parts[(seed * 7 + i * 3) % len(parts)].format((seed + i) % 97, (seed * i) % 1009)
                    for i in range(words))


def tool_output(turn: int) -> str:
    """A tool output of 1,000 to about 3,000 tokens, every fifth one larger still."""
    lines = 60 + (turn * 37) % 120 + (200 if turn % 5 == 4 else 0)
    return "\n".join(f"[{turn:03d}:{i:04d}] {filler(turn * 1000 + i, 9)}" for i in range(lines))


def check_request(
    messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]], budget: int, newest_user: str, model: str
) -> None:
    """One request, as sent: within ``budget`` by ``model``'s counter (tools included), the newest user message
    (by its text) present, tool pairs whole."""
    assert get_counter(model).count_messages(list(messages), tools=list(tools) or None) <= budget
    assert any(isinstance(m, HumanMessage) and m.text == newest_user for m in messages), "the newest user message"
    check_pairs(messages)


def check_pairs(messages: Sequence[Any]) -> None:
    """Every tool result follows its call, and every call is answered by its results (ctxwin or LangChain
    messages: read by their ``type``)."""
    open_calls: set[str] = set()
    for message in messages:
        if message.type == "tool":
            assert message.tool_call_id in open_calls, f"orphan tool result {message.tool_call_id}"
            open_calls.discard(message.tool_call_id)
        else:
            assert not open_calls, f"unanswered tool calls {open_calls}"
            if message.type == "ai":
                open_calls = {call["id"] for call in message.tool_calls if call["id"]}
    assert not open_calls, f"unanswered tool calls {open_calls}"


def recording(fitter: Any) -> list[Any]:
    """The fitted calls an integration's ``ConversationFitter`` makes from now on, in order (for their cut
    flags)."""
    fitted: list[Any] = []
    afit, fit = fitter.afit, fitter.fit

    async def arecord(*args: Any, **kwargs: Any) -> Any:
        fitted.append(await afit(*args, **kwargs))
        return fitted[-1]

    def record(*args: Any, **kwargs: Any) -> Any:
        fitted.append(fit(*args, **kwargs))
        return fitted[-1]

    fitter.afit, fitter.fit = arecord, record
    return fitted


def cut_flags(fitted: Sequence[Any]) -> list[bool]:
    return [bool(f.plan.cache and f.plan.cache.cut) for f in fitted]


def as_bytes(items: Sequence[Any]) -> list[str]:
    return [json.dumps(item, sort_keys=True, default=repr) for item in items]


def check_prefixes(requests: Sequence[Sequence[Any]], cuts: Sequence[bool]) -> int:
    """Each request not marked as a cut starts with the previous request, byte for byte; the number of cuts."""
    assert len(requests) == len(cuts)
    for index, (before, after) in enumerate(itertools.pairwise(requests), start=1):
        if not cuts[index]:
            assert as_bytes(after[: len(before)]) == as_bytes(before), f"request {index} changed the prefix"
    return sum(cuts)
