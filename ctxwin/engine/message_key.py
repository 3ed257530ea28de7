"""A content key for a message: equal messages get equal keys, and changing any field changes the key.

The key is a tuple of the message's class and its field values in declaration order. Strings, numbers and None go
in as they are (a string's hash is cached on the object, so re-keying an unchanged conversation is cheap); empty
dicts and lists become their type; anything else is tagged with its type and ``repr``. Two values with the same
type and repr are treated as equal: true for the JSON-like data messages carry, and for other objects it means a
change that does not show in their repr does not invalidate a cached count.
"""

from __future__ import annotations

from collections.abc import Hashable

from ctxwin.messages import BaseMessage

_PLAIN = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = frozenset({dict, list})


def message_key(message: BaseMessage) -> Hashable:
    parts: list[object] = [message.__class__]
    for value in message.__dict__.values():
        kind = value.__class__
        if kind in _PLAIN:
            parts.append(value)
        elif kind in _CONTAINERS and not value:
            parts.append(kind)
        else:
            parts.append((kind, repr(value)))
    extra = message.__pydantic_extra__
    if extra:
        parts.append((dict, repr(extra)))
    return tuple(parts)
