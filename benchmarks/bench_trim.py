"""trim_messages: ctxwin against langchain_core, side by side, on mixed conversations of 100 to 100,000 messages.

Each case keeps about half the conversation (``max_tokens`` is half the conversation's count under that counter).
Counters: ``approx`` (each library's "approximate" shortcut), ``o200k`` (the same per-message o200k callable given to
both), ``o200k-native`` (ctxwin's ``tiktoken:o200k_base`` counter; langchain_core gets the callable, it has no such
counter). ``cold`` clears ctxwin's count cache before every round; ``warm`` re-trims after appending one new
message to a conversation trimmed before. ``floor`` is the time to run the o200k callable once over the kept
messages on one thread. Run: ``pytest benchmarks/bench_trim.py --benchmark-only``.
"""

import json
import random
from itertools import count
from typing import Any

import pytest

from ctxwin.counters.tiktoken_counter import load_encoding
from ctxwin.engine.token_cache import cache_for
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, messages_to_dict
from ctxwin.plugins import get_counter
from ctxwin.trim import trim_messages

lc_messages = pytest.importorskip("langchain_core.messages")
LCBaseMessage = lc_messages.BaseMessage
lc_utils = pytest.importorskip("langchain_core.messages.utils")
ENCODING = load_encoding("o200k_base")
SIZES = [100, 1_000, 10_000, 100_000]
WORDS = [
    "the",
    "model",
    "reads",
    "every",
    "token",
    "of",
    "the",
    "prompt",
    "so",
    "trimming",
    "must",
    "be",
    "exact",
    "and",
    "fast",
    "while",
    "keeping",
    "tool",
    "calls",
    "with",
    "their",
    "results",
    "budget",
    "window",
    "context",
    "summary",
    "数据",
    "模型",
    "上下文",
    "résumé",
    "naïve",
    '{"key":',
    "[1,",
    "2,",
    "3]}",
    "def",
    "f(x):",
    "return",
    "x",
    "*",
    "2",
    "SELECT",
    "id",
    "FROM",
    "users",
    "WHERE",
    "active",
    "=",
    "1;",
]


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


def _text(rng: random.Random, low: int, high: int) -> str:
    lines = [" ".join(rng.choices(WORDS, k=rng.randint(4, 16))) for _ in range(rng.randint(low, high))]
    return "\n".join(lines)


def conversation(size: int, seed: int = 0) -> list[BaseMessage]:
    """A mixed conversation: system prompt, questions, answers, tool calls with results (about 70 tokens each)."""
    rng = random.Random(seed)
    messages: list[BaseMessage] = [SystemMessage(_text(rng, 2, 4))]
    calls = count()
    while len(messages) < size:
        messages.append(HumanMessage(_text(rng, 1, 3)))
        if rng.random() < 0.3:
            ids = [f"call_{next(calls)}" for _ in range(rng.randint(1, 2))]
            tool_calls = [{"name": "search", "args": {"q": _text(rng, 1, 1)}, "id": i} for i in ids]
            messages.append(AIMessage("", tool_calls=tool_calls))
            messages += [ToolMessage(_text(rng, 2, 6), tool_call_id=i) for i in ids]
        messages.append(AIMessage(_text(rng, 1, 6)))
    return messages[:size]


_CONVERSATIONS: dict[int, tuple[list[BaseMessage], list[Any]]] = {}


def conversations(size: int) -> tuple[list[BaseMessage], list[Any]]:
    """The ctxwin conversation of ``size`` messages and the same conversation as langchain_core messages."""
    if size not in _CONVERSATIONS:
        ours = conversation(size)
        _CONVERSATIONS[size] = (ours, lc_messages.messages_from_dict(messages_to_dict(ours)))
    return _CONVERSATIONS[size]


def counter_for(library: str, kind: str) -> Any:
    if kind == "approx":
        return "approximate" if library == "langchain" else get_counter("approximate")
    if kind == "o200k-native" and library == "ctxwin":
        return get_counter("tiktoken:o200k_base")
    return o200k_callable


def budget(size: int, kind: str) -> int:
    ours, theirs = conversations(size)
    if kind == "approx":
        return lc_utils.count_tokens_approximately(theirs) // 2
    return sum(map(o200k_callable, ours)) // 2


def rounds_for(library: str, size: int) -> int:
    if library == "langchain":
        return {100: 20, 1_000: 5, 10_000: 2}.get(size, 1)
    return {100: 50, 1_000: 20, 10_000: 5}.get(size, 2)


def clear_cache(counter: Any) -> None:
    cache = cache_for(counter) if not isinstance(counter, str) else None
    if cache is not None:
        cache.clear()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", ["cold", "warm"])
@pytest.mark.parametrize("kind", ["approx", "o200k", "o200k-native"])
@pytest.mark.parametrize("library", ["ctxwin", "langchain"])
def test_trim(benchmark: Any, library: str, kind: str, mode: str, size: int) -> None:
    if library == "langchain" and kind == "o200k-native":
        pytest.skip("langchain_core has no native o200k counter; its o200k runs use the callable")
    ours, theirs = conversations(size)
    messages = theirs if library == "langchain" else ours
    counter = counter_for(library, kind)
    limit = budget(size, kind)
    trim = lc_messages.trim_messages if library == "langchain" else trim_messages
    fresh = count()

    def grown() -> tuple[tuple[list[Any]], dict[str, Any]]:
        new_cls = lc_messages.HumanMessage if library == "langchain" else HumanMessage
        return ([*messages, new_cls(f"one more question, number {next(fresh)}")],), {}

    if mode == "cold":

        def setup() -> tuple[tuple[list[Any]], dict[str, Any]]:
            clear_cache(counter)
            return (messages,), {}

    else:
        trim(messages, max_tokens=limit, token_counter=counter)  # the conversation was trimmed before
        setup = grown

    def run(msgs: list[Any]) -> list[Any]:
        return trim(msgs, max_tokens=limit, token_counter=counter)

    result = benchmark.pedantic(run, setup=setup, rounds=rounds_for(library, size), iterations=1)
    benchmark.extra_info.update(kept=len(result), total=len(messages), max_tokens=limit)


@pytest.mark.parametrize("size", SIZES)
def test_floor(benchmark: Any, size: int) -> None:
    """Tokenizing the kept messages once with the o200k callable, on one thread."""
    ours, _ = conversations(size)
    kept = trim_messages(ours, max_tokens=budget(size, "o200k"), token_counter=o200k_callable, tool_pairs="ignore")
    benchmark.pedantic(lambda: sum(map(o200k_callable, kept)), rounds=rounds_for("ctxwin", size), iterations=1)
    benchmark.extra_info.update(kept=len(kept), total=len(ours))


@pytest.mark.parametrize("size", SIZES[:3])
def test_same_output_as_langchain(size: int) -> None:
    """Not timed: with tool_pairs="ignore" (LangChain's behaviour) the kept messages are langchain_core's."""
    ours, theirs = conversations(size)
    limit = budget(size, "o200k")
    expected = lc_messages.trim_messages(theirs, max_tokens=limit, token_counter=o200k_callable)
    result = trim_messages(ours, max_tokens=limit, token_counter=o200k_callable, tool_pairs="ignore")
    assert messages_to_dict(result) == messages_to_dict(
        [ours[len(ours) - len(expected) + i] for i in range(len(expected))]
    )
