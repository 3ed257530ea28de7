"""What a history gives back is what was added: odd keys, tuples, deep nesting and lone surrogates (issue 19).

The persistent stores refuse, before writing anything, what JSON would silently change, and keep lone surrogates
exactly; the in-memory store holds the objects themselves, so it keeps everything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.history._codec import MAX_DEPTH
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.history._memory import InMemoryChatMessageHistory
from ctxwin.history._sqlite import SQLiteChatMessageHistory
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage


def nested(levels: int) -> Any:
    """``levels`` alternating lists and dicts around a string."""
    value: Any = "leaf"
    for level in range(levels):
        value = {"k": value} if level % 2 else [value]
    return value


def refused_or_kept(history: BaseChatMessageHistory, message: BaseMessage, error: type[Exception], match: str) -> None:
    """The in-memory store keeps ``message``; the others refuse the batch with ``error`` and store nothing."""
    batch = [HumanMessage("first of the batch"), message]
    if isinstance(history, InMemoryChatMessageHistory):
        history.add_messages(batch)
        assert history.messages == batch
        return
    with pytest.raises(error, match=match):
        history.add_messages(batch)
    assert history.messages == []


@pytest.mark.parametrize(
    ("message", "match"),
    [  # the fuzzing finding: {1: "a", "1": "b"} came back as {"1": "b"}
        (HumanMessage("x", additional_kwargs={"x": {1: "a", "1": "b"}}),
         r"messages\[1\]: additional_kwargs\['x'\] has the key 1 \(int\)"),
        (AIMessage("", tool_calls=[{"name": "f", "args": {"a": {2: 3}}, "id": "c"}]),
         r"messages\[1\]: tool_calls\[0\]\['args'\]\['a'\] has the key 2 \(int\)"),
        (ToolMessage("r", tool_call_id="c", artifact={None: 1}), r"artifact has the key None \(NoneType\)"),
        (HumanMessage("x", response_metadata={"m": [{True: 1}]}), r"response_metadata\['m'\]\[0\] has the key True"),
        (HumanMessage("x", additional_kwargs={"x": {1.5: 0}}), r"has the key 1.5 \(float\)"),
    ],
)
def test_non_string_keys_are_refused_by_persistent_stores(
    history: BaseChatMessageHistory, message: BaseMessage, match: str
) -> None:
    refused_or_kept(history, message, ValueError, match)


def test_tuples_are_refused_by_persistent_stores(history: BaseChatMessageHistory) -> None:
    message = HumanMessage("x", additional_kwargs={"pair": [0, (1, 2)]})
    refused_or_kept(history, message, TypeError, r"messages\[1\]: additional_kwargs\['pair'\]\[1\] is a tuple")


@pytest.mark.slow
@pytest.mark.parametrize("levels", [MAX_DEPTH, MAX_DEPTH + 1, 100_000])
def test_nesting_beyond_the_limit_is_refused(history: BaseChatMessageHistory, levels: int) -> None:
    message = HumanMessage("x")
    message.additional_kwargs["deep"] = nested(levels - 1)  # edited in place: not re-checked (level 1: the dict)
    if levels <= MAX_DEPTH:
        history.add_messages([message])
        assert history.messages == [message]
    else:
        refused_or_kept(history, message, ValueError, rf"additional_kwargs.* is nested deeper than {MAX_DEPTH} levels")


def test_circular_data_is_refused(history: BaseChatMessageHistory) -> None:
    loop: list[Any] = []
    loop.append(loop)
    message = HumanMessage("x")
    message.additional_kwargs["loop"] = loop  # a message built with it is refused (nested too deep) at once
    refused_or_kept(history, message, ValueError,
                    r"messages\[1\]: additional_kwargs\['loop'\]\[0\]\[0\]\[0\]\[0\]\[0\]\[\.\.\.\] is nested deeper")


SURROGATES = [
    HumanMessage("half an emoji: \ud83d and a low one: \udc80", id="h\ud800"),
    AIMessage("", tool_calls=[{"name": "f", "args": {"k\udfff": ["\ud800"]}, "id": "c"}]),
    ToolMessage("r\udbff", tool_call_id="c", artifact={"a": "\udc00"}),
    HumanMessage("ünïcode 世界 stays as it is"),
]


def test_lone_surrogates_round_trip_exactly(history: BaseChatMessageHistory) -> None:
    history.add_messages(SURROGATES)
    assert history.messages == SURROGATES


def test_lone_surrogates_in_jsonl_are_escaped_and_the_file_stays_utf8(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    FileChatMessageHistory(path).add_messages(SURROGATES)
    lines = path.read_bytes().decode("utf-8").splitlines()  # no UnicodeDecodeError: the file is valid UTF-8
    assert "\\ud83d" in lines[1] and "ünïcode 世界" in lines[4]  # only the record that needs escapes has them
    assert FileChatMessageHistory(path).messages == SURROGATES


def test_surrogate_pair_as_two_code_points_is_refused_not_merged(history: BaseChatMessageHistory) -> None:
    """Found by this suite's fuzzing: JSON reads the escapes of "\\ud83d\\ude00" back as the one character 😀."""
    refused_or_kept(history, HumanMessage("smile \ud83d\ude00"), ValueError,
                    r"messages\[1\]: holds the surrogates '\\ud83d\\ude00' side by side, .* character '😀'")


def test_session_id_must_be_valid_unicode(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="session_id"):
        SQLiteChatMessageHistory(tmp_path / "chat.db", "user\ud800")
