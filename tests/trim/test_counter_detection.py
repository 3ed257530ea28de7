"""Per-message counters are recognised from string annotations (this module uses postponed annotations, which
LangChain's ``annotation is BaseMessage`` check misses), subclass and union annotations, and list annotations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from trim_support import ctxwin_counter

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage
from ctxwin.trim import trim_messages
from ctxwin.trim._measure import callable_kind, kind_from_annotation

MESSAGES = [HumanMessage("question one"), AIMessage("answer one"), HumanMessage("question two")]


def per_message(message: BaseMessage) -> int:
    return ctxwin_counter(message)


def per_human_or_ai(message: HumanMessage | AIMessage) -> int:
    return ctxwin_counter(message)


def unresolvable(message: NotImportedMessage) -> int:  # type: ignore[name-defined]  # noqa: F821
    return ctxwin_counter(message)


def over_list(messages: Sequence[BaseMessage]) -> int:
    return sum(ctxwin_counter(m) for m in messages)


@pytest.mark.parametrize(
    ("counter", "kind"),
    [(per_message, "message"), (per_human_or_ai, "message"), (unresolvable, "message"), (over_list, "list")],
)
def test_kind_from_postponed_annotations(counter: Any, kind: str) -> None:
    assert callable_kind(counter, MESSAGES[0]) == kind
    assert trim_messages(MESSAGES, max_tokens=12, token_counter=counter) == MESSAGES[-2:]


def test_string_annotations() -> None:
    assert kind_from_annotation("BaseMessage") == "message"
    assert kind_from_annotation("langchain_core.messages.HumanMessage | AIMessage") == "message"
    assert kind_from_annotation("list[BaseMessage]") == "list"
    assert kind_from_annotation("Sequence[Any]") == "list"
    assert kind_from_annotation("int") is None


def test_a_counter_that_fails_both_ways_reports_the_list_error() -> None:
    def broken(x):  # type: ignore[no-untyped-def]
        raise RuntimeError("counter is broken")

    with pytest.raises(RuntimeError, match="counter is broken"):
        trim_messages(MESSAGES, max_tokens=10, token_counter=broken)


def test_a_counter_without_parameters_is_rejected() -> None:
    with pytest.raises(TypeError, match="token_counter must accept one argument"):
        trim_messages(MESSAGES, max_tokens=10, token_counter=lambda: 3)
