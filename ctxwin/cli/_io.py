"""Reading conversations from JSON and JSONL files (or stdin) for the CLI, in every layout ``ctxwin fit`` writes back,
each error naming the file and line. A JSONL file of conversations is read line by line as undecoded bytes, so the
workers parse it and no file is held whole.
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

from ctxwin.batch._conversation import Conversation, ConversationFileError, nesting_error
from ctxwin.messages import BaseMessage, convert_to_messages
from ctxwin.messages._convert import request_messages, request_tools
from ctxwin.messages._request_forms.registry import limit_keys, required_limit_keys

BOM = b"\xef\xbb\xbf"


class JSONSyntaxError(ConversationFileError):
    """Text that is not JSON (as opposed to JSON that is too deep, or not UTF-8)."""


def long_number_error() -> ConversationFileError:
    return ConversationFileError(f"not valid JSON: an integer with more than {sys.get_int_max_str_digits():,} digits")


@dataclass(frozen=True)
class RawConversation:
    """The one conversation a whole file holds, its messages not converted yet.

    ``document`` is the file's JSON object when it was one (``{"messages": ..., ...}``), so that its other keys can
    be written back; ``None`` for a list of messages.
    """

    source: str
    messages: list[Any]
    tools: list[dict[str, Any]] | None = None
    line: None = None
    document: dict[str, Any] | None = None

    @property
    def request(self) -> dict[str, Any]:
        """The conversation as a request: the file's object, or ``{"messages": [...]}`` for a list."""
        return self.document if self.document is not None else {"messages": self.messages}


@dataclass(frozen=True)
class ConversationLine:
    """One line of a JSONL file of conversations, not decoded yet (``request_from_json`` parses it)."""

    source: str
    line: int
    text: bytes

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def open_bytes(path: str) -> Any:
    """``path`` (``-``: stdin) opened for reading bytes; ConversationFileError saying why it cannot be."""
    if path == "-":
        return nullcontext(sys.stdin.buffer)
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise ConversationFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConversationFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


def json_error(exc: json.JSONDecodeError, where: str) -> str:
    """``not valid JSON: <why> at <where>``; some of json's reasons end in "at" already ("Unterminated string
    starting at")."""
    return f"not valid JSON: {exc.msg}{'' if exc.msg.endswith(' at') else ' at'} {where}"


