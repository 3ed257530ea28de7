"""A fast path in front of the content-keyed cache, for messages the engine has seen before as the same object.

Re-trimming a growing conversation passes mostly the same message objects again. Building each one's content key
costs about as much as everything else in a warm trim together, so this memo remembers, by object identity, a
deep copy of the message's field values and its count. A message is recalled when it is the same object and its
fields compare equal to that copy, which catches reassigned fields and in-place changes to nested content alike.
(Equality is Python's, so replacing a nested ``1`` with ``1.0`` or ``True`` in place goes unnoticed.)

Only JSON-like values (str, numbers, None, lists and dicts of them) are copied; a message holding anything else
(an arbitrary ``artifact`` object, say) always takes the content-key path. Messages are noted when the content
key finds them, from their second sighting on, so a cold trim pays nothing for the memo. Messages are held
weakly; the memo is bounded like the cache it fronts.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

from ctxwin.messages import BaseMessage

_ATOMS = (str, int, float, bool, type(None))


class _NotJSON(Exception):
    pass


def _json_copy(value: Any) -> Any:
    if value.__class__ in _ATOMS:
        return value
    if value.__class__ is dict:
        return {k: _json_copy(v) for k, v in value.items()} if value else {}
    if value.__class__ is list:
        return [_json_copy(v) for v in value] if value else []
    raise _NotJSON


def _fields(message: BaseMessage) -> tuple[Any, ...]:
    return (*message.__dict__.values(), message.__pydantic_extra__)


class IdentityMemo:
    """``id(message) -> (weak reference, copy of its fields, count)``, bounded, thread-safe."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: dict[int, tuple[weakref.ref[BaseMessage], tuple[Any, ...], float]] = {}
        self._lock = threading.Lock()

    def recall(self, messages: Sequence[BaseMessage]) -> list[float | None]:
        """Counts of the messages recalled by identity and unchanged fields; None for the others."""
        entries = self._entries
        found: list[float | None] = []
        with self._lock:
            for message in messages:
                entry = entries.get(id(message))
                hit = None
                if entry is not None and entry[0]() is message:
                    try:
                        if entry[1] == _fields(message):
                            hit = entry[2]
                    except Exception:  # a value whose comparison raises: use the content key instead
                        hit = None
                found.append(hit)
        return found

    def note(self, messages: Sequence[BaseMessage], counts: Sequence[float]) -> None:
        """Remember messages with a copy of their fields (messages with non-JSON values are skipped)."""
        entries = self._entries
        with self._lock:
            for message, count in zip(messages, counts, strict=True):
                try:
                    snapshot = tuple(_json_copy(v) for v in _fields(message))
                except _NotJSON:
                    continue
                entries.pop(id(message), None)
                entries[id(message)] = (weakref.ref(message), snapshot, count)
            while len(entries) > self.max_entries:
                del entries[next(iter(entries))]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
