"""Anthropic cache_control breakpoints on a Messages request: where they go, at most four, nothing mutated."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, HumanMessage, SystemMessage
from ctxwin.messages._request_forms.anthropic import MAX_BREAKPOINTS, convert_to_anthropic, mark_cache_breakpoints


def markers(request: dict[str, Any]) -> int:
    return json.dumps(request).count('"cache_control"')


def a_request(turns: int, tools: bool, system: bool) -> dict[str, Any]:
    messages: list[Any] = [SystemMessage("You are terse.")] if system else []
    for t in range(turns):
        messages += [HumanMessage(f"question {t}"), AIMessage(f"answer {t}")]
    messages.append(HumanMessage("last question"))
    request = dict(convert_to_anthropic(messages))
    if tools:
        request["tools"] = [{"name": f"tool{i}", "input_schema": {"type": "object"}} for i in range(3)]
    return request


def test_tools_system_previous_and_last_message_are_marked() -> None:
    request = a_request(3, tools=True, system=True)
    before = copy.deepcopy(request)
    marked = mark_cache_breakpoints(request, (3, -1))
    assert request == before  # nothing mutated
    assert marked["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in marked["tools"][0]
    assert marked["system"][-1] == {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    assert marked["messages"][3]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert marked["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert markers(marked) == 4
    assert [m["role"] for m in marked["messages"]] == [m["role"] for m in request["messages"]]


@given(turns=st.integers(0, 6), tools=st.booleans(), system=st.booleans(),
       indexes=st.lists(st.integers(-1, 12), min_size=1, max_size=6))
def test_never_more_than_anthropics_limit_and_the_newest_kept(
    turns: int, tools: bool, system: bool, indexes: list[int]
) -> None:
    request = a_request(turns, tools, system)
    size = len(request["messages"])
    wanted = [i for i in indexes if i < size]
    if not wanted:
        return
    marked = mark_cache_breakpoints(request, wanted)
    assert markers(marked) <= MAX_BREAKPOINTS
    newest = max(i % size for i in wanted)
    assert "cache_control" in marked["messages"][newest]["content"][-1]


def test_a_ttl_is_passed_on() -> None:
    marked = mark_cache_breakpoints(a_request(1, tools=False, system=True), ttl="1h")
    assert marked["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_bad_requests_are_refused() -> None:
    with pytest.raises(ValueError, match="no messages"):
        mark_cache_breakpoints({"messages": []})
    with pytest.raises(ValueError, match="outside"):
        mark_cache_breakpoints(a_request(1, tools=False, system=False), (7,))


BLOCKS = st.sampled_from([
    {"type": "text", "text": "words"},
    {"type": "text", "text": ""},
    {"type": "text", "text": "marked by the caller", "cache_control": {"type": "ephemeral"}},
    {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
    {"type": "redacted_thinking", "data": "cmVk"},
    {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "out",
                                                               "cache_control": {"type": "ephemeral"}}]},
])


def marks_on(request: dict[str, Any]) -> list[dict[str, Any]]:
    system = request.get("system")
    blocks = [*(request.get("tools") or []), *(system if isinstance(system, list) else [])]
    for message in request["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            blocks += [block, *(block["content"] if isinstance(block.get("content"), list) else [])]
    return [block for block in blocks if "cache_control" in block]


@given(contents=st.lists(st.one_of(st.just(""), st.just("text"), st.lists(BLOCKS, max_size=3)), min_size=1,
                         max_size=6),
       tools=st.booleans(), system=st.booleans(), indexes=st.lists(st.integers(-1, 5), min_size=1, max_size=3))
def test_the_callers_marks_count_and_no_mark_lands_where_anthropic_refuses_it(
    contents: list[Any], tools: bool, system: bool, indexes: list[int]
) -> None:
    request: dict[str, Any] = {"messages": [{"role": ("user", "assistant")[i % 2], "content": content}
                                            for i, content in enumerate(contents)]}
    if tools:
        request["tools"] = [{"name": "t", "input_schema": {"type": "object"}}]
    if system:
        request["system"] = "You are terse."
    wanted = [i for i in indexes if i < len(contents)] or [-1]
    own = len(marks_on(request))
    marked = mark_cache_breakpoints(request, wanted)
    added = marks_on(marked)
    assert len(added) <= max(MAX_BREAKPOINTS, own)
    assert all(b.get("type") not in ("thinking", "redacted_thinking") for b in added)
    assert all(b.get("text") for b in added if b.get("type") == "text")
    if own < MAX_BREAKPOINTS:  # the newest wanted message, or the nearest block before it Anthropic takes a mark on
        newest = max(i % len(contents) for i in wanted)
        for message in reversed(marked["messages"][: newest + 1]):
            content = message["content"]
            eligible = [b for b in ([{"type": "text", "text": content}] if isinstance(content, str) else content)
                        if b.get("type") not in ("thinking", "redacted_thinking") and (b.get("type") != "text"
                                                                                        or b.get("text"))]
            if eligible:
                assert "cache_control" in eligible[-1]
                break
