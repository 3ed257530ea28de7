"""Speed of the history layer: the add_messages reducer and durable appends/reads of the persistent histories.

Appends are durable (fsync per JSONL append, synchronous=FULL per SQLite commit), so their figures measure the
storage's sync latency as much as ctxwin; run on the machine you deploy to.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from ctxwin.history.base import BaseChatMessageHistory
from ctxwin.history.jsonl import FileChatMessageHistory
from ctxwin.history.reducer import add_messages
from ctxwin.history.sqlite import SQLiteChatMessageHistory
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage


def open_history(kind: str, directory: Path) -> BaseChatMessageHistory:
    if kind == "jsonl":
        return FileChatMessageHistory(directory / "h.jsonl")
    return SQLiteChatMessageHistory(directory / "h.db", "s")


def conversation(n: int) -> list[BaseMessage]:
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(f"message {i} " + "lorem ipsum " * 20, id=f"m{i}")
        for i in range(n)
    ]


@pytest.mark.parametrize("size", [100, 2000])
def test_reducer_append_one_to_state(benchmark: BenchmarkFixture, size: int) -> None:
    state = conversation(size)
    result = benchmark(add_messages, state, [AIMessage("new")])
    assert len(result) == size + 1


def test_reducer_replace_and_remove_in_2000(benchmark: BenchmarkFixture) -> None:
    from ctxwin.messages import RemoveMessage

    state = conversation(2000)
    right = [AIMessage("edited", id="m1000"), RemoveMessage(id="m10")]
    assert len(benchmark(add_messages, state, right)) == 1999


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_durable_append_one_message(benchmark: BenchmarkFixture, tmp_path: Path, kind: str) -> None:
    history = open_history(kind, tmp_path)
    counter = itertools.count()
    benchmark(lambda: history.add_message(HumanMessage(f"message {next(counter)} " + "lorem ipsum " * 20)))


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_read_2000_messages(benchmark: BenchmarkFixture, tmp_path: Path, kind: str) -> None:
    history = open_history(kind, tmp_path)
    history.add_messages(conversation(2000))
    assert len(benchmark(lambda: history.messages)) == 2000
