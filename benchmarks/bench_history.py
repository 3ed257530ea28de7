"""Speed of the history layer: the add_messages reducer and durable appends/reads of the persistent histories.

Appends are durable (fsync per JSONL append, synchronous=FULL per SQLite commit), so their figures measure the
storage's sync latency as much as ctxwin; run on the machine you deploy to.

``test_windowed_turn`` is one turn of a chat over a stored history of agent traces (the bench corpus's ``agent``
kind, as in ``bench_trim.py``): add one message, read the window of the last ``WINDOW_TOKENS`` tokens, with the
o200k per-message callable. ctxwin's ``WindowedHistory`` over its in-memory history against langchain_core's
``InMemoryChatMessageHistory`` read and passed to ``trim_messages`` every turn (what LangChain's docs do).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture
from side_by_side import o200k_callable, ours, theirs

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.history._codec import message_json
from ctxwin.history._identity import new_identity, seed
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.history._jsonl_format import header_line, message_lines, parse_history
from ctxwin.history._memory import InMemoryChatMessageHistory
from ctxwin.history._reducer import add_messages
from ctxwin.history._sqlite import SQLiteChatMessageHistory
from ctxwin.history._windowed import WindowedHistory
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


@pytest.mark.parametrize("messages", [2000, 20000])
def test_open_sqlite_history(benchmark: BenchmarkFixture, tmp_path: Path, messages: int) -> None:
    """Opening a stored history: the first connection, ``PRAGMA quick_check`` of the whole file and the ``-wal``
    check (issue 44), paid once per history object."""
    with SQLiteChatMessageHistory(tmp_path / "h.db", "s") as history:
        history.add_messages(conversation(messages))

    def open_history() -> None:
        SQLiteChatMessageHistory(tmp_path / "h.db", "s").close()

    benchmark(open_history)


def encode(messages: list[BaseMessage], identity: str) -> bytes:
    """The lines an append of ``messages`` to a new file writes: the header, then the records."""
    texts = [message_json(m, i).encode("utf-8") for i, m in enumerate(messages)]
    return header_line(identity) + message_lines(texts, first_seq=1, seed=seed(identity))


@pytest.mark.parametrize("lines", ["checked", "unchecked"])
def test_parse_2000_jsonl_lines(benchmark: BenchmarkFixture, lines: str) -> None:
    """What verifying each record's checksum (bound to the file's identity, issue 52) and sequence number (issue 44)
    costs a read, without the file's I/O: 2,000 records after their header, and as a file written before either."""
    data = encode(conversation(2000), new_identity())
    if lines == "unchecked":
        data = b"\n".join(line[: line.rindex(b', "seq"')] + b"}" for line in data.splitlines()[1:]) + b"\n"
    assert len(benchmark(parse_history, data, "h.jsonl")[0]) == 2000


def test_encode_2000_jsonl_lines(benchmark: BenchmarkFixture) -> None:
    """Writing the records with their sequence numbers and checksums (the part of an append that is not I/O)."""
    messages = conversation(2000)
    benchmark(encode, messages, new_identity())


WINDOW_TOKENS = 32_000


@pytest.mark.parametrize("size", [1_000, 10_000, 100_000])
@pytest.mark.parametrize("library", ["ctxwin", "langchain"])
def test_windowed_turn(benchmark: BenchmarkFixture, library: str, size: int) -> None:
    turn = itertools.count()
    if library == "langchain":
        if size == 100_000:
            pytest.skip("langchain_core trims the whole history every turn: its 10,000 row compares")
        from langchain_core.chat_history import InMemoryChatMessageHistory as LCHistory
        from langchain_core.messages import HumanMessage as LCHuman
        from langchain_core.messages import trim_messages as lc_trim

        stored = LCHistory()
        stored.add_messages(theirs("agent", size))

        def read() -> list[Any]:
            return list(lc_trim(stored.messages, max_tokens=WINDOW_TOKENS, token_counter=o200k_callable))

        def one_turn() -> list[Any]:
            stored.add_message(LCHuman(f"one more question, number {next(turn)}"))
            return read()

    else:
        window = WindowedHistory(
            InMemoryChatMessageHistory(ours("agent", size)), max_tokens=WINDOW_TOKENS, counter=o200k_callable
        )

        def read() -> list[Any]:
            return window.messages

        def one_turn() -> list[Any]:
            window.add_message(HumanMessage(f"one more question, number {next(turn)}"))
            return window.messages

    read()  # the window was read before: this is a turn of a running chat
    rounds = {"langchain": {1_000: 10, 10_000: 3}}.get(library, {}).get(size, 30)
    shown = benchmark.pedantic(one_turn, rounds=rounds, iterations=1)
    benchmark.extra_info.update(window=len(shown), total=size)
