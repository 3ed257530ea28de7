"""The on-disk format of FileChatMessageHistory and how to read it back after a crash.

One ``message_to_dict`` JSON object per line, every line written as ``{"type": "...`` by one ``write()``. A crash
can leave the last line cut short (a *torn* line: a prefix of a line we write, without its newline, possibly
followed by NUL bytes after a power loss). Readers skip a torn last line with a warning. The next appender closes
it off: it ends the torn line with a newline and writes a *seal* record, ``{"ctxwin_torn_lines": [[offset, length],
...]}``, naming exactly the torn lines before it (if that appender crashes too, its seal is torn in turn, and the
next seals both). So a line that is not JSON is a crash's only as the file's last line without a newline, as a
line followed by a torn seal, or as a line a seal names; anything else is damage (or a foreign file): a complete
line (it ends with its newline) that does not parse was not cut short, and raises ``HistoryFormatError`` naming the
file and line, so no acknowledged message is ever dropped with only a warning.

Damage that still parses (a zeroed block starting at a record's newline, bytes deleted across a line boundary
that splice two records into one) is caught by what each record carries after its message: its sequence number in
the file (1, 2, ... from the first record or from the last ``clear``) and the CRC-32 of the line up to the
checksum's digits, ``..., "seq": 7, "crc": "1c291ca3"}``. A record whose checksum does not match, or whose number
does not follow the previous record's, raises ``HistoryFormatError``: a message missing in the middle is never
read back as a shorter history. A line without the two fields was written by a ctxwin before they existed (into
an old file, or by an old version appending to a new one): it is read as before, unchecked, and the numbering
starts again at 1 after it. An appender continues the numbering from the file's last record, under its lock.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ctxwin.history._codec import message_json
from ctxwin.history._errors import HistoryFormatError
from ctxwin.messages import BaseMessage, message_from_dict

SEAL_KEY = "ctxwin_torn_lines"
# Every line we write starts with one of these (json.dumps keeps key order and its ", "/": " separators).
RECORD_PREFIX = b'{"type": "'
SEAL_PREFIX = b'{"' + SEAL_KEY.encode() + b'": '
SEQ_KEY, CRC_KEY = "seq", "crc"
# A checked line ends with this, eight hex digits and '"}': the CRC covers every byte before the digits.
CRC_MARK = b', "' + CRC_KEY.encode() + b'": "'
_CRC_TAIL = len(CRC_MARK) + 10


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


def encode_messages(messages: list[BaseMessage], *, ensure_ascii: bool, first_seq: int) -> bytes:
    """The checked lines for ``messages``, numbered from ``first_seq``; a message that cannot be JSON fails here,
    before anything is written."""
    lines = []
    for i, message in enumerate(messages):
        text = message_json(message, i, ensure_ascii=ensure_ascii).encode("utf-8")
        body = text[:-1] + b', "' + SEQ_KEY.encode() + b'": ' + str(first_seq + i).encode() + CRC_MARK
        lines.append(body + b"%08x" % zlib.crc32(body) + b'"}\n')
    return b"".join(lines)


def record_seq(record: Any, line: Line, path: str, where: Callable[[Line], str]) -> int | None:
    """A message record's sequence number, ``None`` for a record written before records had one; its checksum
    was checked by ``decode``, so a record that has one field and not the other is damage."""
    seq = record.get(SEQ_KEY) if isinstance(record, dict) else None
    checked = line.data.rstrip(b"\x00")[-_CRC_TAIL:].startswith(CRC_MARK)
    if seq is None and not checked:
        return None
    if not checked or isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise HistoryFormatError(f"{path}: {where(line)} is damaged: its sequence number or checksum is malformed")
    return seq


def check_seq(seq: int | None, previous: int | None, line: Line, path: str, where: Callable[[Line], str]) -> None:
    """Refuse a record whose number does not follow ``previous`` (the last record's; ``None``: there was none, or
    it was written before records were numbered, and the numbering starts again at 1): a record is missing, or
    is out of place."""
    expected = 1 if previous is None else previous + 1
    if seq is not None and seq != expected:
        missing = (
            "it is out of place" if seq < expected
            else f"record {expected} is missing" if seq == expected + 1
            else f"records {expected}-{seq - 1} are missing"
        )
        raise HistoryFormatError(
            f"{path}: {where(line)} is record {seq} but record {expected} was expected there: {missing} (damaged "
            "or spliced lines); no message was skipped: restore the file"
        )


def seal_record(torn: list[Line]) -> bytes:
    return json.dumps({SEAL_KEY: [[line.offset, len(line.data)] for line in torn]}).encode() + b"\n"


def is_seal(record: Any) -> bool:
    return isinstance(record, dict) and set(record) == {SEAL_KEY}


def is_torn(data: bytes) -> bool:
    """Whether an unparsable line can be one of our lines cut short (NUL padding allowed): it starts as ours do, and
    holds no whole JSON value with more after it (a line whose newline was damaged, not a crash's prefix)."""
    stripped = data.rstrip(b"\x00")
    if not any(p.startswith(stripped) or stripped.startswith(p) for p in (RECORD_PREFIX, SEAL_PREFIX)):
        return False
    try:
        json.JSONDecoder().raw_decode(stripped.decode("utf-8", "replace"))
    except ValueError:
        return True
    except RecursionError:
        return False
    return False


def check_torn_tail(torn: list[Line], unterminated: bool, path: str, where: Callable[[Line], str]) -> None:
    """Refuse the unparsable lines that end a file (``torn``, in order; ``unterminated``: the file does not end
    with a newline) unless a crash can have left them: the last without its newline, each other one followed by a
    torn seal (its appender crashed while sealing it). ``where(line)`` names a line in the error."""
    for index, line in enumerate(torn):
        last = index == len(torn) - 1
        cut = unterminated if last else is_seal_prefix(torn[index + 1].data)
        if not (cut and is_torn(line.data)):
            raise HistoryFormatError(
                f"{path}: {where(line)} is damaged: it is not JSON, and a crash cannot have left it (only the last "
                "line, without its newline, is cut short by one); no message was skipped: restore the file or "
                "remove that line"
            )


def is_seal_prefix(data: bytes) -> bool:
    """Whether a line is the start of a seal record, cut short."""
    stripped = data.rstrip(b"\x00")
    return SEAL_PREFIX.startswith(stripped) or stripped.startswith(SEAL_PREFIX)


def split_lines(data: bytes, start: int = 0, first_number: int = 1) -> Iterator[Line]:
    """The lines of ``data`` (which begins at byte ``start`` of the file) with numbers and offsets."""
    offset = 0
    for number, chunk in enumerate(data.split(b"\n"), first_number):
        if offset < len(data):
            yield Line(number, start + offset, chunk)
        offset += len(chunk) + 1


def decode(line: Line, path: str, where: Callable[[Line], str] | None = None) -> Any:
    """The JSON value of a line, or ``None`` when it does not parse (not JSON, not UTF-8, an over-long integer).
    NUL bytes after it are a power loss's padding, not part of it: a whole record before them is kept. A line that
    ends with a checksum must match it (a crash only cuts a line short, so never leaves a wrong one): else it is
    damage, ``HistoryFormatError`` naming ``where(line)`` (by default its number and offset)."""
    data = line.data.rstrip(b"\x00")
    tail = data[-_CRC_TAIL:]
    if tail.startswith(CRC_MARK) and tail.endswith(b'"}'):
        try:
            matches = int(tail[len(CRC_MARK) : -2], 16) == zlib.crc32(data[: len(data) - 10])
        except ValueError:
            matches = False
        if not matches:
            name = where(line) if where else f"line {line.number} (byte {line.offset})"
            raise HistoryFormatError(
                f"{path}: {name} is damaged: its checksum does not match its bytes; no message was skipped: "
                "restore the file"
            )
    try:
        return json.loads(data)
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
    previous: int | None = None
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
        elif is_seal(record):
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
            seq = record_seq(record, line, path, _numbered)
            check_seq(seq, previous, line, path, _numbered)
            previous = seq
    check_torn_tail(pending, not data.endswith(b"\n"), path, _numbered)
    skipped.extend(SkippedLine(p.number, p.offset, len(p.data), False) for p in pending)
    return messages, skipped


def _numbered(line: Line) -> str:
    return f"line {line.number} (byte {line.offset})"


def check_first_line(line: Line | None, path: str) -> None:
    """Refuse to append to (or clear) a file whose first line shows it is not a ctxwin JSONL history."""
    if line is None or not line.data.strip():
        return
    record = decode(line, path)
    if record is None:
        if not is_torn(line.data):
            raise HistoryFormatError(f"{path}: not a ctxwin JSONL chat history (line 1 is not JSON); not modified")
    else:
        check_record(record, line, path)


def check_record(record: Any, line: Line, path: str, where: Callable[[Line], str] | None = None) -> None:
    """Refuse a parsed line that is neither a seal nor a message record; ``where(line)`` names it (by default by
    its number)."""
    if not is_seal(record):
        _message(record, line, path, where)


def _message(record: Any, line: Line, path: str, where: Callable[[Line], str] | None = None) -> BaseMessage:
    try:
        return message_from_dict(record)
    except (TypeError, ValueError, RecursionError) as exc:
        raise HistoryFormatError(
            f"{path}: {where(line) if where else f'line {line.number}'} is not a ctxwin message record ({exc}); is "
            "this a ctxwin JSONL chat history?"
        ) from None
