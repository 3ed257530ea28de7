"""The count cache's recall by identity: a message noted before is recalled while it is written as noted, and only
then, whether the chunk it is recalled in is checked in one piece (nothing changed) or message by message; with
either writer (C, and the pure-Python one a machine without a C compiler uses)."""

import gc
import marshal
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage
from ctxwin.messages._writer import C_WRITER, PY_WRITER, Writer
from ctxwin.trim._count_cache import CountCache
from ctxwin.trim._measure import AdditiveMeasure

WRITERS = [pytest.param(PY_WRITER, id="python")] + ([pytest.param(C_WRITER, id="c")] if C_WRITER else [])


def history(size: int) -> list[BaseMessage]:
    """Messages with every kind of field a change can hide in: list content, numbers, dicts of several keys, tool
    calls; every third one a HumanMessage with string content."""
    return [
        HumanMessage(f"question {i}", additional_kwargs={"n": 1, "a": "x", "b": "y"})
        if i % 3 == 0
        else AIMessage(
            [{"type": "text", "text": f"answer {i}"}],
            additional_kwargs={"n": 1, "a": "x", "b": "y"},
            tool_calls=[{"name": "f", "args": {"q": i}, "id": f"c{i}"}],
        )
        for i in range(size)
    ]


def reassign_content(m: BaseMessage) -> None:
    m.content = m.content + "!" if isinstance(m.content, str) else [*m.content, "!"]


def change_list_item(m: BaseMessage) -> None:
    if isinstance(m.content, list):
        m.content[0]["text"] += "!"  # type: ignore[index]
    else:
        m.additional_kwargs["a"] = "z"


def add_dict_key(m: BaseMessage) -> None:
    m.additional_kwargs["added"] = "v"


def one_to_float(m: BaseMessage) -> None:
    m.additional_kwargs["n"] = 1.0  # equal to 1, written differently, counted differently by a JSON counter


def one_to_true(m: BaseMessage) -> None:
    m.additional_kwargs["n"] = True


def reorder_keys(m: BaseMessage) -> None:
    m.additional_kwargs["a"] = m.additional_kwargs.pop("a")  # equal dict, other order: another serialization


def grow_nested_args(m: BaseMessage) -> None:
    if isinstance(m, AIMessage):
        m.tool_calls[0]["args"]["more"] = "y"
    else:
        m.additional_kwargs["b"] += "y"


def make_unwritable(m: BaseMessage) -> None:
    m.additional_kwargs["object"] = object()  # marshal cannot write it


MUTATIONS: list[Callable[[BaseMessage], None]] = [
    reassign_content,
    change_list_item,
    add_dict_key,
    one_to_float,
    one_to_true,
    reorder_keys,
    grow_nested_args,
    make_unwritable,
]


def noted(messages: list[BaseMessage], writer: Writer) -> CountCache:
    """A cache that counted ``messages``, message ``i`` as ``i``."""
    cache = CountCache(writer=writer)
    found, notes = cache.lookup(messages)
    assert found == [None] * len(messages)
    cache.store(messages, notes, list(range(len(messages))))
    return cache


@pytest.mark.parametrize("writer", WRITERS)
@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 40),
    changes=st.dictionaries(st.integers(0, 39), st.sampled_from(MUTATIONS), max_size=4),
    appended=st.integers(0, 3),
)
def test_recall_gives_exactly_the_unchanged_messages_their_counts(
    writer: Writer, size: int, changes: dict[int, Callable[[BaseMessage], None]], appended: int
) -> None:
    messages = history(size)
    cache = noted(messages, writer)
    assert cache.recall(messages) == list(range(size))  # nothing changed: the chunk checked in one piece
    changed = {i for i in changes if i < size}
    for i in changed:
        changes[i](messages[i])
    grown = [*messages, *(HumanMessage(f"new {k}") for k in range(appended))]
    expected = [None if i in changed else i for i in range(size)] + [None] * appended
    assert cache.recall(grown) == expected


class LoudMessage(HumanMessage):
    """Fields as a HumanMessage's, written the same: only its class tells it apart (a counter may count it
    otherwise)."""


