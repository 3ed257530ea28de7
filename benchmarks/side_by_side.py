"""What the suites give both libraries: the bench corpus as ctxwin and as langchain_core messages, and one o200k
per-message callable, so ctxwin and langchain_core are timed on the same input with the same tokenizer.

Conversations are built once per process (``functools.cache``) and converted outside any timing. Needs the
``bench`` extra (langchain-core) besides the ``corpus`` extra.
"""

import functools
import json
from typing import Any

from conversations import generate
from langchain_core.messages import BaseMessage as LCBaseMessage
from langchain_core.messages import messages_from_dict

from ctxwin.counters._families.tiktoken_counter import load_encoding
from ctxwin.messages import BaseMessage, convert_to_messages, messages_to_dict

ENCODING = load_encoding("o200k_base")
SEED = 0  # every suite uses generate(kind, size, SEED)


def o200k_callable(message: LCBaseMessage) -> int:  # annotated so langchain_core sees a per-message counter
    """o200k tokens of one message of either library: its text, tool calls and tool call id, plus 3 framing."""
    content = message.content
    text = (
        content
        if isinstance(content, str)
        else "".join(b if isinstance(b, str) else b.get("text", "") for b in content)
    )
    for call in getattr(message, "tool_calls", None) or ():
        text += call["name"] + json.dumps(call["args"])
    text += getattr(message, "tool_call_id", "") or ""
    return len(ENCODING.encode_ordinary(text)) + 3


@functools.cache
def ours(kind: str, size: int) -> list[BaseMessage]:
    """The bench conversation as ctxwin messages."""
    return convert_to_messages(generate(kind, size, SEED))


@functools.cache
def theirs(kind: str, size: int) -> list[Any]:
    """The same conversation as langchain_core messages."""
    return list(messages_from_dict(messages_to_dict(ours(kind, size))))


@functools.cache
def o200k_total(kind: str, size: int) -> int:
    """The conversation's tokens under the o200k callable (each message once)."""
    return sum(map(o200k_callable, ours(kind, size)))


_WORDS = [
    "the", "a", "to", "of", "and", "in", "is", "it", "you", "that", "for", "on", "with", "as", "this", "be",
    "are", "was", "have", "not", "but", "what", "can", "all", "your", "model", "token", "budget", "window",
    "context", "message", "history", "planner", "summary", "tool", "call", "result", "search", "file", "answer",
]


@functools.cache
def chat_sized(size: int) -> list[BaseMessage]:
    """A conversation of ``size`` chat-sized messages (5 to 80 words; a question, a tool call, its result, an
    answer, repeated), where a counter's per-message cost and the engine's, not long texts, set the pace."""
    import random

    from ctxwin.messages import AIMessage, HumanMessage, ToolMessage

    rng = random.Random(SEED)

    def sentence(words: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."

    messages: list[BaseMessage] = []
    for i in range(size // 4):
        call = {"name": "search", "args": {"q": sentence(4)}, "id": f"c{i}"}
        messages += [
            HumanMessage(sentence(rng.randint(5, 40)), id=f"h{i}"),
            AIMessage("", tool_calls=[call], id=f"a{i}"),
            ToolMessage(sentence(rng.randint(10, 80)), tool_call_id=f"c{i}", id=f"t{i}"),
            AIMessage(sentence(rng.randint(10, 60)), id=f"b{i}"),
        ]
    return messages


@functools.cache
def chat_sized_theirs(size: int) -> list[Any]:
    """``chat_sized`` as langchain_core messages."""
    return list(messages_from_dict(messages_to_dict(chat_sized(size))))
