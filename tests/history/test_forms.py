"""Type in = type out for the histories, with the real langchain-core, real JSONL files and real SQLite: a history
given LangChain messages reads back as LangChain messages (the caller's own objects where the stored message is
still the one read from them), and one reopened with ``form="langchain"`` does too."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxwin.history import (
    BaseChatMessageHistory,
    FileChatMessageHistory,
    InMemoryChatMessageHistory,
    SQLiteChatMessageHistory,
    WindowedHistory,
)
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

lc = pytest.importorskip("langchain_core.messages")
fake_models = pytest.importorskip("langchain_core.language_models.fake_chat_models")


def conversation() -> list[Any]:
    return [
        lc.SystemMessage("You are terse."),
        lc.HumanMessage("weather in Paris?", id="h1"),
        lc.AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}], id="a1"),
        lc.ToolMessage("18C, sunny", tool_call_id="c1"),
        lc.AIMessage("18C and sunny.", id="a2"),
        lc.HumanMessage("thanks", id="h2"),
    ]


def reopen(history: BaseChatMessageHistory, **kwargs: Any) -> BaseChatMessageHistory:
    """A second object on the same store (what another process would open); the in-memory store has none."""
    if isinstance(history, FileChatMessageHistory):
        return FileChatMessageHistory(history.file_path, **kwargs)
    assert isinstance(history, SQLiteChatMessageHistory)
    return SQLiteChatMessageHistory(history.path, history.session_id, **kwargs)


def accepted_by_a_chat_model(messages: list[Any]) -> None:
    model = fake_models.GenericFakeChatModel(messages=iter([lc.AIMessage("ok")]))
    assert model.invoke(messages).content == "ok"


def test_langchain_in_gives_the_callers_own_objects_back(history: BaseChatMessageHistory) -> None:
    messages = conversation()
    history.add_messages(messages[:3])
    for message in messages[3:]:
        history.add_message(message)
    read = history.messages
    assert read == messages
    assert all(got is given for got, given in zip(read, messages, strict=True))
    accepted_by_a_chat_model(read)
    assert asyncio.run(history.aget_messages()) == messages
    assert read is not history.messages  # a fresh list each read
    assert history.stored_messages()[2] == AIMessage(
        "", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}], id="a1"
    )


def test_ctxwin_in_stays_ctxwin_out(history: BaseChatMessageHistory) -> None:
    messages = [SystemMessage("s"), HumanMessage("hi"), AIMessage("hello")]
    history.add_messages(messages)
    history.add_messages([{"role": "user", "content": "again"}])
    read = history.messages
    assert read == [*messages, HumanMessage("again")]
    assert all(type(m).__module__.startswith("ctxwin.") for m in read)
    if isinstance(history, InMemoryChatMessageHistory):
        assert all(got is given for got, given in zip(read, messages, strict=False))


def test_a_mix_of_forms_reads_as_langchain_with_new_instances_for_the_others(history: BaseChatMessageHistory) -> None:
    first = lc.HumanMessage("hi", id="h1")
    history.add_messages([first])
    history.add_messages([AIMessage("hello", id="a1"), ("human", "how are you?")])
    history.add_messages([{"role": "assistant", "content": "fine"}])
    last = lc.HumanMessage("good")
    history.add_messages([last])
    read = history.messages
    assert read[0] is first and read[-1] is last
    assert [type(m) for m in read] == [lc.HumanMessage, lc.AIMessage, lc.HumanMessage, lc.AIMessage, lc.HumanMessage]
    assert [m.content for m in read] == ["hi", "hello", "how are you?", "fine", "good"]
    assert read[1].id == "a1"
    accepted_by_a_chat_model(read)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_messages_stored_by_another_writer_come_back_as_new_instances(tmp_path: Path, kind: str) -> None:
    history: BaseChatMessageHistory = (
        FileChatMessageHistory(tmp_path / "chat.jsonl") if kind == "jsonl"
        else SQLiteChatMessageHistory(tmp_path / "chat.db", "s")
    )
    mine = conversation()
    history.add_messages(mine[:2])
    other = reopen(history)
    other.add_messages([AIMessage("from elsewhere", id="x")])
    other.add_messages([lc.HumanMessage("weather in Paris?", id="h1")])  # equal to one of mine, but not mine
    history.add_messages(mine[2:4])
    read = history.messages
    assert read == [*mine[:2], lc.AIMessage("from elsewhere", id="x"), mine[1], *mine[2:4]]
    assert read[0] is mine[0] and read[1] is mine[1] and read[4] is mine[2] and read[5] is mine[3]
    assert read[3] is not mine[1] and type(read[2]) is lc.AIMessage  # equal objects, not the caller's
    assert all(type(m).__module__.startswith("ctxwin.") for m in reopen(history).messages)  # nothing said: ctxwin


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_reopened_history_reads_as_langchain_when_asked(tmp_path: Path, kind: str) -> None:
    def open_history(**kwargs: Any) -> BaseChatMessageHistory:
        if kind == "jsonl":
            return FileChatMessageHistory(tmp_path / "chat.jsonl", **kwargs)
        return SQLiteChatMessageHistory(tmp_path / "chat.db", "s", **kwargs)

    open_history().add_messages(conversation())
    read = open_history(form="langchain").messages
    assert read == conversation()
    assert [type(m) for m in read] == [type(m) for m in conversation()]
    accepted_by_a_chat_model(read)
    assert open_history().messages == [
        SystemMessage("You are terse."),
        HumanMessage("weather in Paris?", id="h1"),
        AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}], id="a1"),
        ToolMessage("18C, sunny", tool_call_id="c1"),
        AIMessage("18C and sunny.", id="a2"),
        HumanMessage("thanks", id="h2"),
    ]
    with pytest.raises(ValueError, match="form must be 'messages' or 'langchain', got 'lc'"):
        open_history(form="lc")


def test_form_langchain_without_langchain_core_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    history = SQLiteChatMessageHistory(tmp_path / "chat.db", "s", form="langchain")  # nothing imported yet
    history.add_messages([HumanMessage("hi")])
    monkeypatch.setitem(sys.modules, "langchain_core.messages", None)  # what a missing package looks like
    with pytest.raises(ImportError, match=r"form='langchain' needs langchain-core.*pip install langchain-core"):
        history.messages  # noqa: B018
    assert history.stored_messages() == [HumanMessage("hi")]


def test_an_object_changed_after_it_was_added_is_not_given_back(history: BaseChatMessageHistory) -> None:
    message = lc.HumanMessage("hi")
    history.add_messages([message, lc.AIMessage("hello")])
    message.content = "changed after storing"
    read = history.messages
    assert read[0] is not message and read[0] == lc.HumanMessage("hi")  # what was stored, as a new instance
    assert read[1] == lc.AIMessage("hello")


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.tool_calls[0]["args"].update(city="Lyon"),  # a dict in a list in a field, in place
        lambda m: m.tool_calls.append({"name": "weather", "args": {}, "id": "c2", "type": "tool_call"}),
        lambda m: m.additional_kwargs.update(n=True),  # was 1: equal in Python, another value
    ],
    ids=["nested-in-place", "list-grew", "one-to-true"],
)
def test_an_object_changed_deep_inside_after_it_was_added_is_not_given_back(
    history: BaseChatMessageHistory, change: Any
) -> None:
    call = lc.AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}],
                        additional_kwargs={"n": 1})
    untouched = lc.HumanMessage("hi")
    history.add_messages([untouched, call])
    assert history.messages[1] is call
    stored = call.model_copy(deep=True)
    change(call)
    read = history.messages
    assert read[0] is untouched and read[1] is not call and read[1] == stored  # what was stored, as a new instance


def test_the_same_object_twice_and_equal_objects_come_back_in_order(history: BaseChatMessageHistory) -> None:
    a, b = lc.HumanMessage("same"), lc.HumanMessage("same")
    history.add_messages([a, a])
    history.add_messages([b])
    read = history.messages
    assert read[0] is a and read[1] is a and read[2] is b


def test_clear_keeps_the_form_and_forgets_the_objects(history: BaseChatMessageHistory) -> None:
    old = lc.HumanMessage("hi")
    history.add_messages([old])
    history.clear()
    history.add_messages([HumanMessage("hi")])  # ctxwin, equal to the forgotten object
    read = history.messages
    assert read == [lc.HumanMessage("hi")] and read[0] is not old and isinstance(read[0], lc.HumanMessage)


def test_a_single_langchain_message_is_refused_by_add_messages(history: BaseChatMessageHistory) -> None:
    with pytest.raises(TypeError, match="got a single HumanMessage; use add_message"):
        history.add_messages(lc.HumanMessage("hi"))
    assert history.messages == []


@pytest.mark.slow
@pytest.mark.parametrize("backing", ["memory", "sqlite"])
def test_the_window_gives_langchain_objects(tmp_path: Path, backing: str) -> None:
    store: BaseChatMessageHistory = (
        InMemoryChatMessageHistory() if backing == "memory" else SQLiteChatMessageHistory(tmp_path / "c.db", "s")
    )
    window = WindowedHistory(store, max_tokens=120, counter="approximate")
    turns = conversation()
    for n in range(30):
        turns += [lc.HumanMessage(f"question {n} " * 5), lc.AIMessage(f"answer {n} " * 5)]
    window.add_messages(turns[:6])
    for start in range(6, len(turns), 2):
        window.add_messages(turns[start : start + 2])
        shown = window.messages
        assert shown[0] is turns[0] and shown[-1] is turns[start + 1]
        assert len(shown) > 3 and all(any(m is t for t in turns) for m in shown)
    accepted_by_a_chat_model(shown)
    assert window.all_messages == turns and window.all_messages[7] is turns[7]
    if backing == "sqlite":
        reopened = WindowedHistory(SQLiteChatMessageHistory(tmp_path / "c.db", "s", form="langchain"), max_messages=3)
        assert reopened.messages == [turns[0], *turns[-2:]]
        assert all(isinstance(m, lc.BaseMessage) for m in reopened.messages)
        accepted_by_a_chat_model(reopened.messages)