@pytest.mark.parametrize("writer", WRITERS)
def test_an_in_place_change_back_is_recalled_again_and_a_repeated_message_twice(writer: Writer) -> None:
    messages = history(6)
    cache = noted(messages, writer)
    messages[4].additional_kwargs["n"] = 2
    assert cache.recall(messages) == [0, 1, 2, 3, None, 5]
    messages[4].additional_kwargs["n"] = 1
    assert cache.recall([*messages, messages[2]]) == [0, 1, 2, 3, 4, 5, 2]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_message_whose_class_changed_is_not_recalled(writer: Writer) -> None:
    messages = history(6)
    cache = noted(messages, writer)
    messages[3].__class__ = LoudMessage  # same fields, same serialization
    assert cache.recall(messages) == [0, 1, 2, None, 4, 5]


def deepest_written(levels_from: int = 2100) -> int:
    """The deepest nesting (``history_storage``-style alternating lists and dicts) marshal writes on its own."""
    for levels in range(levels_from, 0, -1):
        value: Any = "leaf"
        for level in range(levels):
            value = {"k": value} if level % 2 else [value]
        try:
            marshal.dumps(((), value), 2)  # a tuple of fields around it, as a message is written
        except ValueError:
            continue
        return levels
    raise AssertionError("marshal wrote nothing nested")


@pytest.mark.parametrize("writer", WRITERS)
def test_a_message_nested_as_deep_as_marshal_writes_is_recalled_when_a_chunk_of_them_cannot_be_written(
    writer: Writer,
) -> None:
    """The Python writer writes a chunk's messages in one list, one level deeper than each alone: at marshal's depth
    limit that fails, and each message is then checked on its own. The C writer writes that deep as well."""
    levels = deepest_written()
    deep = HumanMessage("deep")
    value: Any = "leaf"
    for level in range(levels - 1):  # the dict of additional_kwargs is one more level
        value = {"k": value} if level % 2 else [value]
    deep.additional_kwargs["deep"] = value
    messages = [HumanMessage("shallow"), deep]
    cache = noted(messages, writer)
    assert cache.recall(messages) == [0, 1]
    deep.additional_kwargs["other"] = 1
    assert cache.recall(messages) == [0, None]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_message_neither_writer_writes_is_keyed_by_repr_and_never_recalled_by_identity(writer: Writer) -> None:
    unwritable = HumanMessage("x", additional_kwargs={"v": object()})
    cache = CountCache(writer=writer)
    fine = HumanMessage("fine")
    assert cache.lookup([fine, unwritable])[0] == [None, None]
    cache.store([fine, unwritable], cache.content_keys([fine, unwritable]), [1, 2])
    assert cache.recall([unwritable]) == [None]  # a repr may hide a change: never recalled by identity
    assert cache.lookup([unwritable])[0] == [2]


@pytest.mark.parametrize("writer", WRITERS)
def test_the_cache_holds_every_class_it_keyed_so_no_other_class_takes_its_address(writer: Writer) -> None:
    gc.freeze()  # what is there now is set aside: the collection below reads only what this test made
    try:
        cache = CountCache(writer=writer)
        made = type("Made", (HumanMessage,), {})
        cls = weakref.ref(made)
        found, keys = cache.lookup([made("hello")])
        cache.store([made("hello")], keys, [5])
        del made, found, keys
        gc.collect()
    finally:
        gc.unfreeze()
    assert cls() is not None  # its address is in a key
    other = type("Made", (HumanMessage,), {})  # same name and fields, another class
    assert cache.lookup([other("hello")])[0] == [None]


def test_a_cold_trim_leaves_no_objects_for_the_garbage_collector() -> None:
    """Keys and notes are bytes and numbers: counting 3,000 messages adds a handful of tracked objects (the cache's
    dicts), not thousands, so a trim does not bring on full collections of the process."""
    messages = [HumanMessage(f"message {i}", id=f"h{i}") for i in range(3000)]
    counted = AdditiveMeasure(lambda ms: [len(m.text) for m in ms], counter=len, cache=CountCache())
    gc.freeze()  # what is there now is set aside: the collection below reads only what the trim made
    try:
        before = len(gc.get_objects())
        assert counted.cut_last(messages, 0, len(messages), [], 10**9) == 0  # all counted, all fit
        gc.collect()
        assert len(gc.get_objects()) - before < 100
    finally:
        gc.unfreeze()
