"""LangChain objects are read once and read again exactly when they changed: ``_Converted`` (``ctxwin.messages._forms``)
notes each object written as bytes (the count cache's writer, C or marshal) and gives back the ctxwin message read
before only while the object lives and is written as noted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import PrivateAttr

from ctxwin.messages._convert import read_messages
from ctxwin.messages._forms import _Converted
from ctxwin.messages._limits import MAX_NESTING_DEPTH
from ctxwin.messages._writer import C_WRITER, PY_WRITER, Writer

lc = pytest.importorskip("langchain_core.messages")

WRITERS = [pytest.param(PY_WRITER, id="python")] + ([pytest.param(C_WRITER, id="c")] if C_WRITER else [])


def history(size: int) -> list[Any]:
    """LangChain messages with every kind of field a change can hide in: list content, numbers, dicts of several
    keys, tool calls, usage metadata, pydantic extras; every third one a HumanMessage with string content."""
    return [
        lc.HumanMessage(f"question {i}", additional_kwargs={"n": 1, "a": "x", "b": "y"}, extra_field=[1, 2])
        if i % 3 == 0
        else lc.AIMessage(
            [{"type": "text", "text": f"answer {i}"}, {"type": "text", "text": "more"}],
            additional_kwargs={"n": 1, "a": "x", "b": "y"},
            tool_calls=[{"name": "f", "args": {"q": i, "deep": [{"k": [1, 2]}]}, "id": f"c{i}"}],
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        )
        for i in range(size)
    ]


def reassign_content(m: Any) -> None:
    m.content = m.content + "!" if isinstance(m.content, str) else [*m.content, "!"]


def change_list_item(m: Any) -> None:
    if isinstance(m.content, list):
        m.content[0]["text"] += "!"
    else:
        m.extra_field[0] = 7  # a pydantic extra's list, in place


def add_dict_key(m: Any) -> None:
    m.additional_kwargs["added"] = "v"


def shrink(m: Any) -> None:
    if isinstance(m.content, list):
        m.content.pop()
    else:
        del m.additional_kwargs["b"]


def one_to_float(m: Any) -> None:
    m.additional_kwargs["n"] = 1.0  # equal to 1, written differently, counted differently by a JSON counter


def one_to_true(m: Any) -> None:
    m.additional_kwargs["n"] = True


def deep_in_place(m: Any) -> None:
    if isinstance(m, lc.AIMessage):
        m.tool_calls[0]["args"]["deep"][0]["k"].append(3)  # a list in a dict in a list in a dict in a list
    else:
        m.extra_field.append(3)


def reassign_extra(m: Any) -> None:
    if isinstance(m, lc.AIMessage):
        m.usage_metadata["output_tokens"] = 5
    else:
        m.extra_field = "replaced"


def make_unwritable(m: Any) -> None:
    m.additional_kwargs["object"] = object()  # neither writer writes it: read again every time from now on


MUTATIONS: list[Callable[[Any], None]] = [
    reassign_content,
    change_list_item,
    add_dict_key,
    shrink,
    one_to_float,
    one_to_true,
    deep_in_place,
    reassign_extra,
    make_unwritable,
]


@pytest.mark.parametrize("writer", WRITERS)
@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(1, 30),
    changes=st.dictionaries(st.integers(0, 29), st.sampled_from(MUTATIONS), max_size=4),
    appended=st.integers(0, 3),
)
def test_exactly_the_changed_objects_are_read_again(
    writer: Writer, size: int, changes: dict[int, Callable[[Any], None]], appended: int
) -> None:
    objects = history(size)
    converted = _Converted(writer)
    first = converted.read(objects)
    again = converted.read(objects)
    assert all(a is b for a, b in zip(first, again, strict=True))  # nothing changed: the same messages, none read
    changed = {i for i in changes if i < size}
    for i in changed:
        changes[i](objects[i])
    grown = [*objects, *(lc.HumanMessage(f"new {k}") for k in range(appended))]
    read = converted.read(grown)
    assert read == read_messages(grown)  # what a fresh reading gives, changed objects included
    assert [i for i in range(size) if read[i] is not first[i]] == sorted(changed)


@pytest.mark.parametrize("writer", WRITERS)
def test_an_equal_number_of_another_type_is_a_change(writer: Writer) -> None:
    """``1``, ``1.0`` and ``True`` are equal in Python, and a stamp built on ``==`` would miss the swap."""
    message = lc.HumanMessage("x", additional_kwargs={"n": 1})
    converted = _Converted(writer)
    seen = [converted.read([message])[0]]
    for value in (1.0, True, 1):
        message.additional_kwargs["n"] = value
        (read,) = converted.read([message])
        assert read is not seen[-1] and type(read.additional_kwargs["n"]) is type(value)
        seen.append(read)
    assert converted.read([message])[0] is seen[-1]


@pytest.mark.parametrize("writer", WRITERS)
def test_values_beyond_json_are_noted_and_what_cannot_be_written_is_read_every_time(writer: Writer) -> None:
    beyond = lc.ToolMessage("ok", tool_call_id="c1", artifact={"rows": ([1, 2], b"raw", frozenset({3}), 1 + 2j)})
    opaque = lc.ToolMessage("ok", tool_call_id="c2", artifact=object())
    converted = _Converted(writer)
    first = converted.read([beyond, opaque])
    again = converted.read([beyond, opaque])
    assert again[0] is first[0] and again[1] is not first[1]  # an arbitrary object could change unseen
    beyond.artifact["rows"][0].append(3)  # a list inside a tuple, in place
    assert converted.read([beyond])[0] is not first[0]


def nested(levels: int, leaf: Any) -> Any:
    value = leaf
    for level in range(levels):
        value = {"k": value} if level % 2 else [value]
    return value


@pytest.mark.parametrize("writer", WRITERS)
def test_a_change_at_the_bottom_of_the_deepest_nesting_read_shows(writer: Writer) -> None:
    """Messages nest at most ``MAX_NESTING_DEPTH`` levels, far within what both writers write: a change at the bottom
    is read again, and one that nests the object past the limit is refused naming it, not served from before."""
    deep = lc.HumanMessage("deep", additional_kwargs={"v": nested(MAX_NESTING_DEPTH - 4, ["leaf"])})
    converted = _Converted(writer)
    first = converted.read([deep])
    assert converted.read([deep])[0] is first[0]
    bottom = deep.additional_kwargs["v"]
    while bottom != ["leaf"]:
        bottom = bottom[0] if isinstance(bottom, list) else bottom["k"]
    bottom.append("grown")
    (grown,) = converted.read([deep])
    assert grown is not first[0] and grown == read_messages([deep])[0]
    bottom.append(nested(10, "too deep"))
    with pytest.raises(ValueError, match=r"^messages\[1\]: nested deeper than"):
        converted.read([lc.HumanMessage("shallow"), deep])


class Renamed(lc.HumanMessage):  # type: ignore[misc]
    """A HumanMessage under another class (a framework's own subclass)."""


class Annotated(lc.HumanMessage):  # type: ignore[misc]
    """A LangChain message subclass with a private attribute (what it was read from, say)."""

    _source: str = PrivateAttr(default="")


@pytest.mark.parametrize("writer", WRITERS)
def test_another_class_and_a_private_attribute_changed_are_changes(writer: Writer) -> None:
    plain, annotated = lc.HumanMessage("same"), Annotated("same")
    converted = _Converted(writer)
    first = converted.read([plain, annotated])
    assert converted.read([plain, annotated]) == first and converted.read([annotated])[0] is first[1]
    annotated._source = "elsewhere"
    assert converted.read([annotated])[0] is not first[1]
    plain.__class__ = Renamed  # its fields as they were: only the class tells it apart
    assert converted.read([plain])[0] is not first[0]
