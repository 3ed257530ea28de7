"""The interface every history shares, run against the in-memory, JSONL and SQLite histories."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage


def test_messages_round_trip_in_order_with_every_field(history: BaseChatMessageHistory) -> None:
    ai = AIMessage(
        [{"type": "text", "text": "calling"}],
        id="a1",
        tool_calls=[{"name": "search", "args": {"q": "héllo 世界"}, "id": "c1", "type": "tool_call"}],
        response_metadata={"model": "m"},
    )
    batch = [SystemMessage("sys"), HumanMessage("hi", name="ann"), ai, ToolMessage("res", tool_call_id="c1")]
    history.add_messages(batch)
    history.add_user_message("u")
    history.add_ai_message(AIMessage("done", id="a2"))
    assert history.messages == [*batch, HumanMessage("u"), AIMessage("done", id="a2")]
    assert "Human: u" in str(history)


def test_messages_is_a_copy(history: BaseChatMessageHistory) -> None:
    history.add_message(HumanMessage("a"))
    history.messages.append(HumanMessage("not stored"))
    assert history.messages == [HumanMessage("a")]


def test_clear_then_reuse(history: BaseChatMessageHistory) -> None:
    history.add_messages([HumanMessage("a"), AIMessage("b")])
    history.clear()
    assert history.messages == []
    history.add_message(HumanMessage("c"))
    assert history.messages == [HumanMessage("c")]


def test_message_likes_are_converted_and_empty_batches_are_fine(history: BaseChatMessageHistory) -> None:
    history.add_messages([("user", "hi"), {"role": "assistant", "content": "yo"}])  # type: ignore[list-item]
    history.add_messages([])
    assert history.messages == [HumanMessage("hi"), AIMessage("yo")]


def test_bad_input_is_refused_before_anything_is_stored(history: BaseChatMessageHistory) -> None:
    with pytest.raises(ValueError, match=r"messages\[1\]: a RemoveMessage"):
        history.add_messages([HumanMessage("a"), RemoveMessage(id="x")])
    with pytest.raises(TypeError, match="single HumanMessage"):
        history.add_messages(HumanMessage("a"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"messages\[0\]"):
        history.add_messages([object()])  # type: ignore[list-item]
    assert history.messages == []


def test_unserializable_content_is_refused_by_persistent_stores(history: BaseChatMessageHistory) -> None:
    message = ToolMessage("r", tool_call_id="c", artifact=object())
    try:
        history.add_messages([HumanMessage("a"), message])
    except TypeError as exc:
        assert "messages[1]: cannot be stored as JSON" in str(exc)
        assert history.messages == []  # all or nothing at the validation stage
    else:
        assert history.messages[-1] is message  # only the in-memory store can hold arbitrary objects


@pytest.mark.slow
def test_many_async_tasks(history: BaseChatMessageHistory) -> None:
    async def worker(n: int) -> None:
        for i in range(5):
            await history.aadd_messages([HumanMessage(f"{n}:{i}")])
            assert len(await history.aget_messages()) >= i + 1

    async def run() -> list[str]:
        await asyncio.gather(*(worker(n) for n in range(20)))
        return [str(m.content) for m in await history.aget_messages()]

    contents = asyncio.run(run())
    assert sorted(contents) == sorted(f"{n}:{i}" for n in range(20) for i in range(5))
    for n in range(20):
        assert [c for c in contents if c.startswith(f"{n}:")] == [f"{n}:{i}" for i in range(5)]
    asyncio.run(history.aclear())
    assert history.messages == []


def test_threads_share_one_history(history: BaseChatMessageHistory) -> None:
    def worker(n: int) -> None:
        for i in range(10):
            history.add_message(HumanMessage(f"{n}:{i}"))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    contents = [str(m.content) for m in history.messages]
    assert sorted(contents) == sorted(f"{n}:{i}" for n in range(4) for i in range(10))
