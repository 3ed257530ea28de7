"""The tool-pair index binds each result to the call it answers: where no call id repeats by a dict, else by
walking the messages in order; both give the same pairs on conversations with unanswered calls, results before
their calls or without one, invalid calls, several calls per message, and (for the walk) repeated ids. The walk in C
(``_pairscan.c``) gives the pairs Python gives."""

from __future__ import annotations

import os
import shutil
import sysconfig
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from ctxwin.trim import _tool_pairs
from ctxwin.trim._tool_pairs import ToolPairs


@st.composite
def conversations(draw: st.DrawFn) -> list[BaseMessage]:
    """Ids from a few (repeats: the walk decides) to many (mostly unique: the dict does)."""
    ids = st.integers(0, draw(st.sampled_from([3, 8, 200]))).map(str)
    out: list[BaseMessage] = []
    for _ in range(draw(st.integers(0, 24))):
        kind = draw(st.sampled_from(["human", "call", "result", "invalid"]))
        if kind == "human":
            out.append(HumanMessage("q"))
        elif kind == "call":
            calls = draw(st.lists(ids, min_size=1, max_size=3))
            out.append(AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": i} for i in calls]))
        elif kind == "invalid":
            out.append(AIMessage("", invalid_tool_calls=[{"name": "f", "args": "{", "id": draw(ids), "error": "x"}]))
        else:
            out.append(ToolMessage("r", tool_call_id=draw(ids)))
    return out


def index(messages: list[BaseMessage], start: int, walk: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patched:
        if walk:
            patched.setattr(ToolPairs, "_bind_unique", lambda *args: False)
        pairs = ToolPairs(messages, suffix_only=True)
        straddling = [pairs.straddling(b) for b in range(start, len(messages) + 1)]
        return pairs.call_of, {k: sorted(v) for k, v in pairs.results_of.items()}, straddling


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(conversations(), st.data())
def test_binding_by_id_gives_the_pairs_the_walk_gives(messages: list[BaseMessage], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(messages)))
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert index(messages, start, False, monkeypatch) == index(messages, start, True, monkeypatch)


@settings(max_examples=30, deadline=None)
@given(conversations(), st.data())
def test_binding_by_id_gives_the_pairs_the_walk_gives_on_a_few_examples(
    messages: list[BaseMessage], data: st.DataObject
) -> None:
    """The property above on 30 examples (the fast tier's; the slow tier draws 300)."""
    test_binding_by_id_gives_the_pairs_the_walk_gives.hypothesis.inner_test(messages, data)


def test_a_result_answers_its_call_before_it_and_not_one_after_it() -> None:
    messages: list[BaseMessage] = [
        ToolMessage("early", tool_call_id="x"),
        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "x"}, {"name": "g", "args": {}, "id": "y"}]),
        ToolMessage("late", tool_call_id="x"),
        HumanMessage("q"),
    ]
    pairs = ToolPairs(messages)
    assert pairs.call_of == {2: 1}
    assert [pairs.straddling(b) for b in range(5)] == [0, 0, 1, 0, 0]


def c_walk() -> Any:
    """The walk in C; skips where it is turned off or cannot be built, fails where it should have been."""
    if _tool_pairs._C_SCAN is None:
        if os.environ.get("CTXWIN_NO_ACCELERATOR") or not shutil.which(
            (sysconfig.get_config_var("CC") or "cc").split()[0]
        ):
            pytest.skip("the C walk is turned off or there is no C compiler")
        pytest.fail("a C compiler is present but ctxwin/trim/_pairscan.c is not built: reinstall the package "
                    "(pip install -e .) and read the build log", pytrace=False)
    return _tool_pairs._C_SCAN


class Chunky(ToolMessage):
    """A result class the index meets for the first time: its role is learnt, then the C walk takes it."""


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(conversations(), st.data())
def test_the_c_walk_gives_the_pairs_python_gives(messages: list[BaseMessage], data: st.DataObject) -> None:
    c_walk()
    start = data.draw(st.integers(0, len(messages)))
    if messages and data.draw(st.booleans()):  # a result of a class not seen yet, answering the first call's id
        messages.insert(data.draw(st.integers(0, len(messages))), Chunky("r", tool_call_id="0"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        in_c = index(messages, start, False, monkeypatch)
        monkeypatch.setattr(_tool_pairs, "_C_SCAN", None)
        assert in_c == index(messages, start, False, monkeypatch) == index(messages, start, True, monkeypatch)


@settings(max_examples=30, deadline=None)
@given(conversations(), st.data())
def test_the_c_walk_gives_the_pairs_python_gives_on_a_few_examples(
    messages: list[BaseMessage], data: st.DataObject
) -> None:
    """The property above on 30 examples (the fast tier's; the slow tier draws 300)."""
    test_the_c_walk_gives_the_pairs_python_gives.hypothesis.inner_test(messages, data)


def test_the_c_walk_leaves_to_python_what_is_not_shaped_as_a_message() -> None:
    """A call list that is not a list of dicts with an id: the C walk declines, and Python reads it as it is."""
    scan = c_walk()
    odd = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "x"}])
    odd.__dict__["tool_calls"] = ({"name": "f", "args": {}, "id": "x"},)  # a tuple: Python iterates it alike
    messages: list[BaseMessage] = [odd, ToolMessage("r", tool_call_id="x")]
    assert scan(messages, 0, _tool_pairs._ROLES, _tool_pairs._RESULT, _tool_pairs._CALLER) is None
    assert ToolPairs(messages).call_of == {1: 0}
