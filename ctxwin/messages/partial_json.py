"""Parsing of JSON cut off mid-stream, as streamed tool-call arguments are."""

from __future__ import annotations

import json
from typing import Any

_CLOSERS = {"{": "}", "[": "]"}


def parse_partial_json(s: str, *, strict: bool = False) -> Any:
    """Parse ``s``, closing any string, object or array left open; ``None`` if brackets are mismatched.

    Raises ``json.JSONDecodeError`` when no prefix of the repaired text is valid JSON.
    """
    try:
        return json.loads(s, strict=strict)
    except json.JSONDecodeError:
        pass
    chars: list[str] = []
    stack: list[str] = []
    in_string = escaped = False
    for char in s:
        out = char
        if in_string:
            if char == '"' and not escaped:
                in_string = False
            elif char == "\n" and not escaped:
                out = "\\n"
            elif char == "\\":
                escaped = not escaped
            else:
                escaped = False
        elif char == '"':
            in_string, escaped = True, False
        elif char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif char in "}]":
            if not stack or stack[-1] != char:
                return None
            stack.pop()
        chars.append(out)
    if in_string:
        if escaped:
            chars.pop()
        chars.append('"')
    closing = "".join(reversed(stack))
    # Drop trailing characters until the rest parses: a dangling key or comma is not valid JSON.
    while chars:
        try:
            return json.loads("".join(chars) + closing, strict=strict)
        except json.JSONDecodeError:
            chars.pop()
    return json.loads(s, strict=strict)
