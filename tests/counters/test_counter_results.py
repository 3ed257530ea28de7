"""What a counter returns is checked where it is used: a bad count raises an error naming the counter and the
value, never a negative total or a crash further on."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest

from ctxwin.counters._base import BaseTokenCounter, checked_count
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage
from ctxwin.trim import trim_messages

BAD = [None, "3", float("nan"), float("inf"), True, -1, -0.5, [1], 10**400]
MESSAGES = [HumanMessage("hello there"), AIMessage("hi", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])]


class WordCounter(BaseTokenCounter):
    """A plugin's counter whose tokenizer returns ``result`` for one word."""

    name = "words"

    def __init__(self, result: Any) -> None:
        self.result = result

    def count_text(self, text: str) -> int:
        return self.result if text == "there" else len(text.split())  # type: ignore[no-any-return]

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        return [self.count_text(word) for text in texts for word in text.split()[-1:] or [""]]


class DuckCounter:
    """A counter that is no BaseTokenCounter: the protocol's methods, and its declaration that a request counts the
    sum of its messages plus 3."""

    name = "duck"
    additive = True
    request_overhead = 3

    def __init__(self, result: Any) -> None:
        self.result = result

    def count_text(self, text: str) -> int:
        return len(text)

    def count_message(self, message: BaseMessage) -> Any:
        return self.result if message.text == "hello there" else 4

    def count_messages(self, messages: Sequence[BaseMessage], *, tools: Any = None) -> Any:
        return sum(self.count_message(m) for m in messages) + 3


def error_for(value: Any) -> type[Exception]:
    return ValueError if isinstance(value, (int, float)) and not isinstance(value, bool) else TypeError


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_a_plugin_counter_is_named_with_what_it_returned(value: Any) -> None:
    counter = WordCounter(value)
    match = (rf"token counter 'words' returned {value!r} for 'hello there'; "
             r"expected a number from 0 to 2\*\*53").replace("[", r"\[")
    with pytest.raises(error_for(value), match=match):
        counter.count_messages(MESSAGES)
    with pytest.raises(error_for(value), match=match):
        counter.count_message(MESSAGES[0])
    with pytest.raises(error_for(value), match=match):
        trim_messages(MESSAGES, max_tokens=100, token_counter=counter)


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_a_counter_outside_the_base_class_is_checked_by_the_engine(value: Any) -> None:
    if isinstance(value, list):
        value = {"tokens": 1}
    with pytest.raises(error_for(value), match=r"token counter 'duck' returned .* expected a number from 0 to 2\*\*53"):
        trim_messages(MESSAGES, max_tokens=100, token_counter=DuckCounter(value))


def test_a_counter_that_declares_nothing_is_counted_by_whole_lists() -> None:
    class Undeclared:
        name = "plain"

        def __init__(self) -> None:
            self.lists: list[int] = []

        def count_text(self, text: str) -> int:
            return len(text.split())

        def count_message(self, message: BaseMessage) -> int:
            raise AssertionError("an undeclared counter is never asked for one message's count")

        def count_messages(self, messages: Sequence[BaseMessage], *, tools: Any = None) -> int:
            self.lists.append(len(messages))
            return sum(len(m.text.split()) for m in messages) + 3

    counter = Undeclared()
    kept = trim_messages(MESSAGES, max_tokens=counter.count_messages(MESSAGES[-1:]), token_counter=counter)
    assert kept == MESSAGES[-1:] and counter.lists


@pytest.mark.parametrize(
    ("additive", "overhead", "match"),
    [("yes", 3, "additive must be a bool, got 'yes'"), (True, -1, "request_overhead must be an int >= 0, got -1"),
     (True, None, "request_overhead must be an int >= 0, got None")],
)
def test_a_bad_declaration_is_a_type_error_naming_the_counter(additive: Any, overhead: Any, match: str) -> None:
    counter = DuckCounter(1)
    counter.additive, counter.request_overhead = additive, overhead  # type: ignore[misc]
    with pytest.raises(TypeError, match=rf"token counter 'duck'.*{re.escape(match)}"):
        trim_messages(MESSAGES, max_tokens=100, token_counter=counter)


def test_a_batch_of_the_wrong_length_is_named() -> None:
    class Short(WordCounter):
        def count_texts(self, texts: Sequence[str]) -> list[int]:
            return [1]

    with pytest.raises(ValueError, match=r"token counter 'words' returned 1 counts for 3 items"):
        Short(1).count_message_batch(MESSAGES)


def test_good_counts_pass_unchanged() -> None:
    assert checked_count(3, "c", "x") == 3 and checked_count(2.5, "c", "x") == 2.5
    assert WordCounter(1).count_messages(MESSAGES) > 0
