"""The on-disk format of FileChatMessageHistory (docs/history.md) and how to read it back after a crash: which lines
a crash can have cut short, and which prove damage, a line out of place or a line of another history."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ctxwin.history._errors import HistoryFormatError
from ctxwin.history._identity import is_identity, seed
from ctxwin.messages import BaseMessage, message_from_dict

SEAL_KEY = "ctxwin_torn_lines"
HEADER_KEY, HEADER_FORMAT, IDENTITY_KEY = "ctxwin_history", 1, "identity"
# Every line we write starts with one of these (json.dumps keeps key order and its ", "/": " separators).
RECORD_PREFIX = b'{"type": "'
SEAL_PREFIX = b'{"' + SEAL_KEY.encode() + b'": '
HEADER_PREFIX = b'{"' + HEADER_KEY.encode() + b'": '
SEQ_KEY, CRC_KEY = "seq", "crc"
# A checked line ends with this, eight hex digits and '"}': the CRC covers every byte before the digits.
CRC_MARK = b', "' + CRC_KEY.encode() + b'": "'
_CRC_TAIL = len(CRC_MARK) + 10
_Where = Callable[["Line"], str]


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


@dataclass(frozen=True)
class Header:
    """The line that gives a file its identity: every checked line after it is bound to ``seed``."""

    offset: int
    data: bytes
    seed: int


def message_lines(texts: list[bytes], *, first_seq: int, seed: int) -> bytes:
    """The checked lines of the message records ``texts`` (``message_json`` as UTF-8), numbered from ``first_seq``
    and bound to the history whose identity gives ``seed``."""
    return b"".join(
        _checked(text[:-1] + b', "' + SEQ_KEY.encode() + b'": ' + str(seq).encode(), seed)
        for seq, text in enumerate(texts, first_seq)
    )


def header_line(identity: str) -> bytes:
    """The first line of a history: its format and identity, checked on its own (it is what binds the rest)."""
    return _checked(json.dumps({HEADER_KEY: HEADER_FORMAT, IDENTITY_KEY: identity}).encode()[:-1], 0)


def seal_record(torn: list[Line], seed: int) -> bytes:
    return _checked(json.dumps({SEAL_KEY: [[line.offset, len(line.data)] for line in torn]}).encode()[:-1], seed)


def _checked(body: bytes, seed: int) -> bytes:
    """``body`` (a JSON object without its closing brace) closed with its checksum and a newline."""
    body += CRC_MARK
    return body + b"%08x" % zlib.crc32(body, seed) + b'"}\n'


def is_checked(line: Line) -> bool:
    return line.data.rstrip(b"\x00")[-_CRC_TAIL:].startswith(CRC_MARK)


def record_seq(record: Any, line: Line, path: str, where: _Where, *, bound: bool) -> int | None:
    """A message record's sequence number, ``None`` for a record written before records had one; its checksum
    was checked by ``decode``, so a record that has one field and not the other is damage. After the file's
    header (``bound``) every record must have both."""
    seq = record.get(SEQ_KEY) if isinstance(record, dict) else None
    checked = is_checked(line)
    if seq is None and not checked and not bound:
        return None
    if seq is None and not checked:
        raise HistoryFormatError(
            f"{path}: {where(line)} has no checksum, so it does not belong to this history: it was copied from "
            "another file or written by an older ctxwin; no message was skipped: restore the file or remove that line"
        )
    if not checked or isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise HistoryFormatError(f"{path}: {where(line)} is damaged: its sequence number or checksum is malformed")
    return seq


def check_seq(seq: int | None, previous: int | None, line: Line, path: str, where: _Where) -> None:
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
            f"{path}: {where(line)} is record {seq} but record {expected} was expected there: {missing} (damaged, "
            "moved or spliced lines); no message was skipped: restore the file"
        )


def is_seal(record: Any) -> bool:
    return isinstance(record, dict) and SEAL_KEY in record and set(record) <= {SEAL_KEY, CRC_KEY}


def is_header(record: Any) -> bool:
    return isinstance(record, dict) and HEADER_KEY in record


def read_header(record: dict[str, Any], line: Line, path: str, where: _Where) -> Header:
    """The header of a file, from its parsed line (its checksum checked by ``decode``)."""
    version = record.get(HEADER_KEY)
    if isinstance(version, int) and not isinstance(version, bool) and version > HEADER_FORMAT:
        raise HistoryFormatError(
            f"{path}: written in history format {version} by a newer ctxwin; this one reads format {HEADER_FORMAT}. "
            "Upgrade ctxwin"
        )
    if version != HEADER_FORMAT or set(record) != {HEADER_KEY, IDENTITY_KEY, CRC_KEY} or not is_checked(line) or (
        not is_identity(record[IDENTITY_KEY])
    ):
        raise HistoryFormatError(f"{path}: {where(line)} is damaged: it is not a well-formed history header")
    return Header(line.offset, line.data, seed(record[IDENTITY_KEY]))


def is_torn(data: bytes) -> bool:
    """Whether an unparsable line can be one of our lines cut short (NUL padding allowed): it starts as ours do, and
    holds no whole JSON value with more after it (a line whose newline was damaged, not a crash's prefix)."""
    stripped = data.rstrip(b"\x00")
    if not any(p.startswith(stripped) or stripped.startswith(p) for p in (RECORD_PREFIX, SEAL_PREFIX, HEADER_PREFIX)):
        return False
    try:
        json.JSONDecoder().raw_decode(stripped.decode("utf-8", "replace"))
    except ValueError:
        return True
    except RecursionError:
        return False
    return False


def check_torn_tail(torn: list[Line], unterminated: bool, path: str, where: _Where) -> None:
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


def decode(line: Line, path: str, seed: int, where: _Where | None = None) -> Any:
    """The JSON value of a line, or ``None`` when it does not parse (not JSON, not UTF-8, an over-long integer).
    NUL bytes after it are a power loss's padding, not part of it: a whole record before them is kept. A line that
    ends with a checksum must match it, started from ``seed`` (the identity of the history the line is in): a crash
    only cuts a line short, so never leaves a wrong one; else the line is damaged or another history's,
    ``HistoryFormatError`` naming ``where(line)`` (by default its number and offset)."""
    data = line.data.rstrip(b"\x00")
    tail = data[-_CRC_TAIL:]
    if tail.startswith(CRC_MARK) and tail.endswith(b'"}'):
        try:
            matches = int(tail[len(CRC_MARK) : -2], 16) == zlib.crc32(data[: len(data) - 10], seed)
        except ValueError:
            matches = False
        if not matches:
            name = where(line) if where else _numbered(line)
            raise HistoryFormatError(
                f"{path}: {name} is damaged: its checksum does not match its bytes and this history's identity "
                "(or the line was copied from another history); no message was skipped: restore the file"
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


def parse_history(data: bytes, path: str) -> tuple[list[BaseMessage], list[SkippedLine], Header | None]:
    """The messages of a whole file, the torn lines skipped and the file's header; corruption, a line out of place
    or a line of another history raises ``HistoryFormatError``.

    A file is its header line, then checked records (messages numbered 1, 2, ... and seals), each bound to the
    header's identity. A file written before headers existed holds unbound records first (checked against their
    bytes only, numbered from 1 or not at all), then the header its first newer appender wrote, then bound ones.
    """
    messages: list[BaseMessage] = []
    skipped: list[SkippedLine] = []
    pending: list[Line] = []
    previous: int | None = None
    header: Header | None = None
    for line in split_lines(data):
        if not line.data.strip():
            continue
        record = decode(line, path, header.seed if header else 0)
        if record is None:
            if not is_torn(line.data):
                raise HistoryFormatError(
                    f"{path}: line {line.number} (byte {line.offset}) is not JSON; the file is corrupt or is not a "
                    "ctxwin JSONL chat history"
                )
            pending.append(line)
            continue
        if is_seal(record):
            check_seal(record, line, pending, path, _numbered, bound=header is not None)
            skipped.extend(SkippedLine(p.number, p.offset, len(p.data), True) for p in pending)
            pending = []
            continue
        if pending:
            raise HistoryFormatError(
                f"{path}: line {pending[0].number} (byte {pending[0].offset}) is cut short but more messages "
                "follow it with no record of a crash; the file is corrupt"
            )
        if is_header(record):
            if header is not None:
                raise HistoryFormatError(
                    f"{path}: line {line.number} (byte {line.offset}) is a second history header: lines of another "
                    "history were spliced in; no message was skipped: restore the file"
                )
            header, previous = read_header(record, line, path, _numbered), None
            continue
        messages.append(_message(record, line, path))
        seq = record_seq(record, line, path, _numbered, bound=header is not None)
        check_seq(seq, previous, line, path, _numbered)
        previous = seq
    check_torn_tail(pending, not data.endswith(b"\n"), path, _numbered)
    skipped.extend(SkippedLine(p.number, p.offset, len(p.data), False) for p in pending)
    return messages, skipped, header


def check_seal(record: dict[str, Any], line: Line, torn: list[Line], path: str, where: _Where, *, bound: bool) -> None:
    """Refuse a seal that does not name exactly the torn lines before it (``torn``), or, after the header
    (``bound``), that has no checksum."""
    found = [[p.offset, len(p.data)] for p in torn]
    if record[SEAL_KEY] != found:
        raise HistoryFormatError(
            f"{path}: {where(line)} records torn lines {record[SEAL_KEY]} that do not match the file (found {found}); "
            "the file is corrupt"
        )
    if bound and not is_checked(line):
        raise HistoryFormatError(
            f"{path}: {where(line)} has no checksum, so it does not belong to this history; the file is corrupt"
        )


def _numbered(line: Line) -> str:
    return f"line {line.number} (byte {line.offset})"


def check_first_line(line: Line | None, path: str) -> Header | None:
    """Refuse to append to (or clear) a file whose first line shows it is not a ctxwin JSONL history; the file's
    header when that line is one."""
    if line is None or not line.data.strip():
        return None
    record = decode(line, path, 0)
    if record is None:
        if not is_torn(line.data):
            raise HistoryFormatError(f"{path}: not a ctxwin JSONL chat history (line 1 is not JSON); not modified")
        return None
    if is_header(record):
        return read_header(record, line, path, _numbered)
    check_record(record, line, path)
    return None


def check_record(record: Any, line: Line, path: str, where: _Where | None = None) -> None:
    """Refuse a parsed line that is neither a seal, a header nor a message record; ``where(line)`` names it (by
    default by its number)."""
    if not is_seal(record) and not is_header(record):
        _message(record, line, path, where)


def _message(record: Any, line: Line, path: str, where: _Where | None = None) -> BaseMessage:
    try:
        return message_from_dict(record)
    except (TypeError, ValueError, RecursionError) as exc:
        raise HistoryFormatError(
            f"{path}: {where(line) if where else f'line {line.number}'} is not a ctxwin message record ({exc}); is "
            "this a ctxwin JSONL chat history?"
        ) from None
