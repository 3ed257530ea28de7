"""The counters' framing in C (ctxwin/counters/_framing.c) gives what the Python framing (``message_texts``) gives:
the same strings to tokenize and the same framing tokens for every message, whichever labels the counter has seen,
whatever the message holds (names, tool calls, calls read from a request, reasoning, invalid calls, list content,
classes of its own); a counter framing in a way of its own is framed in Python."""

from __future__ import annotations

import os
import shutil
import sysconfig
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import _base
from ctxwin.counters._families.tiktoken_counter import TiktokenCounter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_messages
from ctxwin.messages._openai_format import FIXED_ROLES, dumps_unescaped

if _base._C_FRAME is None:
    if os.environ.get("CTXWIN_NO_ACCELERATOR") or not shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]):
        pytest.skip("the C framing is turned off or there is no C compiler", allow_module_level=True)
    pytest.fail("a C compiler is present but ctxwin/counters/_framing.c is not built: reinstall the package "
                "(pip install -e .) and read the build log", pytrace=False)

COUNTER = TiktokenCounter("o200k_base")
LABELS = st.sampled_from(["", "search", "ana", "c1", "c2", "émile", "tool_x"])
ARGS = st.dictionaries(st.sampled_from(["q", "n", "é"]), st.none() | st.integers() | st.text(max_size=6), max_size=3)


class Note(HumanMessage):
    """A message class the framing meets for the first time."""


class Result(ToolMessage):
    """A tool result class of its own."""


@st.composite
def messages(draw: st.DrawFn) -> BaseMessage:
    text = draw(st.text(max_size=20))
    content: Any = draw(st.sampled_from([text, [text, {"type": "text", "text": text}]]))
    name = draw(st.none() | LABELS)
    kind = draw(st.sampled_from(["human", "note", "system", "developer", "ai", "tool", "result", "read"]))
    if kind == "read":  # tool calls read from a request: their argument text as received is what counts
        return convert_to_messages([{"role": "assistant", "content": text, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q":  "x"}'}}]}])[0]
    if kind in ("tool", "result"):
        return (ToolMessage if kind == "tool" else Result)(content, tool_call_id=draw(LABELS), name=name)
    if kind == "ai":
        calls = [{"name": draw(LABELS), "args": draw(ARGS), "id": draw(st.none() | LABELS)}
                 for _ in range(draw(st.integers(0, 2)))]
        extra = draw(st.sampled_from([{}, {"reasoning_content": "because"}, {"function_call": {"name": "f"}}]))
        invalid = draw(st.sampled_from([[], [{"name": "bad", "args": "{", "id": "c9", "error": None}]]))
        return AIMessage(content, name=name, tool_calls=calls, additional_kwargs=extra, invalid_tool_calls=invalid)
    if kind == "developer":
        return SystemMessage(content, additional_kwargs={"__openai_role__": "developer"})
    return {"human": HumanMessage, "note": Note, "system": SystemMessage}[kind](content, name=name)


def python_framed(counter: TiktokenCounter, conversation: list[BaseMessage]) -> Any:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_base, "_C_FRAME", None)
        return counter._framed(conversation)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(messages(), max_size=8), st.integers(0, 8))
def test_the_c_framing_gives_what_python_gives(conversation: list[BaseMessage], seen: int) -> None:
    counter = TiktokenCounter("o200k_base")
    counter._framed(conversation[:seen])  # some labels counted already, the others met for the first time
    expected = python_framed(TiktokenCounter("o200k_base"), conversation)
    assert counter._framed(conversation) == expected
    assert counter._framed(conversation) == expected  # every label known now


@settings(max_examples=15, deadline=None)
@given(st.lists(messages(), max_size=8), st.integers(0, 8))
def test_the_c_framing_gives_what_python_gives_on_a_few_examples(conversation: list[BaseMessage], seen: int) -> None:
    """The property above on 15 examples (the fast tier's; the slow tier draws 300)."""
    test_the_c_framing_gives_what_python_gives.hypothesis.inner_test(conversation, seen)


def test_the_common_messages_are_framed_in_c() -> None:
    """Once their labels are counted, plain messages, tool calls built in Python and their results never reach
    Python's framing."""
    conversation: list[BaseMessage] = [
        HumanMessage("what is the weather", name="ana"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"q": "weather"}, "id": "c1"}]),
        ToolMessage("sunny", tool_call_id="c1"),
        AIMessage("It is sunny."),
    ]
    expected = python_framed(COUNTER, conversation)

    def refused(message: BaseMessage) -> tuple[list[str], int]:
        raise AssertionError(f"framed in Python: {message!r}")

    framed = _base._C_FRAME(conversation, COUNTER._labels(), FIXED_ROLES, _base._KINDS, COUNTER.tokens_per_message,
                            COUNTER.tokens_per_name, dumps_unescaped, refused)
    assert framed == expected


def test_a_counter_framing_its_own_way_is_framed_in_python() -> None:
    class Shouting(TiktokenCounter):
        def message_texts(self, message: BaseMessage) -> tuple[list[str], int]:
            texts, fixed = super().message_texts(message)
            return [text.upper() for text in texts], fixed + 1

    conversation: list[BaseMessage] = [HumanMessage("hello there"), AIMessage("hi")]
    counter = Shouting("o200k_base")
    assert counter._framed(conversation) == python_framed(counter, conversation)
    assert counter._framed(conversation)[0] == ["HELLO THERE", "HI"]
