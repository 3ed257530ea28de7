"""Reading conversations from JSON and JSONL files (or stdin) for the CLI.

Accepted layouts: a JSON list of messages; a JSON object with a ``messages`` list; JSONL with one message per line;
JSONL with one conversation per line (a list, or an object with ``messages``). Every error names the file and
line.

A JSONL file of conversations is read line by line, so a file of millions of them is never held in memory, and
its lines are handed out as text: ``ctxwin fit --workers`` parses them in its worker processes
(``request_from_json``) instead of in the one process that reads the file. A single JSON document, and a JSONL
file of single messages (one conversation), are read whole.
"""

from __future__ import annotations

import io
import itertools
import json
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import IO, Any

from ctxwin.messages import BaseMessage, convert_to_messages


class ConversationFileError(ValueError):
    """A file that cannot be read as conversations; the message names the file and where."""


@dataclass(frozen=True)
class Conversation:
    """One conversation from a file: where it came from, and its messages or the error that stopped it."""

    source: str
    line: int | None
    messages: list[BaseMessage]
    tools: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class RawConversation:
    """The one conversation a whole file holds, its messages not converted yet."""

    source: str
    messages: list[Any]
    tools: list[dict[str, Any]] | None = None
    line: None = None


@dataclass(frozen=True)
class ConversationLine:
    """One line of a JSONL file of conversations, not parsed yet (``request_from_json`` parses it)."""

    source: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def _open(path: str) -> Any:
    if path == "-":
        return nullcontext(sys.stdin)
    try:
        return open(path, encoding="utf-8")
    except FileNotFoundError:
        raise ConversationFileError(f"{path}: no such file") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise ConversationFileError(f"{path}: cannot read: {exc}") from None


def _shape(value: Any) -> tuple[list[Any], list[dict[str, Any]] | None]:
    """A parsed conversation's messages and tools; the error says what was wrong (the caller says where)."""
    if isinstance(value, list):
        return value, None
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        tools = value.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise ConversationFileError("'tools' must be a list")
        return value["messages"], tools
    raise ConversationFileError("expected a list of messages or an object with a 'messages' list")


def request_from_json(text: str) -> dict[str, Any]:
    """One JSONL line as a request ``{"messages": [...], "tools": [...] or None}``, messages not converted.

    Raises ConversationFileError without a location (the caller knows the file and line).
    """
    value = _parse(text)
    if isinstance(value, ConversationFileError):
        raise value
    messages, tools = _shape(value)
    return {"messages": messages, "tools": tools}


def _convert(raw: list[Any], where: str) -> list[BaseMessage]:
    try:
        return convert_to_messages(raw)
    except (ValueError, TypeError) as exc:
        raise ConversationFileError(f"{where}: {exc}") from None


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value


def read_conversations(path: str) -> Iterator[Conversation | ConversationFileError]:
    """Yield each conversation in the file, or the error for a bad JSONL line (so callers can go on)."""
    for item in read_raw_conversations(path):
        if isinstance(item, RawConversation):  # the file's only conversation: its errors are the file's
            yield Conversation(item.source, None, _convert(item.messages, item.source), item.tools)
            continue
        try:
            request = request_from_json(item.text)
        except ConversationFileError as exc:
            yield ConversationFileError(f"{item.where}: {exc}")
            continue
        try:
            messages = _convert(request["messages"], item.where)
        except ConversationFileError as exc:
            yield exc
            continue
        yield Conversation(item.source, item.line, messages, request["tools"])


def read_raw_conversations(path: str) -> Iterator[RawConversation | ConversationLine]:
    """The file's one ``RawConversation``, or its lines of conversations one by one, as they are read."""
    name = "<stdin>" if path == "-" else path
    with _open(path) as handle:
        try:
            yield from _read_raw(handle, name)
        except UnicodeDecodeError as exc:
            raise ConversationFileError(f"{name}: cannot read: {exc}") from None


def _read_raw(handle: IO[str], name: str) -> Iterator[RawConversation | ConversationLine]:
    lines: Iterator[tuple[int, str]] = enumerate(handle, start=1)
    first = next(((n, text) for n, text in lines if text.strip()), None)
    if first is None:
        raise ConversationFileError(f"{name}: empty file")
    whole, lines = _one_document(first, lines, handle)
    if whole is not None and not _is_message(whole):
        try:
            messages, tools = _shape(whole)
        except ConversationFileError as exc:
            raise ConversationFileError(f"{name}: {exc}") from None
        yield RawConversation(name, messages, tools)
        return
    yield from _read_jsonl(((n, text) for n, text in lines if text.strip()), name)


def _one_document(
    first: tuple[int, str], lines: Iterator[tuple[int, str]], handle: IO[str]
) -> tuple[Any, Iterator[tuple[int, str]]]:
    """The file's value if it is one JSON document (else ``None``: JSONL), and its lines from the first on."""
    number, text = first
    try:
        value = json.loads(text)
    except json.JSONDecodeError:  # a JSON document over several lines, or JSONL whose first line is broken
        rest = handle.read()
        lines = itertools.chain([first], enumerate(io.StringIO(rest), start=number + 1))
        try:
            return json.loads(text + rest), lines
        except json.JSONDecodeError:
            return None, lines
    following = next(((n, t) for n, t in lines if t.strip()), None)
    if following is None:  # a single line: the whole file is this JSON document
        return value, iter([first])
    return None, itertools.chain([first, following], lines)


def _parse(text: str) -> Any:
    """The line's value, or the ConversationFileError saying why it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return ConversationFileError(f"not valid JSON: {exc.msg}")


def _read_jsonl(lines: Iterator[tuple[int, str]], name: str) -> Iterator[RawConversation | ConversationLine]:
    """JSONL: one message per line makes one conversation; otherwise each line is a conversation.

    The first line that parses decides: a message means the whole file is read (it is one conversation anyway);
    anything else means the lines are handed out as they come, unparsed.
    """
    head: list[tuple[int, str]] = []
    values: list[tuple[int, Any]] = []  # the head's parsed values, so no line is parsed twice
    value: Any = None
    for number, text in lines:
        head.append((number, text))
        values.append((number, value := _parse(text)))
        if not isinstance(value, ConversationFileError):
            break
    if _is_message(value):
        values += [(number, _parse(text)) for number, text in lines]
        parsed = [v for _, v in values if not isinstance(v, ConversationFileError)]
        if all(_is_message(v) for v in parsed):
            for number, v in values:
                if isinstance(v, ConversationFileError):  # a conversation missing a message: silent data loss
                    raise ConversationFileError(f"{name}:{number}: {v}")
            yield RawConversation(name, parsed)
            return
    for number, text in itertools.chain(head, lines):
        yield ConversationLine(name, number, text)


def read_tools(path: str | None) -> list[dict[str, Any]] | None:
    """Tool definitions from a JSON file (a list, or ``{"tools": [...]}``); None when no path is given."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            tools = json.load(handle)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConversationFileError(f"{path}: cannot read tool definitions: {exc}") from None
    if isinstance(tools, dict) and isinstance(tools.get("tools"), list):
        tools = tools["tools"]
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise ConversationFileError(f"{path}: expected a JSON list of tool definitions")
    return tools