def loads(text: str | bytes) -> Any:
    """A JSON value; ConversationFileError (no location prefix) saying what is wrong, with line and column.

    ``bytes`` must be UTF-8 (a byte-order mark is skipped).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ConversationFileError(f"not valid UTF-8 (byte {exc.start + 1:,}: {exc.reason})") from None
    text = text.rstrip("\r\n")  # a JSONL line's end: an error past it would be on a "line 2" the file lacks
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # One line of text (a JSONL line, which the caller names by its line in the file): its column only.
        where = f"line {exc.lineno} column {exc.colno}" if "\n" in text else f"column {exc.colno}"
        raise JSONSyntaxError(json_error(exc, where)) from None
    except RecursionError:
        raise nesting_error() from None
    except ValueError:  # the only other ValueError json.loads raises: an integer past Python's conversion limit
        raise long_number_error() from None


def _shape(value: Any) -> tuple[list[Any], list[dict[str, Any]] | None]:
    """A parsed conversation's messages (a Responses request's ``input``) and tools; the error says what was wrong
    (the caller says where)."""
    if isinstance(value, list):
        return value, None
    if isinstance(value, dict) and (
        isinstance(value.get("messages"), list)
        or ("messages" not in value and isinstance(value.get("input"), (list, str)))
    ):
        tools = value.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise ConversationFileError("'tools' must be a list")
        return request_messages(value), tools
    raise ConversationFileError(
        "expected a list of messages or an object with a 'messages' list (or a Responses request's 'input')"
    )


def request_from_json(text: str | bytes) -> dict[str, Any]:
    """One JSONL line as a request: the line's object (``{"messages"|"input", "system", "tools", ...}``), a list
    of messages as ``{"messages": [...]}``; messages not converted.

    Raises ConversationFileError without a location (the caller knows the file and line).
    """
    value = loads(text)
    _shape(value)
    return value if isinstance(value, dict) else {"messages": value}


def request_model(request: Any) -> str | None:
    """The model a request object names in its ``model`` key, or None (a list of messages names none)."""
    model = request.get("model") if isinstance(request, dict) else None
    return model if isinstance(model, str) and model.strip() else None


def _convert(request: Any, where: str) -> tuple[list[BaseMessage], list[dict[str, Any]] | None]:
    """A request's messages (its system prompt first) and its tools in OpenAI's function form."""
    try:
        return convert_to_messages(request), request_tools(request)
    except (ValueError, TypeError) as exc:
        raise ConversationFileError(f"{where}: {exc}") from None
    except RecursionError:
        raise ConversationFileError(f"{where}: {nesting_error()}") from None


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value


def read_conversations(path: str) -> Iterator[Conversation | ConversationFileError]:
    """Yield each conversation in the file, or the error for a bad JSONL line (so callers can go on)."""
    for item in read_raw_conversations(path):
        if isinstance(item, RawConversation):  # the file's only conversation: its errors are the file's
            yield Conversation(item.source, None, *_convert(item.request, item.source), request_model(item.document))
            continue
        try:
            request = request_from_json(item.text)
        except ConversationFileError as exc:
            yield ConversationFileError(f"{item.where}: {exc}")
            continue
        try:
            messages, tools = _convert(request, item.where)
        except ConversationFileError as exc:
            yield exc
            continue
        yield Conversation(item.source, item.line, messages, tools, request_model(request))


def read_raw_conversations(path: str, name: str | None = None) -> Iterator[RawConversation | ConversationLine]:
    """The file's one ``RawConversation``, or its lines of conversations one by one, as they are read.

    ``name``: what reports call the file (default: ``path``, ``<stdin>`` for ``-``), e.g. for a copy of stdin."""
    name = name or ("<stdin>" if path == "-" else path)
    with open_bytes(path) as handle:
        try:
            yield from _read_raw(handle, name)
        except OSError as exc:
            raise ConversationFileError(f"{name}: cannot read: {exc.strerror or exc}") from None


# How much of a file is looked at for a NUL byte: JSON text never holds one (a string escapes it), while binary files
# (images, archives, executables, UTF-16 text) do early on.
_SNIFF = 8192


def _read_raw(handle: IO[bytes], name: str) -> Iterator[RawConversation | ConversationLine]:
    peek = getattr(handle, "peek", None)
    head = peek(_SNIFF)[:_SNIFF] if peek is not None else b""
    if b"\0" in head:  # one error for the file, not one per line of bytes
        at = head.index(b"\0") + 1
        raise ConversationFileError(f"{name}: not a text file (a NUL byte at byte {at:,}); expected UTF-8 JSON(L)")
    lines: Iterator[tuple[int, bytes]] = enumerate(handle, start=1)
    first = next(((n, raw) for n, raw in lines if raw.strip() and raw.strip() != BOM), None)
    if first is None:
        raise ConversationFileError(f"{name}: empty file")
    whole, lines = _one_document(first, lines, handle, name)
    if whole is not None and not _is_message(whole):
        try:
            messages, tools = _shape(whole)
        except ConversationFileError as exc:
            raise ConversationFileError(f"{name}: {exc}") from None
        yield RawConversation(name, messages, tools, document=whole if isinstance(whole, dict) else None)
        return
    yield from _read_jsonl(((n, raw) for n, raw in lines if raw.strip()), name)


def _one_document(
    first: tuple[int, bytes], lines: Iterator[tuple[int, bytes]], handle: IO[bytes], name: str
) -> tuple[Any, Iterator[tuple[int, bytes]]]:
    """The file's value if it is one JSON document (else ``None``: JSONL), and its lines from the first on.

    A document over several lines that is broken past its first line is reported once, with the line and column
    in the file, rather than read again as JSONL and reported line by line.
    """
    number, raw = first
    try:
        value = loads(raw)
    except JSONSyntaxError:  # a JSON document over several lines, or JSONL whose first line is broken
        rest = handle.read()
        lines = itertools.chain([first], enumerate(io.BytesIO(rest), start=number + 1))
        try:
            text = (raw + rest).decode("utf-8-sig")
        except UnicodeDecodeError:
            return None, lines  # JSONL with a line that is not UTF-8: that line's error
        return _document(text, number, name), lines
    except ConversationFileError as exc:  # a whole line that is too deep or not UTF-8
        value = exc
    following = next(((n, t) for n, t in lines if t.strip()), None)
    if following is None:  # a single line: the whole file is this JSON document
        if isinstance(value, ConversationFileError):
            raise ConversationFileError(f"{name}: {value}") from None
        return value, iter([first])
    return None, itertools.chain([first, following], lines)


def _document(text: str, first_line: int, name: str) -> Any:
    """The value of a file whose first line is not JSON by itself, or None when it reads as JSONL."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" or exc.lineno == 1:  # JSONL: several values, or a broken first line
            return None
        line = exc.lineno + first_line - 1
        raise ConversationFileError(f"{name}: {json_error(exc, f'line {line} column {exc.colno}')}") from None
    except RecursionError:
        raise ConversationFileError(f"{name}: {nesting_error()}") from None
    except ValueError:
        raise ConversationFileError(f"{name}: {long_number_error()}") from None


