"""Parsing of JSON cut off mid-stream, as streamed tool-call arguments are: LangChain's ``parse_partial_json`` result,
found in one scan instead of a ``json.loads`` retry per dropped character.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ctxwin.messages._limits import MAX_NESTING_DEPTH, MAX_TOOL_ARGS_DEPTH, NestingError, json_too_deep

_CLOSERS = {"{": "}", "[": "]"}
_BRACKET_OR_QUOTE = re.compile(r'[\[\]{}"]')
_IN_STRING = re.compile(r'["\\\n]')
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_ESCAPES = r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'
_STRING = re.compile(rf'"[^"\\]*(?:{_ESCAPES}[^"\\]*)*"')
_STRICT_STRING = re.compile(rf'"[^"\\\x00-\x1f]*(?:{_ESCAPES}[^"\\\x00-\x1f]*)*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERAL = re.compile(r"null|true|false|NaN|Infinity|-Infinity")
# Parser states: what may come next.
_VALUE, _ARRAY_START, _OBJECT_START, _KEY, _COLON, _AFTER_VALUE = range(6)
_CLOSABLE = frozenset({_ARRAY_START, _OBJECT_START, _AFTER_VALUE})
_RETRIES = 3


def parse_partial_json(s: str, *, strict: bool = False) -> Any:
    """Parse ``s``, closing any string, object or array left open; ``None`` if brackets are mismatched.

    Raises ``json.JSONDecodeError`` when no prefix of the repaired text is valid JSON, and ``ValueError`` for text
    nested deeper than ``MAX_NESTING_DEPTH`` (where LangChain's raises ``RecursionError``).
    """
    return _parse(s, strict, MAX_NESTING_DEPTH)


def partial_arguments(s: str) -> Any:
    """``parse_partial_json`` for streamed tool-call arguments, which sit three levels deep in a message."""
    return _parse(s, False, MAX_TOOL_ARGS_DEPTH)


def _parse(s: str, strict: bool, limit: int) -> Any:
    if json_too_deep(s, limit):
        raise NestingError(f"nested deeper than {limit} levels")
    try:
        return json.loads(s, strict=strict)
    except json.JSONDecodeError:
        pass
    closed = _close_strings(s)
    if closed is None:
        return None
    text, stack = closed
    closing = "".join(reversed(stack))
    try:  # usually the text was cut inside a string or after a value: closing it is enough
        return json.loads(text + closing, strict=strict)
    except json.JSONDecodeError:
        pass
    for cut in _cut_points(text, stack, strict):
        try:
            return json.loads(text[:cut] + closing, strict=strict)
        except json.JSONDecodeError:
            continue
    return json.loads(s, strict=strict)


def _close_strings(s: str) -> tuple[str, list[str]] | None:
    """LangChain's first pass: newlines inside strings escaped, a string left open closed (a dangling backslash
    dropped), and the closers of the brackets left open; None if a closing bracket does not match."""
    pieces: list[str] = []
    stack: list[str] = []
    position, size = 0, len(s)
    while (found := _BRACKET_OR_QUOTE.search(s, position)) is not None:
        at = found.start()
        char = s[at]
        pieces.append(s[position : at + 1])
        position = at + 1
        if char in _CLOSERS:
            stack.append(_CLOSERS[char])
            continue
        if char != '"':
            if not stack or stack[-1] != char:
                return None
            stack.pop()
            continue
        while True:  # inside a string: a backslash takes the next character with it, whatever it is
            inner = _IN_STRING.search(s, position)
            if inner is None:
                pieces += [s[position:], '"']
                return "".join(pieces), stack
            at = inner.start()
            mark = s[at]
            if mark == '"':
                pieces.append(s[position : at + 1])
                position = at + 1
                break
            if mark == "\n":
                pieces += [s[position:at], "\\n"]
                position = at + 1
            elif at + 1 < size:
                pieces.append(s[position : at + 2])
                position = at + 2
            else:  # the text ends on a backslash: drop it
                pieces += [s[position:at], '"']
                return "".join(pieces), stack
    pieces.append(s[position:])
    return "".join(pieces), stack


def _cut_points(text: str, stack: list[str], strict: bool) -> list[int]:
    """The longest prefixes of ``text`` (longest first, at most a few) that ``stack``'s closers complete into a
    valid JSON document: the scan follows the grammar until the text stops being the start of any document, and
    notes each point where the innermost value is complete (or its container empty) with exactly ``stack`` open.

    Open brackets are tracked as ids, equal for equal stacks (each id names a parent id and a closer), so
    comparing the open stack with ``stack`` costs nothing.
    """
    ids: dict[tuple[int, str], int] = {}

    def push(parent: int, closer: str) -> int:
        return ids.setdefault((parent, closer), len(ids) + 1)

    wanted = 0
    for closer in stack:
        wanted = push(wanted, closer)
    string = _STRICT_STRING if strict else _STRING
    open_ids: list[int] = [0]
    open_closers: list[str] = []
    cuts: list[int] = []
    state, position, size = _VALUE, 0, len(text)
    while True:
        position = _WHITESPACE.match(text, position).end()  # type: ignore[union-attr]  # matches the empty text
        if state in _CLOSABLE and open_ids[-1] == wanted and (open_closers or state == _AFTER_VALUE):
            cuts.append(position)
        if position >= size:
            break
        char = text[position]
        if state in (_VALUE, _ARRAY_START, _KEY, _OBJECT_START) and char == '"':
            found = string.match(text, position)
            if found is None:
                break
            position = found.end()
            state = _COLON if state in (_KEY, _OBJECT_START) else _AFTER_VALUE
        elif state == _COLON:
            if char != ":":
                break
            position, state = position + 1, _VALUE
        elif state == _AFTER_VALUE or (char in "]}" and state in (_ARRAY_START, _OBJECT_START)):
            if char == "," and open_closers:
                position += 1
                state = _VALUE if open_closers[-1] == "]" else _KEY
            elif open_closers and char == open_closers[-1]:
                open_closers.pop()
                open_ids.pop()
                position, state = position + 1, _AFTER_VALUE
            else:
                break
        elif state in (_KEY, _OBJECT_START):
            break
        elif char in _CLOSERS:
            open_closers.append(_CLOSERS[char])
            open_ids.append(push(open_ids[-1], _CLOSERS[char]))
            position, state = position + 1, _ARRAY_START if char == "[" else _OBJECT_START
        else:
            found = _LITERAL.match(text, position) or _NUMBER.match(text, position)
            if found is None:
                break
            position, state = found.end(), _AFTER_VALUE
    return cuts[::-1][:_RETRIES]
