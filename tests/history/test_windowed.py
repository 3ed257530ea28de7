"""WindowedHistory: everything stored, a recent window shown, system prompt first, tool pairs whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.history._memory import InMemoryChatMessageHistory
from ctxwin.history._sqlite import SQLiteChatMessageHistory
from ctxwin.history._windowed import WindowedHistory
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage


def turn(n: int) -> list[BaseMessage]:
    return [HumanMessage(f"q{n}"), AIMessage(f"a{n}")]


def tool_turn(n: int, calls: int = 2) -> list[BaseMessage]:
    ids = [f"c{n}.{k}" for k in range(calls)]
    return [
        HumanMessage(f"q{n}"),
        AIMessage("", tool_calls=[{"name": "f", "args": {"k": k}, "id": i} for k, i in enumerate(ids)]),
        *[ToolMessage(f"r{i}", tool_call_id=i) for i in ids],
        AIMessage(f"a{n}"),
    ]


def orphans(window: list[BaseMessage]) -> list[BaseMessage]:
    seen: set[Any] = set()
    out = []
    for m in window:
        if isinstance(m, AIMessage):
            seen.update(c["id"] for c in m.tool_calls)
        elif isinstance(m, ToolMessage) and m.tool_call_id not in seen:
            out.append(m)
    return out


def test_stores_everything_and_shows_the_last_messages() -> None:
    backing = InMemoryChatMessageHistory()
    window = WindowedHistory(backing, max_messages=3)
    for n in range(4):
        window.add_messages(turn(n))
    assert len(backing.messages) == len(window.all_messages) == 8
    assert [m.content for m in window.messages] == ["q3", "a3"]  # the window starts on a user message
    assert [m.content for m in WindowedHistory(backing, max_messages=3, start_on=None).messages] == ["a2", "q3", "a3"]
    window.clear()
    assert backing.messages == [] and window.messages == []


def test_no_limits_shows_everything() -> None:
    window = WindowedHistory(InMemoryChatMessageHistory(turn(0)))
    assert window.messages == turn(0)


def test_stored_system_message_is_kept_first_and_counts_toward_max_messages() -> None:
    window = WindowedHistory(InMemoryChatMessageHistory([SystemMessage("rules"), *turn(0), *turn(1)]), max_messages=3)
    assert [m.content for m in window.messages] == ["rules", "q1", "a1"]
    without = WindowedHistory(window.history, max_messages=3, include_system=False, start_on=None)
    assert [m.content for m in without.messages] == ["a0", "q1", "a1"]


def test_system_prompt_is_always_first_and_is_not_stored() -> None:
    backing = InMemoryChatMessageHistory([SystemMessage("stored rules"), *turn(0), *turn(1)])
    window = WindowedHistory(backing, max_messages=3, system_prompt="be brief", include_system=False)
    assert window.messages == [SystemMessage("be brief"), HumanMessage("q1"), AIMessage("a1")]
    assert SystemMessage("be brief") not in backing.messages
    full = WindowedHistory(backing, system_prompt=SystemMessage("p"), start_on=None)
    assert full.messages[0] == SystemMessage("p") and full.messages[1:] == backing.messages
    # by default the stored system message, which is not a user message, does not open the window
    assert WindowedHistory(backing, system_prompt="p").messages[1:] == backing.messages[1:]


def test_window_never_starts_with_an_orphan_tool_message() -> None:
    messages = [*turn(0), *tool_turn(1, calls=3)]  # q1, ai(calls), t, t, t, a1
    backing = InMemoryChatMessageHistory(messages)
    for k in range(1, len(messages) + 1):
        window = WindowedHistory(backing, max_messages=k).messages
        assert len(window) <= k
        assert orphans(window) == []
        assert window == messages[len(messages) - len(window) :]
    ignored = WindowedHistory(backing, max_messages=3, tool_pairs="ignore", start_on=None).messages
    assert ignored == messages[-3:] and orphans(ignored)


def test_orphan_tool_message_stored_in_the_history_is_not_shown_first() -> None:
    backing = InMemoryChatMessageHistory([ToolMessage("r", tool_call_id="gone"), HumanMessage("q")])
    assert WindowedHistory(backing, max_messages=5).messages == [HumanMessage("q")]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["turn", "tools", "system"]), min_size=1, max_size=8), st.integers(1, 12))
def test_message_window_invariants(kinds: list[str], k: int) -> None:
    messages: list[BaseMessage] = []
    for n, kind in enumerate(kinds):
        messages += turn(n) if kind == "turn" else tool_turn(n) if kind == "tools" else [SystemMessage(f"s{n}")]
    window = WindowedHistory(InMemoryChatMessageHistory(messages), max_messages=k).messages
    assert len(window) <= k
    assert orphans(window) == []
    head = messages[:1] if isinstance(messages[0], SystemMessage) else []
    assert window[: len(head)] == head
    body = window[len(head) :]
    assert body == messages[len(messages) - len(body) :]
    assert not body or isinstance(body[0], HumanMessage)
    # the longest such suffix: one more message back would break the limit or the start
    start = len(messages) - len(body)
    longer = messages[start - 1 :] if start - 1 >= len(head) else None
    assert longer is None or len(head) + len(longer) > k or not isinstance(longer[0], HumanMessage)


# --- start_on: the window never opens on an assistant turn or a tool result (issue 19) -----------------------------


def test_window_starts_on_a_user_message_or_is_empty() -> None:
    """The fuzzing finding: the last k messages began with an AI or tool message, which providers reject."""
    messages = [*turn(0), *tool_turn(1, calls=2)]  # q0 a0 q1 ai(calls) r r a1
    backing = InMemoryChatMessageHistory(messages)
    assert WindowedHistory(backing, max_messages=5).messages == messages[2:]  # q1 ... a1
    assert WindowedHistory(backing, max_messages=4).messages == []  # ai(calls) r r a1: no user message to open it
    assert WindowedHistory(backing, max_messages=4, system_prompt="p").messages == [SystemMessage("p")]
    assert WindowedHistory(backing, max_messages=4, start_on=None).messages == messages[3:]
    assert WindowedHistory(backing, max_messages=4, start_on="ai").messages == messages[3:]
    assert WindowedHistory(backing, max_messages=6, start_on=[AIMessage]).messages == messages[1:]


def test_start_on_applies_to_the_token_window() -> None:
    messages = long_conversation()
    for budget in (60, 150, 400, 5000):
        backing = InMemoryChatMessageHistory(messages)
        window = WindowedHistory(backing, max_tokens=budget, counter="approximate").messages
        assert window[0] == messages[0]
        assert window[1:] == [] or isinstance(window[1], HumanMessage)
        assert window[1:] == messages[len(messages) - len(window) + 1 :] and orphans(window) == []


def test_a_user_message_between_a_call_and_its_result_does_not_orphan_the_result() -> None:
    call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])
    result = ToolMessage("r", tool_call_id="c1")
    messages = [HumanMessage("q0"), call, HumanMessage("meanwhile"), result, AIMessage("a")]
    window = WindowedHistory(InMemoryChatMessageHistory(messages), max_messages=3).messages
    assert window == [HumanMessage("meanwhile"), AIMessage("a")]  # the result of the cut call is left out
    assert WindowedHistory(InMemoryChatMessageHistory(messages), max_messages=4).messages == window
    assert WindowedHistory(InMemoryChatMessageHistory(messages)).messages == messages


def test_tool_results_with_no_call_in_the_window_are_left_out() -> None:
    stored_orphan = ToolMessage("lost", tool_call_id="never-called")
    messages = [HumanMessage("q"), stored_orphan, AIMessage("a"), ToolMessage("early", tool_call_id="c"),
                AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c"}])]
    window = WindowedHistory(InMemoryChatMessageHistory(messages)).messages
    assert window == [HumanMessage("q"), AIMessage("a"), messages[-1]]
    assert WindowedHistory(InMemoryChatMessageHistory(messages), tool_pairs="ignore").messages == messages


@pytest.mark.parametrize(
    ("start_on", "error", "match"),
    [("person", ValueError, "start_on: unknown message type 'person'"), (5, TypeError, "start_on")],
)
def test_bad_start_on(start_on: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        WindowedHistory(InMemoryChatMessageHistory(), start_on=start_on)


def test_works_over_a_persistent_history(tmp_path: Path) -> None:
    with SQLiteChatMessageHistory(tmp_path / "w.db", "s") as store:
        window = WindowedHistory(store, max_messages=2, system_prompt="p")
        window.add_messages([*turn(0), *turn(1)])
        window.add_user_message("last")
        assert [m.content for m in window.messages] == ["p", "last"]
        assert len(store.messages) == 5


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"max_messages": 0}, ValueError, "max_messages"),
        ({"max_messages": True}, ValueError, "max_messages"),
        ({"max_tokens": -5, "counter": len}, ValueError, "max_tokens"),
        ({"max_tokens": 100}, ValueError, "counter"),
        ({"counter": len}, ValueError, "counter"),
        ({"tool_pairs": "drop"}, ValueError, "tool_pairs"),
        ({"system_prompt": 5}, TypeError, "system_prompt"),
        ({"max_tokens": 10, "counter": 3.5}, TypeError, "counter"),
        ({"max_tokens": 10, "counter": "no-such-counter-xyz"}, ValueError, "no-such-counter-xyz"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        WindowedHistory(InMemoryChatMessageHistory(), **kwargs)


def test_history_must_be_a_history() -> None:
    with pytest.raises(TypeError, match="chat message history"):
        WindowedHistory([HumanMessage("x")])  # type: ignore[arg-type]


# --- token budget: the trim engine does the measuring ---------------------------------------------------------


def long_conversation() -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("You are a careful assistant. " * 3)]
    for n in range(12):
        messages += tool_turn(n) if n % 3 == 0 else turn(n)
        messages[-1] = messages[-1].model_copy(update={"content": f"answer {n} " + "word " * (5 * n)})
    return messages


@pytest.mark.parametrize("budget", [60, 150, 400, 5000])
def test_token_window_fits_the_budget_keeps_system_and_tool_pairs(budget: int) -> None:
    pytest.importorskip("ctxwin.trim", reason="the trim engine (ctxwin/trim.py) is not in the tree yet")
    from ctxwin.counters import get_counter

    counter = get_counter("approximate")
    messages = long_conversation()
    window = WindowedHistory(InMemoryChatMessageHistory(messages), max_tokens=budget, counter="approximate").messages
    assert window[0] == messages[0]
    assert counter.count_messages(window) <= budget or window == messages[:1]
    assert orphans(window) == []
    body = window[1:]
    assert body == messages[len(messages) - len(body) :]
    if counter.count_messages(messages) <= budget:
        assert window == messages


def test_token_window_with_system_prompt_and_message_limit() -> None:
    pytest.importorskip("ctxwin.trim", reason="the trim engine (ctxwin/trim.py) is not in the tree yet")
    from ctxwin.counters import get_counter

    counter = get_counter("approximate")
    messages = long_conversation()[1:]
    window = WindowedHistory(
        InMemoryChatMessageHistory(messages), max_tokens=120, counter=counter, max_messages=4, system_prompt="p"
    ).messages
    assert window[0] == SystemMessage("p")
    assert len(window) <= 4 and counter.count_messages(window) <= 120
    assert orphans(window) == []


# --- the stateful window: a turn reads what changed ------------------------------------------------------------


class ReadCounting(InMemoryChatMessageHistory):
    """The in-memory history, counting how often all its messages are read."""

    def __init__(self, messages: list[BaseMessage]) -> None:
        super().__init__(messages)
        self.reads = 0

    def stored_messages(self) -> list[BaseMessage]:
        self.reads += 1
        return super().stored_messages()


def fresh_window(messages: list[BaseMessage], **kwargs: Any) -> list[BaseMessage]:
    """The window a new WindowedHistory shows over ``messages`` (no state carried over)."""
    return WindowedHistory(InMemoryChatMessageHistory(messages), **kwargs).messages


@pytest.mark.parametrize("kwargs", [{"max_tokens": 150, "counter": "approximate"}, {"max_messages": 7}])
@pytest.mark.parametrize("system_prompt", [None, "be brief"])
def test_turns_through_the_window_do_not_read_the_history_again(
    kwargs: dict[str, Any], system_prompt: str | None
) -> None:
    messages = long_conversation()
    backing = ReadCounting(messages)
    window = WindowedHistory(backing, system_prompt=system_prompt, **kwargs)
    stored, shown = [messages], [window.messages]
    for n in range(20, 26):
        messages = [*messages, *(tool_turn(n) if n % 2 else turn(n))]
        window.add_messages(messages[len(stored[-1]) :])
        stored.append(messages)
        shown.append(window.messages)
    assert backing.reads == 1  # the first read only
    for these, window_shown in zip(stored, shown, strict=True):
        assert window_shown == fresh_window(these, system_prompt=system_prompt, **kwargs)


def test_changes_behind_the_windows_back_are_seen_in_memory() -> None:
    backing = ReadCounting(long_conversation())
    window = WindowedHistory(backing, max_tokens=150, counter="approximate")
    assert window.messages[-1] == long_conversation()[-1]
    backing.add_messages(turn(30))  # another writer
    assert window.messages[-2:] == turn(30)
    window.add_messages(turn(31))
    assert window.messages[-4:] == [*turn(30), *turn(31)]
    backing.clear()
    backing.add_messages([*turn(32), *turn(33)])  # as many messages as before the clear would not fool it
    window.add_messages(turn(34))
    assert window.messages == [*turn(32), *turn(33), *turn(34)]
    window.clear()
    assert window.messages == []


def test_changes_by_another_writer_are_seen_in_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with SQLiteChatMessageHistory(path, "s") as mine, SQLiteChatMessageHistory(path, "s") as other:
        window = WindowedHistory(mine, max_messages=4)
        window.add_messages(turn(0))
        assert window.messages == turn(0)
        other.add_messages(turn(1))  # another connection commits
        assert window.messages == [*turn(0), *turn(1)]
        window.add_messages(turn(2))
        assert window.messages == [*turn(1), *turn(2)]
        other.clear()
        other.add_messages([*turn(5), *turn(6)])  # the same number of rows as before the clear
        window.add_messages(turn(7))
        assert window.messages == [*turn(6), *turn(7)]
        mine.clear()
        assert window.messages == []


def test_a_batch_the_history_refuses_leaves_the_window_as_stored(tmp_path: Path) -> None:
    from ctxwin.messages import RemoveMessage

    backing = InMemoryChatMessageHistory(turn(0))
    window = WindowedHistory(backing, max_messages=10)
    assert window.messages == turn(0)
    with pytest.raises(ValueError, match="RemoveMessage"):
        window.add_messages([HumanMessage("kept?"), RemoveMessage(id="x")])
    assert window.messages == backing.messages == turn(0)


def test_threads_adding_and_reading_through_one_window_see_what_is_stored() -> None:
    import threading

    backing = InMemoryChatMessageHistory()
    window = WindowedHistory(backing, max_messages=1000, start_on=None)
    shown: list[int] = []

    def chat(k: int) -> None:
        for n in range(50):
            window.add_messages([HumanMessage(f"{k}.{n}")])
            shown.append(len(window.messages))

    threads = [threading.Thread(target=chat, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert window.messages == backing.messages and len(backing.messages) == 200
    assert max(shown) == 200
