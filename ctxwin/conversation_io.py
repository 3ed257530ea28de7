"""Reading conversations from JSON and JSONL files (or stdin) for the CLI.

Accepted layouts: a JSON list of messages; a JSON object with a ``messages`` list; JSONL with one message per line;
JSONL with one conversation per line (a list, or an object with ``messages``). Every error names the file and
line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConversationFileError(f"{path}: no such file") from None
    except (UnicodeDecodeError, IsADirectoryError, PermissionError) as exc:
        raise ConversationFileError(f"{path}: cannot read: {exc}") from None


def _conversation(value: Any, where: str) -> tuple[list[Any], list[dict[str, Any]] | None]:
    if isinstance(value, list):
        return value, None
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        tools = value.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise ConversationFileError(f"{where}: 'tools' must be a list")
        return value["messages"], tools
    raise ConversationFileError(f"{where}: expected a list of messages or an object with a 'messages' list")


def _convert(raw: list[Any], where: str) -> list[BaseMessage]:
    try:
        return convert_to_messages(raw)
    except (ValueError, TypeError) as exc:
        raise ConversationFileError(f"{where}: {exc}") from None


def read_conversations(path: str) -> Iterator[Conversation | ConversationFileError]:
    """Yield each conversation in the file, or the error for a bad JSONL line (so callers can go on)."""
    text = _read_text(path)
    name = "<stdin>" if path == "-" else path
    if not text.strip():
        raise ConversationFileError(f"{name}: empty file")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None  # not one JSON document: read it as JSONL, line by line
    if whole is not None and not (isinstance(whole, dict) and "role" in whole):
        messages, tools = _conversation(whole, name)
        yield Conversation(name, None, _convert(messages, name), tools)
        return
    yield from _read_jsonl(text, name)


def _read_jsonl(text: str, name: str) -> Iterator[Conversation | ConversationFileError]:
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            rows.append((number, ConversationFileError(f"{name}:{number}: not valid JSON: {exc.msg}")))
    # One message per line (OpenAI message dicts) makes one conversation; otherwise each line is a conversation.
    parsed = [v for _, v in rows if not isinstance(v, ConversationFileError)]
    if parsed and all(isinstance(v, dict) and "role" in v for v in parsed):
        broken = next((v for _, v in rows if isinstance(v, ConversationFileError)), None)
        if broken is not None:  # a conversation missing a message would be silent data loss
            raise broken
        yield Conversation(name, None, _convert(parsed, name))
        return
    for number, value in rows:
        where = f"{name}:{number}"
        if isinstance(value, ConversationFileError):
            yield value
            continue
        try:
            messages, tools = _conversation(value, where)
            yield Conversation(name, number, _convert(messages, where), tools)
        except ConversationFileError as exc:
            yield exc
