"""The on-disk format of FileChatMessageHistory and how to read it back after a crash.

One ``message_to_dict`` JSON object per line, every line written as ``{"type": "...`` by one ``write()``. A crash
can leave the last line cut short (a *torn* line: a prefix of a line we write, possibly followed by NUL bytes after
a power loss). Readers skip torn lines at the end of the file. The next appender closes them off: it ends the torn
line with a newline and writes a *seal* record, ``{"ctxwin_torn_lines": [[offset, length], ...]}``, naming exactly
the torn lines before it. So a torn line may only appear at the end of the file or right before the seal naming
it; anything else that is not a message is corruption (or a foreign file) and raises ``HistoryFormatError``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ctxwin.history.codec import message_json
from ctxwin.history.errors import HistoryFormatError
from ctxwin.messages import BaseMessage, message_from_dict

SEAL_KEY = "ctxwin_torn_lines"
# Every line we write starts with one of these (json.dumps keeps key order and its ", "/": " separators).
RECORD_PREFIX = b'{"type": "'
SEAL_PREFIX = b'{"' + SEAL_KEY.encode() + b'": '


@dataclass(frozen=True)
class SkippedLine:
    """A torn line that was skipped: 1-based line number, byte offset and length, and whether it was sealed."""

    line: int
    offset: int
    length: int
    sealed: bool


@dataclass(frozen=True)
class Line:
    number: int
    offset: int
    data: bytes


def encode_messages(messages: list[BaseMessage], *, ensure_ascii: bool) -> bytes:
    """The lines for ``messages``; a message that cannot be JSON fails here, before anything is written."""
    return b"".join(
        message_json(m, i, ensure_ascii=ensure_ascii).encode("utf-8") + b"\n" for i, m in enumerate(messages)
    )


def seal_record(torn: list[Line]) -> bytes:
    return json.dumps({SEAL_KEY: [[line.offset, len(line.data)] for line in torn]}).encode() + b"\n"


def is_torn(data: bytes) -> bool:
    """Whether an unparsable line looks like the start of one of our lines, cut short (NUL padding allowed)."""
    stripped = data.rstrip(b"\x00")
    return any(p.startswith(stripped) or stripped.startswith(p) for p in (RECORD_PREFIX, SEAL_PREFIX))


def split_lines(data: bytes, start: int = 0, first_number: int = 1) -> Iterator[Line]:
    """The lines of ``data`` (which begins at byte ``start`` of the file) with numbers and offsets."""
    offset = 0
    for number, chunk in enumerate(data.split(b"\n"), first_number):
        if offset < len(data):
            yield Line(number, start + offset, chunk)
        offset += len(chunk) + 1


def decode(line: Line, path: str) -> Any:
    """The JSON value of a line, or ``None`` when it does not parse (not JSON, not UTF-8, an over-long integer)."""
    try:
        return json.loads(line.data)
    except ValueError:
        return None
    except RecursionError:
        raise HistoryFormatError(
            f"{path}: the line at byte {line.offset} is nested too deeply to read; the file is corrupt or is not a "
            "ctxwin JSONL chat history"
        ) from None


def parse_history(data: bytes, path: str) -> tuple[list[BaseMessage], list[SkippedLine]]:
    """The messages of a whole file and the torn lines skipped; corruption raises ``HistoryFormatError``."""
    messages: list[BaseMessage] = []
    skipped: list[SkippedLine] = []
    pending: list[Line] = []
    for line in split_lines(data):
        if not line.data.strip():
            continue
        record = decode(line, path)
        if record is None:
            if not is_torn(line.data):
                raise HistoryFormatError(
                    f"{path}: line {line.number} (byte {line.offset}) is not JSON; the file is corrupt or is not a "
                    "ctxwin JSONL chat history"
                )
            pending.append(line)
        elif isinstance(record, dict) and set(record) == {SEAL_KEY}:
            if record[SEAL_KEY] != [[p.offset, len(p.data)] for p in pending]:
                raise HistoryFormatError(
                    f"{path}: line {line.number} records torn lines {record[SEAL_KEY]} that do not match the file "
                    f"(found {[[p.offset, len(p.data)] for p in pending]}); the file is corrupt"
                )
            skipped.extend(SkippedLine(p.number, p.offset, len(p.data), True) for p in pending)
            pending = []
        else:
            if pending:
                raise HistoryFormatError(
                    f"{path}: line {pending[0].number} (byte {pending[0].offset}) is cut short but more messages "
                    "follow it with no record of a crash; the file is corrupt"
                )
            messages.append(_message(record, line, path))
    skipped.extend(SkippedLine(p.number, p.offset, len(p.data), False) for p in pending)
    return messages, skipped


def check_first_line(line: Line | None, path: str) -> None:
    """Refuse to append to (or clear) a file whose first line shows it is not a ctxwin JSONL history."""
    if line is None or not line.data.strip():
        return
    record = decode(line, path)
    if record is None:
        if not is_torn(line.data):
            raise HistoryFormatError(f"{path}: not a ctxwin JSONL chat history (line 1 is not JSON); not modified")
    elif not (isinstance(record, dict) and set(record) == {SEAL_KEY}):
        _message(record, line, path)


def _message(record: Any, line: Line, path: str) -> BaseMessage:
    try:
        return message_from_dict(record)
    except (TypeError, ValueError, RecursionError) as exc:
        raise HistoryFormatError(
            f"{path}: line {line.number} is not a ctxwin message record ({exc}); is this a ctxwin JSONL chat history?"
        ) from None
