"""The trim engine's one cache: per counter, the token count of every message it has counted.

Each counter object (a TokenCounter, or a per-message callable) gets one ``CountCache``, made on first use and held
weakly by the counter, so it goes when the counter goes. A bound method is keyed by its object and function, because
``obj.method`` builds a new method object on every access. The cache finds a message's count two ways:

* **By identity**, for the same message object seen again (a chat loop re-trimming ``history + [new]``). Each
  counted message is noted with a *stamp* (``ctxwin.messages.stamp``) and recalled when it is the same object and
  its fields compare equal to the stamp; a message changed in place is recounted. Messages are noted from their
  first sighting, so the first re-trim after an append recalls every old message this way, and forgotten when they
  are collected. Messages without a stamp (holding non-JSON values) are never noted.
* **By content**, for an equal message that is another object (a history read back from a file each turn):
  ``message_key`` -> count, a bounded LRU.

It also remembers what was learned about the counter itself: whether a bare callable counts one message or a list
(``kind``), and a TokenCounter's request overhead (``overhead``), so neither is probed again on every call.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any, Literal

from ctxwin.messages import BaseMessage
from ctxwin.messages.stamp import stamp_of, unchanged

DEFAULT_MAX_ENTRIES = 1 << 17

Kind = Literal["message", "list"]

_ATOMS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = frozenset({dict, list})


def message_key(message: BaseMessage) -> Hashable:
    """A content key: equal messages get equal keys, and changing any field changes the key.

    The message's class and its field values in declaration order. Strings, numbers and None go in as they are (a
    string's hash is cached on the object, so re-keying is cheap); empty dicts and lists become their type; anything
    else is tagged with its type and ``repr``. Two values with the same type and repr are taken as equal: true for
    the JSON-like data messages carry; for other objects a change that does not show in their repr keeps the count.
    """
    parts: list[object] = [message.__class__]
    for value in message.__dict__.values():
        kind = value.__class__
        if kind in _ATOMS:
            parts.append(value)
        elif kind in _CONTAINERS and not value:
            parts.append(kind)
        else:
            parts.append((kind, repr(value)))
    extra = message.__pydantic_extra__
    if extra:
        parts.append((dict, repr(extra)))
    return tuple(parts)


class _Noted(weakref.ref[BaseMessage]):
    """An identity entry: a weak reference to the message carrying its stamp and count."""

    __slots__ = ("count", "key", "stamp")

    key: int
    stamp: tuple[Any, ...]
    count: float


class CountCache:
    """Per-message counts of one counter, by identity and by content; bounded, thread-safe (one lock per batch)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._by_key: OrderedDict[Hashable, float] = OrderedDict()
        self._by_id: dict[int, _Noted] = {}
        self._dead: list[_Noted] = []  # entries of collected messages, dropped under the lock at the next write
        self._lock = threading.Lock()
        self.kind: Kind | None = None
        self.overhead: tuple[int, bool] | None = None  # (request overhead, whether the counter is additive)

    def __len__(self) -> int:
        return len(self._by_key)

    def recall(self, messages: Sequence[BaseMessage]) -> list[float | None]:
        """The counts of the messages recalled by identity (None for the others); no message is keyed or read
        beyond one comparison of its fields with its stamp."""
        by_id = self._by_id
        with self._lock:
            noted_of = [by_id.get(id(message)) for message in messages]
        try:  # one pass in C as far as possible: a stamp compared with the fields it recorded
            return [
                noted.count
                if noted is not None
                and noted() is message
                and noted.stamp == (message.__class__, *message.__dict__.values(), message.__pydantic_extra__)
                else None
                for message, noted in zip(messages, noted_of, strict=True)
            ]
        except Exception:  # a value whose comparison raises (changed in place into a foreign object, or too deep)
            return [
                noted.count if noted is not None and noted() is message and unchanged(noted.stamp, message) else None
                for message, noted in zip(messages, noted_of, strict=True)
            ]

    def by_content(self, messages: Sequence[BaseMessage]) -> tuple[list[float | None], list[Hashable]]:
        """The counts of equal messages seen before (None where none was), and every message's content key, under
        which ``store`` files the counts made for the others. Messages found are noted by identity."""
        keys = list(map(message_key, messages))
        with self._lock:
            found = [self._by_key.get(key) for key in keys]
            for key, count in zip(keys, found, strict=True):
                if count is not None:
                    self._by_key.move_to_end(key)
        recalled = [(m, k, c) for m, k, c in zip(messages, keys, found, strict=True) if c is not None]
        self._note(recalled, by_content=False)
        return found, keys

    def store(self, counted: Sequence[tuple[BaseMessage, Hashable, float]]) -> None:
        """Remember freshly counted messages (message, content key, count) by content and by identity."""
        self._note(counted, by_content=True)

    def _note(self, counted: Sequence[tuple[BaseMessage, Hashable, float]], *, by_content: bool) -> None:
        if not counted:
            return
        entries: list[_Noted] = []
        for message, _, count in counted:
            stamp = stamp_of(message)
            if stamp is not None:
                noted = _Noted(message, self._dead.append)
                noted.key, noted.stamp, noted.count = id(message), stamp, count
                entries.append(noted)
        with self._lock:
            by_id, by_key = self._by_id, self._by_key
            while self._dead:
                dead = self._dead.pop()
                if by_id.get(dead.key) is dead:
                    del by_id[dead.key]
            for noted in entries:
                by_id.pop(noted.key, None)
                by_id[noted.key] = noted
            while len(by_id) > self.max_entries:
                del by_id[next(iter(by_id))]
            if by_content:
                for _, key, count in counted:
                    by_key[key] = count
                    by_key.move_to_end(key)
                while len(by_key) > self.max_entries:
                    by_key.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._by_key.clear()
            self._by_id.clear()
            self.kind = self.overhead = None


_registry_lock = threading.Lock()
_by_owner: weakref.WeakKeyDictionary[Any, dict[Any, CountCache]] = weakref.WeakKeyDictionary()


def cache_for(counter: Any) -> CountCache | None:
    """The cache belonging to ``counter``, made on first use; None if the counter cannot be held weakly."""
    if inspect.ismethod(counter):
        owner, part = counter.__self__, counter.__func__
    else:
        owner, part = counter, None
    with _registry_lock:
        try:
            caches = _by_owner.get(owner)
            if caches is None:
                caches = _by_owner[owner] = {}
        except TypeError:  # not weak-referenceable or not hashable: count afresh on every call
            return None
        cache = caches.get(part)
        if cache is None:
            cache = caches[part] = CountCache()
        return cache
