"""The trim engine's one cache: per counter, the token count of every message it has counted.

Each counter object (a TokenCounter, or a per-message callable) gets one ``CountCache``, made on first use and held
weakly by the counter, so it goes when the counter goes. A bound method is keyed by its object and function, because
``obj.method`` builds a new method object on every access. The cache finds a message's count two ways:

* **By identity**, for the same message object seen again (a chat loop re-trimming ``history + [new]``). Each
  counted message is noted with a *stamp* built by reference, never by copying: its field values, and for list and
  dict fields a flat walk of their keys and items plus their lengths. A message is recalled when it is the same
  object and every stamp entry is the same object (``is``, which never reads a string), so a reassigned field, a
  nested value changed in place, or a container that grew or shrank is recounted; a value replaced by an equal copy
  is recounted too (safe). Messages are noted from their first sighting, and forgotten when they are collected.
  Messages holding anything but JSON-like values (str, numbers, None, lists and dicts) are never noted: a change
  inside an arbitrary object does not show in a stamp.
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
from dataclasses import dataclass
from operator import is_
from typing import Any, Literal

from ctxwin.messages import BaseMessage

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


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a message held when it was counted, by reference: values and keys in walk order, container lengths."""

    refs: list[Any]
    sizes: list[int]

    def matches(self, other: Stamp) -> bool:
        refs = self.refs
        return len(refs) == len(other.refs) and all(map(is_, refs, other.refs)) and self.sizes == other.sizes


def stamp_of(message: BaseMessage) -> Stamp | None:
    """The message's stamp, or None when it holds something other than JSON-like values.

    Breadth-first with a work list (no recursion); linear in the message's size, and no string is read.
    """
    refs = [message.__class__, *message.__dict__.values(), message.__pydantic_extra__]
    sizes: list[int] = []
    todo = [value for value in refs[1:] if value.__class__ not in _ATOMS]
    for value in todo:  # the list grows while it is walked
        kind = value.__class__
        if kind is list:
            sizes.append(len(value))
            refs += value
            todo += [item for item in value if item.__class__ not in _ATOMS]
        elif kind is dict:
            sizes.append(len(value))
            refs += value.keys()
            items = value.values()
            refs += items
            todo += [item for item in items if item.__class__ not in _ATOMS]
        else:
            return None
    return Stamp(refs, sizes)


class _Noted(weakref.ref[BaseMessage]):
    """An identity entry: a weak reference to the message carrying its stamp and count."""

    __slots__ = ("count", "key", "stamp")

    key: int
    stamp: Stamp
    count: float


@dataclass(frozen=True, slots=True)
class Miss:
    """A message the cache did not know: the keys its count is stored under once it is counted."""

    key: Hashable
    stamp: Stamp | None


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

    def lookup(self, messages: Sequence[BaseMessage]) -> tuple[list[float | None], dict[int, Miss]]:
        """The known counts of ``messages`` (None where unknown), and for each unknown position its ``Miss``."""
        stamps = list(map(stamp_of, messages))
        found: list[float | None] = []
        by_id = self._by_id
        with self._lock:
            for message, stamp in zip(messages, stamps, strict=True):
                noted = by_id.get(id(message))
                hit = (
                    noted is not None
                    and stamp is not None
                    and noted() is message
                    and noted.stamp.matches(stamp)
                )
                found.append(noted.count if hit else None)  # type: ignore[union-attr]
        misses = {i: Miss(message_key(messages[i]), stamps[i]) for i, count in enumerate(found) if count is None}
        if misses:
            recalled: list[tuple[BaseMessage, Miss, float]] = []
            with self._lock:
                for i in list(misses):
                    count = self._by_key.get(misses[i].key)
                    if count is not None:
                        self._by_key.move_to_end(misses[i].key)
                        found[i] = count
                        recalled.append((messages[i], misses.pop(i), count))
            self._note(recalled, by_content=False)
        return found, misses

    def store(self, counted: Sequence[tuple[BaseMessage, Miss, float]]) -> None:
        """Remember freshly counted messages by content and by identity."""
        self._note(counted, by_content=True)

    def _note(self, counted: Sequence[tuple[BaseMessage, Miss, float]], *, by_content: bool) -> None:
        if not counted:
            return
        entries: list[_Noted] = []
        for message, miss, count in counted:
            if miss.stamp is not None:
                noted = _Noted(message, self._dead.append)
                noted.key, noted.stamp, noted.count = id(message), miss.stamp, count
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
                for _, miss, count in counted:
                    by_key[miss.key] = count
                    by_key.move_to_end(miss.key)
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
