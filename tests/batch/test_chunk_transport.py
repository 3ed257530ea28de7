"""How a chunk of conversations travels to a worker: each item pickled on its own, the chunk as it is when an item
cannot be pickled; the worker reads values equal to the caller's, of the same types."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import pytest
from batch_support import conversations
from hypothesis import given
from hypothesis import strategies as st

from ctxwin.batch import fit_many
from ctxwin.batch._chunks import Chunk, read, written
from ctxwin.messages import HumanMessage

FIT = {"model": "gpt-4o-mini", "context_window": 600, "reserve_output": 100}

# What JSON gives and more: tuples, bytes and buffers, floats' edge values, lone surrogates, big ints, subclasses.
PLAIN = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**100), max_value=2**100)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(max_size=20)
    | st.binary(max_size=20).map(bytearray)
    | st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3).map(OrderedDict),
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


def same(left: Any, right: Any) -> bool:
    """Equal and of exactly the same types all the way down (``1 == 1.0 == True`` would not do)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):  # OrderedDict included
        return list(left) == list(right) and all(same(left[k], right[k]) for k in left)
    if isinstance(left, (list, tuple)):
        return len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    return bool(left == right)


@given(st.lists(PLAIN, max_size=6))
def test_items_are_pickled_one_by_one_and_read_back_the_same(items: list[Any]) -> None:
    chunk: Chunk = list(enumerate(items, start=7))
    travelling = written(chunk)
    assert isinstance(travelling, tuple) and len(travelling[1]) == len(items)  # one pickle per item
    assert same(read(travelling), chunk)


def test_a_message_object_travels_as_itself() -> None:
    chunk: Chunk = [(0, [HumanMessage("hi", id="m1")])]
    assert read(written(chunk)) == chunk


def messages() -> Iterator[dict[str, str]]:
    yield {"role": "user", "content": "from a generator"}


def test_a_chunk_with_an_item_that_cannot_be_pickled_travels_as_it_is() -> None:
    deep: Any = "leaf"
    for _ in range(5_000):
        deep = [deep]
    for odd in (messages(), deep):
        chunk: Chunk = [(0, [{"role": "user", "content": "plain"}]), (1, odd)]
        assert written(chunk) is chunk


@pytest.mark.slow
def test_in_a_pool_every_kind_of_item_gets_the_loops_result() -> None:
    plain = [c for c in conversations(24, seed=11) if isinstance(c, list)]
    # Chunks of 3: plain data, message objects, tuple pairs, buffers, and a generator (fitted in this process).
    def items() -> list[Any]:  # afresh for each run: a generator is read once
        return [
            [HumanMessage(f"question {i}")] if i % 5 == 1 else [("user", "a tuple pair")] if i % 5 == 2
            else [{"role": "user", "content": bytearray(b"a buffer")}] if i % 5 == 3 else messages() if i == 4 else c
            for i, c in enumerate(plain)
        ]

    expected = list(fit_many(items(), workers=1, **FIT))
    results = list(fit_many(items(), workers=2, chunksize=3, **FIT))
    assert [r.index for r in results] == list(range(len(plain)))
    assert [(r.messages, r.summary, r.error) for r in results] == [(r.messages, r.summary, r.error) for r in expected]
