"""Fuzzing of the message layer's public entry points: every input gives a result or a one-line ValueError/TypeError,
never another exception. A malformed message is named by its index.

Example counts are kept small for ``make test``; ``CTXWIN_FUZZ_EXAMPLES=20000`` runs every test here with that many
examples (a few minutes per thousand examples per test on one core) before a release.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from trim_support import conversations, fuzz_settings

from ctxwin.counters import get_counter
from ctxwin.messages import (
    AIMessage,
    BaseMessage,
    convert_to_messages,
    convert_to_openai_messages,
    messages_from_dict,
    messages_to_dict,
)
from ctxwin.messages._limits import MAX_NESTING_DEPTH
from ctxwin.trim import filter_messages, merge_message_runs, trim_messages

WORDS = ["user", "assistant", "tool", "system", "developer", "human", "ai", "function", "remove", "chat", "text",
         "image_url", "tool_use", "tool_result", "c1", "{", "[", '{"a": ', "\ud800", "", "AIMessageChunk"]  # fmt: skip
KEYS = ["type", "text", "role", "content", "id", "name", "input", "tool_use_id", "is_error", "function", "arguments",
        "image_url", "url", "index", "args", "data", "tool_calls", "tool_call_id"]  # fmt: skip
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 10**20)
    | st.floats()
    | st.text(max_size=6)
    | st.sampled_from(WORDS)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), inner),
    max_leaves=12,
)
FIELDS = ["role", "content", "tool_calls", "tool_call_id", "name", "id", "type", "data", "additional_kwargs",
          "response_metadata", "artifact", "status", "invalid_tool_calls", "usage_metadata"]  # fmt: skip
# Arguments a model may stream: cut-off JSON, a run of brackets, digits past Python's limit, surrogates.
arguments = st.one_of(
    st.builds(lambda v, cut: json.dumps(v)[:cut], values, st.integers(0, 60)),
    st.builds(lambda n: "[" * n, st.integers(1, 3 * MAX_NESTING_DEPTH)),
    st.just('{"n": ' + "7" * 5000 + "}"),
    st.sampled_from(['{"a": "\\ud800"}', '{"a": "\ud800"}', "null", "[]", '"text"', "{}"]),
)
openai_calls = st.lists(
    st.fixed_dictionaries(
        {"id": st.sampled_from(["c1", "c2", None, 3]), "type": st.just("function")},
        optional={
            "function": st.fixed_dictionaries(
                {"name": st.sampled_from(["f", None, 1])}, optional={"arguments": arguments | values}
            )
        },
    )
    | values,
    max_size=3,
)
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image_url", "image", "tool_use", "tool_result", "reasoning"]) | values},
    optional={key: st.text(max_size=8) | values for key in ("text", "input", "tool_use_id", "content", "id", "url")},
)
plausible = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool", "system", "developer", "ai", "function", "remove"]),
        "content": st.text(max_size=10) | st.lists(blocks | st.text(max_size=4), max_size=3) | values,
    },
    optional={
        "tool_call_id": st.sampled_from(["c1", "c2"]) | values,
        "name": st.text(max_size=4) | values,
        "id": st.sampled_from(["m1", "m2"]) | values,
        "tool_calls": openai_calls,
        "additional_kwargs": values,
        "status": st.sampled_from(["success", "error"]) | values,
        "artifact": values,
    },
)
message_dicts = plausible | st.dictionaries(st.sampled_from(FIELDS), values, max_size=6) | st.builds(
    lambda base, calls: {**base, "tool_calls": calls},
    st.fixed_dictionaries({"role": st.sampled_from(["assistant", "ai", "user"]), "content": values}),
    openai_calls,
)
others = message_dicts | values | st.tuples(values, values) | st.tuples(st.sampled_from(WORDS), values)
message_likes = plausible | others


def converted(items: list[Any]) -> list[BaseMessage] | None:
    """The messages, or None after checking that the error is one line naming the message at fault."""
    try:
        return convert_to_messages(items)
    except (ValueError, TypeError) as exc:
        text = str(exc)
        assert text.startswith("messages[") and "\n" not in text, text
        return None


@pytest.mark.slow
@fuzz_settings(150)
@given(st.lists(message_likes, max_size=3))
def test_convert_to_messages_gives_messages_or_names_the_bad_one(items: list[Any]) -> None:
    messages = converted(items)
    if messages is None:
        return
    assert all(isinstance(m, BaseMessage) for m in messages)
    for text_format in ("string", "block"):
        try:
            out = convert_to_openai_messages(messages, text_format=text_format)
        except ValueError as exc:  # only RemoveMessage has no OpenAI form
            assert str(exc).startswith("messages[") and "RemoveMessage" in str(exc)
        else:
            assert isinstance(out, list)
    assert messages_from_dict(messages_to_dict(messages)) == messages


@st.composite
def openai_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Valid OpenAI conversations whose tool-call arguments are anything a model may produce."""
    out: list[dict[str, Any]] = [{"role": "system", "content": draw(st.text(max_size=20))}]
    for turn in range(draw(st.integers(0, 3))):
        out.append({"role": "user", "content": draw(st.text(max_size=30))})
        ids = [f"call_{turn}_{k}" for k in range(draw(st.integers(0, 2)))]
        calls = [{"id": i, "type": "function", "function": {"name": "f", "arguments": draw(arguments)}} for i in ids]
        reply = {"role": "assistant", "content": draw(st.text(max_size=20))}
        out.append({**reply, "tool_calls": calls} if calls else reply)
        out += [{"role": "tool", "tool_call_id": i, "content": draw(st.text(max_size=30))} for i in ids]
    return out


