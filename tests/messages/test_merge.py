"""merge_dicts / merge_lists / merge_content / merge_obj over many values: the same as merging them one after the
other, in linear time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessageChunk, merge_content, merge_dicts, merge_lists, tool_call_chunk
from ctxwin.messages._merge import merge_obj

scalars = st.none() | st.sampled_from(["", "a", "b", "lc_1", "l", "c_"]) | st.integers(-2, 2) | st.booleans()
indexes = st.none() | st.integers(0, 2) | st.sampled_from(["lc_0", "a", "l", "c_", [0], 1.0, True, float("nan")])
items = st.fixed_dictionaries(
    {},
    optional={
        "index": indexes,
        "id": st.none() | st.sampled_from(["", "x", "y", 3]),
        "type": st.sampled_from(["text", "tool_call_chunk"]),
        "text": scalars,
        "args": scalars,
    },
) | st.sampled_from(["s", "", "t"])
lists = st.lists(items, max_size=5)
dicts = st.recursive(
    st.dictionaries(st.sampled_from(["id", "index", "k", "created", "model_provider"]), scalars, max_size=4),
    lambda inner: st.dictionaries(st.sampled_from(["id", "index", "k", "d", "l"]), scalars | inner | lists, max_size=4),
    max_leaves=6,
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(merge: Callable[..., Any], values: list[Any], one_by_one: bool) -> tuple[str, str]:
    try:
        if not one_by_one:
            return "merged", repr(merge(*values))
        merged = values[0]
        for value in values[1:]:
            merged = merge(merged, value)
        return "merged", repr(merged)
    except (TypeError, ValueError) as exc:
        return "error", type(exc).__name__


@pytest.mark.slow
@SETTINGS
@given(st.sampled_from([merge_lists, merge_dicts, merge_content, merge_obj]), st.data())
def test_many_at_once_is_one_after_the_other(merge: Callable[..., Any], data: st.DataObject) -> None:
    values = {
        merge_lists: lists | st.none(),
        merge_dicts: dicts,
        merge_content: st.sampled_from(["", "a", "b\n"]) | lists,
        merge_obj: st.none() | scalars | dicts | lists,
    }[merge]
    drawn = data.draw(st.lists(values, min_size=1, max_size=5))
    assert outcome(merge, drawn, one_by_one=False) == outcome(merge, drawn, one_by_one=True)


def test_streamed_pieces_merge_in_linear_time() -> None:
    """A megabyte of argument pieces of one tool call, 20,000 distinct calls without an index, a megabyte of
    content pieces: merged one after the other, each piece copies (or scans) the growing result, which takes
    minutes at these sizes; merged at once, a fraction of a second."""
    first = tool_call_chunk(name="f", args='{"a": "', id="c", index=0)
    pieces = [[{"args": "0123456789", "index": 0}]] * 50_000
    (call,) = merge_lists([first], *pieces) or []
    assert call["args"] == '{"a": "' + "0123456789" * 50_000 and call["id"] == "c"
    calls = [tool_call_chunk(name="f", args="{}", id=f"call_{i}") for i in range(20_000)]
    assert merge_lists([], *([call] for call in calls)) == calls
    assert merge_content("", *(["0123456789"] * 100_000)) == "0123456789" * 100_000
    assert (AIMessageChunk("a") + [AIMessageChunk("b")] * 100_000).content == "a" + "b" * 100_000
