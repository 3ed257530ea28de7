"""The recall tool answers any arguments, in every form a call comes in, with a result or a short error naming the
argument, never an exception out of ``answer`` and never more than ``ANSWER_CHARS`` characters; and when what it
would find is already in the request the model saw, it says where."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.recall import RECALL_TOOL_NAME, RecallTool, is_recalled
from ctxwin.recall._tool import ANSWER_CHARS

COUNTER = "tiktoken:o200k_base"
BUDGET = 1_500
ERROR_CHARS = 300  # a tool error is a sentence, whatever the arguments held
LOG = "\n".join(f"2026-03-02T10:{i // 60:02d}:{i % 60:02d}Z INFO worker-{i % 7} batch {i * 31} done"
                for i in range(900))


def agent_session() -> tuple[Any, list[BaseMessage]]:
    """A session whose first request left out two early facts, a long tool output (call_log) and its call."""
    messages: list[BaseMessage] = [
        SystemMessage("You are terse."),
        HumanMessage("The Zurich office code is ZX-4471; keep it.", id="fact"),
        HumanMessage("The Zurich depot code is ZD-1180."),
        AIMessage("", tool_calls=[{"name": "read_log", "args": {"day": "2026-03-02"}, "id": "call_log"}]),
        ToolMessage(LOG, tool_call_id="call_log", name="read_log"),
    ]
    for turn in range(20):
        messages += [HumanMessage(f"Turn {turn}: the nightly export is slow again. " + "We looked at it. " * 8),
                     AIMessage("Noted. " + "The queue drains within the hour. " * 4)]
    session = Planner(counter=COUNTER, context_window=BUDGET, reserve_output=0, ledger_share=0).session(messages)
    session.plan()
    return session, messages


@functools.cache
def shared_tool() -> RecallTool:
    """One session's tool for the tests that only ask it (a session costs a plan)."""
    return agent_session()[0].recall_tool  # type: ignore[no-any-return]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
names = st.sampled_from(["query", "handle", "limit", "offset", "q", ""]) | st.text(max_size=8)
arguments = st.dictionaries(names, json_values | st.sampled_from(["#0", "#3", "call_log", "fact", "Zurich"]),
                            max_size=4)


def check(answer: ToolMessage) -> None:
    assert len(answer.text) <= (ANSWER_CHARS if answer.status == "success" else ERROR_CHARS), answer.text[:200]
    assert answer.name == RECALL_TOOL_NAME
    if answer.status == "error":
        assert answer.text.startswith(f"{RECALL_TOOL_NAME}: ")


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=arguments)
@example(values={"handle": "#" + "9" * 30})  # past SQLite's integers: OverflowError
@example(values={"handle": "#" + "9" * 5000})  # past Python's int() of a string
@example(values={"handle": "#²"})  # a digit int() does not read
@example(values={"query": "Zurich", "limit": 10**30})
@example(values={"query": "Zurich", "limit": float("nan")})
@example(values={"query": "Zurich", "limit": 0})
@example(values={"query": "Zurich", "limit": -3})
@example(values={"query": "Zurich", "offset": 10**5000})
@example(values={"query": ["Zurich"] * 3})
@example(values={"query": "Zurich " * 40_000})
@example(values={"query": "\ud800\x00\ufffe"})
def test_any_arguments_get_a_bounded_answer_or_a_short_error_in_every_form(values: dict[str, Any]) -> None:
    calls: list[dict[str, Any]] = [{"name": RECALL_TOOL_NAME, "args": values, "id": "c1", "type": "tool_call"},
                                   {"type": "tool_use", "id": "toolu_1", "name": RECALL_TOOL_NAME, "input": values}]
    try:
        text = json.dumps(values)  # NaN as JSON writes it
    except ValueError:  # an int too long for Python to write: the parametrized test below sends one as JSON
        pass
    else:
        calls.append({"id": "c2", "type": "function", "function": {"name": RECALL_TOOL_NAME, "arguments": text}})
    tool = shared_tool()
    for call in calls:
        check(tool.answer(call))
    try:
        assert len(tool.run(values)) <= ANSWER_CHARS
    except ValueError as error:
        assert len(str(error)) <= ERROR_CHARS


@pytest.mark.parametrize(("arguments", "named"), [
    ("[" * 100_000, "arguments"),  # RecursionError in json.loads
    ('{"query": 1' + "0" * 5_000 + "}", "arguments"),  # a number Python will not read
    ('{"query": "Zurich", "limit": NaN}', "limit"),
    ('{"query": "Zurich", "limit": 0}', "limit"),
    ('{"query": "Zurich", "limit": -1}', "limit"),
    ('{"query": "Zurich", "limit": "3"}', "limit"),
    ('{"query": 5}', "query"),
    ('{"handle": {"id": "call_log"}}', "handle"),
    ('{"query": "Zurich", "top_k": 3}', "top_k"),
    ('"Zurich"', "arguments"),
    ("{}", "query"),
])
def test_hostile_arguments_get_a_short_error_naming_them(arguments: str, named: str) -> None:
    answer = shared_tool().answer({"id": "c1", "type": "function",
                          "function": {"name": RECALL_TOOL_NAME, "arguments": arguments}})
    assert answer.status == "error" and named in answer.text and len(answer.text) <= ERROR_CHARS, answer.text


def test_a_long_query_gets_a_short_answer() -> None:
    query = "Lyon warehouse lease " * 10_000  # 210,000 characters, never said
    answer = shared_tool().run({"query": query})
    assert answer.startswith("Nothing") and len(answer) < 300


def test_a_long_output_read_by_its_handle_comes_in_bounded_parts_that_lose_nothing() -> None:
    assert len(LOG) > 2 * ANSWER_CHARS
    tool = shared_tool()
    parts, offset = [], 0
    while True:
        answer = tool.run({"handle": "call_log", "offset": offset})
        assert len(answer) <= ANSWER_CHARS
        if "call again with offset" not in answer:
            parts.append(answer)
            break
        body, note = answer.rsplit("\n[cut: ", 1)
        parts.append(body)
        offset = int(note.split("offset ")[1].split()[0])
    read = "".join(parts)
    assert all(line in read for line in LOG.splitlines())
    assert "nothing from that offset on" in tool.run({"handle": "call_log", "offset": 10**9})


def test_limit_lists_fewer_excerpts() -> None:
    session, _ = agent_session()
    assert session.recall_tool.run({"query": "Zurich code"}).count("--- ") == 2
    assert session.recall_tool.run({"query": "Zurich code", "limit": 1}).count("--- ") == 1
    assert session.recall_tool.run({"query": "Zurich code", "limit": 50}).count("--- ") == 2


def test_the_tool_says_where_the_request_already_holds_what_it_would_find() -> None:
    session, messages = agent_session()
    session.add_messages([HumanMessage("What was the Zurich office code?")])
    plan = session.plan()
    recall = next(m for m in plan.messages if is_recalled(m))
    assert "ZX-4471" in str(recall.text)  # query-aware recall put it in the request
    answer = session.recall_tool.run({"query": "Zurich office code"})
    assert "already in the conversation you see" in answer and "recall message (excerpts of fact, #2)" in answer
    assert "ZX-4471" in answer and not answer.startswith("Nothing"), "what matches is quoted, not denied"
    index = len(messages) - 2  # the user's turn 19, kept
    assert any(m is messages[index] for m in plan.messages)
    answer = session.recall_tool.run({"query": "turn 19"})
    assert "already in the conversation you see" in answer and f"message #{index}, kept as it was" in answer
    assert session.recall_tool.run({"query": "Lyon warehouse lease"}).startswith("Nothing left out")