@pytest.mark.slow
@fuzz_settings(150)
@given(openai_conversations())
def test_openai_round_trip_keeps_whatever_the_model_said(conversation: list[dict[str, Any]]) -> None:
    messages = convert_to_messages(conversation)
    assert convert_to_openai_messages(messages) == conversation
    for spec in ("approximate", "approximate:safe", "tiktoken:o200k_base"):
        counter = get_counter(spec)
        total = counter.count_messages(messages)
        assert total == sum(counter.count_message(m) for m in messages) + 3


trim_arguments = st.fixed_dictionaries(
    {"max_tokens": st.integers(-5, 400) | st.floats() | st.none() | st.booleans() | st.sampled_from(["10", 1e300])},
    optional={
        "strategy": st.sampled_from(["last", "first", "middle", None]),
        "allow_partial": st.booleans(),
        "include_system": st.booleans(),
        "start_on": st.sampled_from(["human", "ai", "tool", ["human", "ai"], "humna", 3, AIMessage]),
        "end_on": st.sampled_from(["human", "ai", "tool", ("system",), "", None]),
        "tool_pairs": st.sampled_from(["keep", "ignore", "drop"]),
        "text_splitter": st.sampled_from([None, list, str.split, 5]),
    },
)
counters = st.sampled_from(["approximate", "tiktoken:o200k_base", len, lambda m: len(m.text), "gpt-4o", "nope"])


@pytest.mark.slow
@fuzz_settings(100)
@given(conversations(max_size=10), trim_arguments, counters)
def test_trim_messages_gives_a_result_or_a_clean_error(
    messages: list[BaseMessage], args: dict[str, Any], counter: Any
) -> None:
    try:
        kept = trim_messages(messages, token_counter=counter, **args)
    except (ValueError, TypeError) as exc:
        assert "\n" not in str(exc)
        return
    assert all(isinstance(m, BaseMessage) for m in kept)


filter_arguments = st.fixed_dictionaries(
    {},
    optional={
        name: st.sampled_from([["h1", "a2"], ["t3"], "h1", 5, None, [None]])
        for name in ("include_names", "exclude_names", "include_ids", "exclude_ids")
    }
    | {
        "include_types": st.sampled_from([["human"], "ai", [AIMessage], ["humna"], 3]),
        "exclude_types": st.sampled_from([["tool"], ("system",), [None]]),
        "exclude_tool_calls": st.sampled_from([True, False, ["call_0"], "call_0", 7]),
    },
)


@pytest.mark.slow
@fuzz_settings(100)
@given(conversations(max_size=10), filter_arguments, st.sampled_from(["\n", "", 3, None]))
def test_filter_and_merge_give_a_result_or_a_clean_error(
    messages: list[BaseMessage], args: dict[str, Any], separator: Any
) -> None:
    for run in (
        lambda: filter_messages(messages, **args),
        lambda: merge_message_runs(messages, chunk_separator=separator),
        lambda: merge_message_runs(messages + messages[::-1]),
    ):
        try:
            result = run()
        except (ValueError, TypeError) as exc:
            assert "\n" not in str(exc)
        else:
            assert all(isinstance(m, BaseMessage) for m in result)