def _parse(raw: bytes) -> Any:
    """The line's value, or the ConversationFileError saying why it is not one."""
    try:
        return loads(raw)
    except ConversationFileError as exc:
        return exc


def _read_jsonl(lines: Iterator[tuple[int, bytes]], name: str) -> Iterator[RawConversation | ConversationLine]:
    """JSONL: one message per line makes one conversation; otherwise each line is a conversation.

    The first line that parses decides: a message means the whole file is read (it is one conversation anyway);
    anything else means the lines are handed out as they come, unparsed.
    """
    head: list[tuple[int, bytes]] = []
    values: list[tuple[int, Any]] = []  # the head's parsed values, so no line is parsed twice
    value: Any = None
    for number, raw in lines:
        head.append((number, raw))
        values.append((number, value := _parse(raw)))
        if not isinstance(value, ConversationFileError):
            break
    if _is_message(value):
        values += [(number, _parse(raw)) for number, raw in lines]
        parsed = [v for _, v in values if not isinstance(v, ConversationFileError)]
        if all(_is_message(v) for v in parsed):
            for number, v in values:
                if isinstance(v, ConversationFileError):  # a conversation missing a message: silent data loss
                    raise ConversationFileError(f"{name}:{number}: {v}")
            yield RawConversation(name, parsed)
            return
    for number, raw in itertools.chain(head, lines):
        yield ConversationLine(name, number, raw)


def read_tools(path: str | None) -> list[dict[str, Any]] | None:
    """Tool definitions from a JSON file (a list, or ``{"tools": [...]}``); None when no path is given."""
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            tools = loads(handle.read())
    except OSError as exc:
        raise ConversationFileError(f"{path}: cannot read tool definitions: {exc.strerror or exc}") from None
    except ConversationFileError as exc:
        raise ConversationFileError(f"{path}: cannot read tool definitions: {exc}") from None
    if isinstance(tools, dict) and isinstance(tools.get("tools"), list):
        tools = tools["tools"]
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise ConversationFileError(f"{path}: expected a JSON list of tool definitions")
    return tools


def fitted_document(original: Any, request: dict[str, Any], *, reserved: bool = False) -> Any:
    """What ``ctxwin fit`` writes for a conversation read as ``original`` (a list of messages or a request object)
    and fitted into ``request`` (``Plan.request``, in the form ``original`` is in): the object with its messages
    (``input``) and system prompt (``system``, ``instructions``) replaced and its other keys as they were (its own
    tools and tool_choice, which the plan used, included). Its reply limit is the one the plan reserved, under the
    key the object used: an own limit above a reserve given (``reserved``) would be refused by the provider or
    overrun the window; an object without a limit gets one when a reserve was given, and where the form requires
    one (Anthropic's). A list stays a list unless the fitted request has a system prompt apart (Anthropic's), which
    only an object holds. The plan's ``model`` is not written: the file keeps its own."""
    limits = set(limit_keys())
    required = required_limit_keys()
    body = {key: value for key, value in request.items() if key not in {"model", "tools", "tool_choice", *limits}}
    limit = next(((key, request[key]) for key in limits if key in request), None)
    if not isinstance(original, dict):
        if limit is not None and limit[0] in required:
            body[limit[0]] = limit[1]
        items = "input" if "input" in body else "messages"
        return body[items] if "system" not in body and "instructions" not in body else body
    kept = {key: value for key, value in original.items() if key not in ("system", "instructions", *limits)}
    own = next((key for key in original if key in limits), None)
    if limit is not None and (own or reserved or limit[0] in required):
        body[own or limit[0]] = limit[1]
    return {**kept, **body}
