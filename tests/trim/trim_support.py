"""Shared pieces for the trim tests: real-tokenizer counters usable by both ctxwin and LangChain, and hypothesis
strategies for random conversations built from one description so both libraries get the same messages."""

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from langchain_core import messages as lc
from langchain_core.messages import BaseMessage as LCBaseMessage

from ctxwin.counters._families.tiktoken_counter import TiktokenCounter, load_encoding
from ctxwin.messages import AIMessage, BaseMessage, ToolMessage, messages_from_dict, messages_to_dict

ENCODING = load_encoding("o200k_base")
O200K = TiktokenCounter("o200k_base")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif block.get("type") == "text":
            parts.append(block["text"])
        else:
            parts.append(json.dumps(block, sort_keys=True))
    return "\n".join(parts)


def o200k_tokens(message: Any) -> int:
    """o200k tokens of a message of either library: text, tool calls, tool call id, plus 3 for framing."""
    text = _text_of(message.content)
    for call in getattr(message, "tool_calls", None) or []:
        text += call["name"] + json.dumps(call["args"], sort_keys=True)
    text += getattr(message, "tool_call_id", "") or ""
    return len(ENCODING.encode_ordinary(text)) + 3


def ctxwin_counter(message: BaseMessage) -> int:
    return o200k_tokens(message)


def langchain_counter(message: LCBaseMessage) -> int:
    return o200k_tokens(message)


def to_langchain(messages: list[BaseMessage]) -> list[LCBaseMessage]:
    return lc.messages_from_dict(messages_to_dict(messages))


def from_langchain(messages: list[LCBaseMessage]) -> list[BaseMessage]:
    return messages_from_dict(lc.messages_to_dict(messages))


_WORDS = ["the", "model", "token", "budget", "trim", "fox", "数据", "résumé", '{"k": 1}', "def f():", "42", "\t"]
lines = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8).map(" ".join)
texts = st.lists(lines, min_size=0, max_size=5).map("\n".join)


@st.composite
def conversations(draw: st.DrawFn, *, max_size: int = 14, tools: bool = True) -> list[BaseMessage]:
    """A random conversation as ctxwin messages: an optional system message, human/ai turns, list content, and
    (with ``tools``) AIMessages with tool calls followed by their results, sometimes not all of them."""
    items: list[dict[str, Any]] = []
    if draw(st.booleans()):
        items.append({"type": "system", "data": {"content": draw(texts), "type": "system"}})
    calls = 0
    for index in range(draw(st.integers(0, max_size))):
        kind = draw(st.sampled_from(["human", "ai", "ai_list", "tool_turn"] if tools else ["human", "ai", "ai_list"]))
        if kind == "human":
            items.append({"type": "human", "data": {"content": draw(texts), "type": "human", "id": f"h{index}"}})
        elif kind == "ai":
            items.append({"type": "ai", "data": {"content": draw(texts), "type": "ai", "id": f"a{index}"}})
        elif kind == "ai_list":
            blocks = [{"type": "text", "text": draw(texts)} for _ in range(draw(st.integers(1, 3)))]
            items.append({"type": "ai", "data": {"content": blocks, "type": "ai", "id": f"l{index}"}})
        else:
            ids = [f"call_{calls + k}" for k in range(draw(st.integers(1, 3)))]
            calls += len(ids)
            tool_calls = [{"name": "lookup", "args": {"q": draw(lines)}, "id": i, "type": "tool_call"} for i in ids]
            items.append(
                {
                    "type": "ai",
                    "data": {"content": draw(texts), "type": "ai", "tool_calls": tool_calls, "id": f"t{index}"},
                }
            )
            answered = ids if draw(st.booleans()) else ids[: draw(st.integers(0, len(ids)))]
            for call_id in answered:
                items.append(
                    {"type": "tool", "data": {"content": draw(texts), "type": "tool", "tool_call_id": call_id}}
                )
    return messages_from_dict(items)


type_specs = st.sampled_from([None, "human", "ai", ["human", "ai"], "tool"])


def pairs_intact(result: list[BaseMessage], source: list[BaseMessage]) -> bool:
    """No kept result without its call, no kept call whose result exists in ``source`` but was dropped."""
    answered = {m.tool_call_id for m in source if isinstance(m, ToolMessage)}
    kept_results = {m.tool_call_id for m in result if isinstance(m, ToolMessage)}
    kept_calls = {c["id"] for m in result if isinstance(m, AIMessage) for c in m.tool_calls}
    called = {c["id"] for m in source if isinstance(m, AIMessage) for c in m.tool_calls}
    return kept_results & called <= kept_calls and kept_calls & answered <= kept_results


@st.composite
def trim_args(draw: st.DrawFn) -> dict[str, Any]:
    strategy = draw(st.sampled_from(["first", "last"]))
    args: dict[str, Any] = {
        "strategy": strategy,
        "max_tokens": draw(st.integers(0, 400)),
        "allow_partial": draw(st.booleans()),
        "end_on": draw(type_specs),
    }
    if strategy == "last":
        args["start_on"] = draw(type_specs)
        args["include_system"] = draw(st.booleans())
    return args


# Property tests that look for crashes run this many examples at least; CTXWIN_FUZZ_EXAMPLES raises every one of
# them for a longer run before a release (see docs/trim.md).
FUZZ_EXAMPLES = int(os.environ.get("CTXWIN_FUZZ_EXAMPLES") or 0)


def fuzz_settings(examples: int) -> settings:
    """Settings for a fuzz test: ``examples`` in the suite, more when CTXWIN_FUZZ_EXAMPLES asks for more."""
    return settings(
        max_examples=max(examples, FUZZ_EXAMPLES),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
