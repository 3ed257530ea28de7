"""The scan for flagged messages in C (ctxwin/strategies/_flagged.c) finds what the Python reading finds: the
messages with additional kwargs or response metadata, and so the same pins from any start; a message whose fields
are not plain dicts leaves the list to Python."""

from __future__ import annotations

import os
import shutil
import sysconfig
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from ctxwin.strategies import _pins
from ctxwin.strategies._pins import flagged_indexes, pin, pinned_indexes

if _pins._C_FLAGGED is None:
    if os.environ.get("CTXWIN_NO_ACCELERATOR") or not shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]):
        pytest.skip("the C scan is turned off or there is no C compiler", allow_module_level=True)
    pytest.fail("a C compiler is present but ctxwin/strategies/_flagged.c is not built: reinstall the package "
                "(pip install -e .) and read the build log", pytrace=False)


class Note(HumanMessage):
    """A message class of its own."""


@st.composite
def messages(draw: st.DrawFn) -> BaseMessage:
    cls = draw(st.sampled_from([HumanMessage, AIMessage, Note]))
    kwargs = draw(st.sampled_from([{}, {"pinned": True}, {"pinned": False}, {"other": 1}]))
    metadata = draw(st.sampled_from([{}, {"ctxwin_recall": ["#1"]}, {"model": "x"}]))
    message = cls("text", additional_kwargs=kwargs, response_metadata=metadata)
    return pin(message) if draw(st.booleans()) else message


def in_python(run: Any, *args: Any) -> Any:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(_pins, "_C_FLAGGED", None)
        return run(*args)


@settings(max_examples=40, deadline=None)
@given(st.lists(messages(), max_size=40), st.integers(0, 40))
def test_the_c_scan_finds_what_python_finds(conversation: list[BaseMessage], start: int) -> None:
    assert _pins._C_FLAGGED is not None and _pins._C_FLAGGED(conversation) is not None  # the C loop answered
    assert flagged_indexes(conversation) == in_python(flagged_indexes, conversation)
    assert pinned_indexes(conversation, start) == in_python(pinned_indexes, conversation, start)


def test_fields_that_are_not_plain_dicts_leave_the_list_to_python() -> None:
    odd = HumanMessage("odd")
    odd.__dict__["additional_kwargs"] = None  # no dict: Python's reading decides
    conversation: list[BaseMessage] = [pin(HumanMessage("a")), odd, ToolMessage("r", tool_call_id="c")]
    assert _pins._C_FLAGGED is not None and _pins._C_FLAGGED(conversation) is None
    assert flagged_indexes(conversation) == in_python(flagged_indexes, conversation) == [0]
    assert pinned_indexes(conversation) == [0]
