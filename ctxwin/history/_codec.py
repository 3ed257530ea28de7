"""One message as one JSON text: the record format the JSONL and SQLite histories store. Anything JSON would silently
change (non-string keys, tuples, NaN, too deep a nesting) is refused before anything is written (docs/history.md).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.messages import BaseMessage, message_to_dict
from ctxwin.messages._limits import MAX_NESTING_DEPTH

# The messages' own limit (a field itself is level 1); checked again here because a message edited in place after
# it was built is not re-checked, and a record nested past it could not be read back.
MAX_DEPTH = MAX_NESTING_DEPTH

# A parent chain, rendered only for an error message: (parent, key) pairs back to a message field.
_Path = tuple[Any, ...] | None
_SHOWN_KEYS = 6
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def message_json(message: BaseMessage, index: int, *, ensure_ascii: bool = False) -> str:
    """``message_to_dict`` as JSON that reads back equal; refused with the message's index before any write."""
    try:
        record = message_to_dict(message)
    except (TypeError, ValueError, RecursionError) as exc:  # e.g. a circular reference in additional_kwargs
        raise InvalidTypeError(f"messages[{index}]: cannot be stored as JSON: {exc}") from None
    _check_storable(record["data"], index)
    try:
        text = json.dumps(record, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"messages[{index}]: cannot be stored as JSON: {exc}") from None
    if not is_utf8(text):  # a lone surrogate: only its escaped form is valid UTF-8
        pair = _SURROGATE_PAIR.search(text)
        if pair:
            joined = pair.group().encode("utf-16", "surrogatepass").decode("utf-16")
            raise InvalidInputError(
                f"messages[{index}]: holds the surrogates {pair.group()!r} side by side, which JSON reads back as "
                f"the one character {joined!r}; store that character instead"
            )
        ensure_ascii = True
    return json.dumps(record, ensure_ascii=True, allow_nan=False) if ensure_ascii else text


def is_utf8(text: str) -> bool:
    """False for text holding a lone surrogate, which neither a UTF-8 file nor SQLite can store."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_storable(fields: dict[str, Any], index: int) -> None:
    """Walk the message's data without recursion; raise at the first thing JSON would not give back as it is."""
    stack: list[tuple[Any, int, _Path]] = [(value, 1, (None, name)) for name, value in fields.items()]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, (dict, list, tuple)) and depth > MAX_DEPTH:
            raise InvalidInputError(f"messages[{index}]: {_render(path)} is nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise InvalidInputError(
                        f"messages[{index}]: {_render(path)} has the key {key!r} ({type(key).__name__}); JSON would "
                        "turn it into a string (merging it with an equal string key), so only string keys are stored"
                    )
                stack.append((item, depth + 1, (path, key)))
        elif isinstance(value, tuple):
            raise InvalidTypeError(
                f"messages[{index}]: {_render(path)} is a tuple, which JSON would read back as a list; "
                "store a list instead"
            )
        elif isinstance(value, list):
            stack.extend((item, depth + 1, (path, position)) for position, item in enumerate(value))


def _render(path: _Path) -> str:
    """``additional_kwargs['x'][0]`` for the chain ``(((None, 'additional_kwargs'), 'x'), 0)``; a deep one is cut."""
    keys: list[Any] = []
    while path is not None:
        path, key = path
        keys.append(key)
    field, *rest = reversed(keys)
    shown = "".join(f"[{key!r}]" for key in rest[:_SHOWN_KEYS])
    return f"{field}{shown}{'[...]' if len(rest) > _SHOWN_KEYS else ''}"
