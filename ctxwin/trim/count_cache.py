"""The one cache of message counts: per counter, the token count of every message it has counted.

Each counter object (a TokenCounter, or a per-message callable) gets one ``CountCache``, made on first use and held
weakly by the counter, so it goes when the counter goes. A bound method is keyed by its object and function, because
``obj.method`` builds a new method object on every access.

A message is written with ``marshal`` (its class and field values, in C, exact about types: ``1``, ``1.0`` and
``True`` count differently), and the cache finds its count two ways:

* **By content**: a digest of that serialization -> count, a bounded LRU. Equal content gives the same key whatever
  object holds it (a history read back from storage), and a message changed anywhere, however deep, gets another
  key and is counted again. Values marshal cannot write (an arbitrary ``artifact`` object) are keyed by their type
  and ``repr`` instead.
* **By identity**, for the same object seen again (a chat loop re-trimming ``history + [new]``): its id -> its
  class, serialization and count. Recalling it writes the object again and compares the bytes, all in C, with no digest
  and no look-up by content: a field reassigned, a nested value changed in place, a list that grew all show. An id
  reused by another object is recalled only when that object is written the same, and then the count is right.
  A chunk of messages is written in one marshal call and compared with the noted bytes joined; only when that
  differs (something changed) is each message compared on its own.

Writing a message costs about what copying its text does, a fraction of tokenizing it, so a cold trim pays little
for the cache, and a re-trim pays one serialization and comparison per message it reaches.

``CountView`` is the cache as one plan sees it: a plan's messages do not change while it runs (steps copy, never
mutate), so a plan looks each message up in the cache once and then by identity in the view.

The cache also remembers whether a bare callable counts one message or a list (``kind``), so that is detected once.
"""

from __future__ import annotations

import hashlib
import inspect
import marshal
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from itertools import compress
from operator import itemgetter
from typing import Any, Literal

from ctxwin.messages import BaseMessage

DEFAULT_MAX_ENTRIES = 1 << 17

Kind = Literal["message", "list"]

# marshal format 2 (``_written_bytes``): no back-references, whose flags follow reference counts and would make equal
# content differ.
_dumps = marshal.dumps
_LIST_HEADER = len(_dumps([], 2))  # a list's type code and length, before its items


def content_key(message: Any) -> Hashable:
    """A message's content key: equal for equal messages, different when any field differs (see the module
    docstring). Works for any pydantic model: ctxwin's messages and a caller's LangChain messages alike."""
    data = _written_bytes(message)
    if data is not None:
        return message.__class__, _digest(data)
    values = (*message.__dict__.values(), message.__pydantic_extra__)  # a value marshal cannot write:
    return message.__class__, tuple((value.__class__, repr(value)) for value in values)  # type and repr


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class CountCache:
    """Per-message counts of one counter, by content and by identity; bounded, thread-safe (one lock per batch)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._by_content: OrderedDict[Hashable, float] = OrderedDict()
        self._by_id: dict[int, tuple[type, bytes, float]] = {}  # id -> class, bytes written, count
        self._lock = threading.Lock()
        self.kind: Kind | None = None

    def __len__(self) -> int:
        return len(self._by_content)

    def recall(self, messages: Sequence[Any]) -> list[float | None]:
        """The counts of the messages recalled by identity (None for the others): each message noted before is
        written again and compared with what was noted; messages never noted are not written."""
        with self._lock:
            noted = list(map(self._by_id.get, map(id, messages)))
        entries = list(filter(None, noted))
        if not entries:
            return noted  # type: ignore[return-value]  # all None
        if _written_as_noted(list(compress(messages, noted)), entries):  # the common case: nothing changed
            return [None if entry is None else entry[2] for entry in noted]
        try:  # _written_bytes inlined: this runs for every message of a chunk where something changed
            return [
                entry[2]
                if entry is not None
                and entry[1] == _dumps((*m.__dict__.values(), m.__pydantic_extra__), 2)
                and entry[0] is m.__class__
                else None
                for m, entry in zip(messages, noted, strict=True)
            ]
        except ValueError:  # a message marshal cannot write (changed in place into one): never noted by identity
            return [
                entry[2] if entry is not None and entry[1] == _written_bytes(m) and entry[0] is m.__class__ else None
                for m, entry in zip(messages, noted, strict=True)
            ]

    def lookup(self, messages: Sequence[Any]) -> tuple[list[float | None], list[Any]]:
        """The counts of messages counted before, found by content (None for the others), and a note per message
        for ``store``, which files the counts made for the others. Messages found are noted by identity."""
        notes = list(map(_note_of, messages))
        keys = [note[0] for note in notes]
        with self._lock:
            counts = self._by_content
            found = list(map(counts.get, keys))
            if found.count(None) < len(found):
                for message, note, count in zip(messages, notes, found, strict=True):
                    if count is not None:
                        counts.move_to_end(note[0])
                        self._note_id(message, note, count)
        return found, notes

    def store(self, messages: Sequence[Any], notes: Sequence[Any], counts: Sequence[float]) -> None:
        """Remember the counts made for ``messages`` (with their ``lookup`` notes), by content and by identity,
        dropping the oldest past ``max_entries``."""
        with self._lock:
            by_content = self._by_content
            for message, note, count in zip(messages, notes, counts, strict=True):
                by_content[note[0]] = count
                self._note_id(message, note, count)
            while len(by_content) > self.max_entries:
                by_content.popitem(last=False)
            by_id = self._by_id
            while len(by_id) > self.max_entries:
                del by_id[next(iter(by_id))]

    def _note_id(self, message: Any, note: tuple[Hashable, bytes | None], count: float) -> None:
        if note[1] is not None:  # written by marshal: recalled by identity by writing it again
            self._by_id.pop(id(message), None)
            self._by_id[id(message)] = (message.__class__, note[1], count)

    def clear(self) -> None:
        with self._lock:
            self._by_content.clear()
            self._by_id.clear()
            self.kind = None


def _note_of(message: Any) -> tuple[Hashable, bytes | None]:
    """A message's content key, and its serialization (None when marshal cannot write it: not noted by identity)."""
    data = _written_bytes(message)
    if data is None:
        return content_key(message), None
    return (message.__class__, _digest(data)), data


def _written_bytes(message: Any) -> bytes | None:
    """The message's field values written by marshal; None when marshal cannot write them."""
    try:
        return _dumps((*message.__dict__.values(), message.__pydantic_extra__), 2)
    except ValueError:
        return None


def _written_as_noted(messages: list[Any], entries: list[tuple[type, bytes, float]]) -> bool:
    """Whether each message is of its entry's class and written as its entry notes, checked in one marshal call for
    them all (saving the calls' own cost). A value's serialization is self-delimiting, so the list's equals the list
    header followed by the noted ones joined only if each message's equals its own."""
    if list(map(type, messages)) != list(map(itemgetter(0), entries)):
        return False
    noted = b"".join(map(itemgetter(1), entries))
    try:
        written = _dumps([(*m.__dict__.values(), m.__pydantic_extra__) for m in messages], 2)
    except ValueError:  # a message marshal cannot write, or one nested too deep inside the list
        return False
    return len(written) == _LIST_HEADER + len(noted) and written.endswith(noted)


class CountView:
    """The cache as one plan (or one ``PlanSession``) sees it: counts by message identity, each message keyed in the
    cache once. The messages counted are held, so no id is reused while the view lives; ``retain`` forgets the
    others. ``count_batch`` counts the messages the cache does not know (None: no cache, e.g. a counter that cannot
    be held weakly)."""

    def __init__(self, cache: CountCache | None, count_batch: Callable[[Sequence[BaseMessage]], list[int]]) -> None:
        self._cache = cache
        self._count_batch = count_batch
        self._counts: dict[int, int] = {}
        self._held: list[BaseMessage] = []

    def each(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Per-message counts; unseen messages are looked up in the cache, the rest counted in one batch."""
        counts: list[Any] = list(map(self._counts.get, map(id, messages)))  # C loops: totals run on every step
        if None in counts:
            missing = [i for i, count in enumerate(counts) if count is None]
            fresh_messages = [messages[i] for i in missing]
            for i, message, count in zip(missing, fresh_messages, self._fresh(fresh_messages), strict=True):
                self._counts[id(message)] = counts[i] = count
            self._held += fresh_messages
        return counts

    def _fresh(self, messages: list[BaseMessage]) -> list[int]:
        if self._cache is None:
            return self._count_batch(messages)
        found: list[Any] = self._cache.recall(messages)
        missing = [i for i, count in enumerate(found) if count is None]
        if missing:
            looked, notes = self._cache.lookup([messages[i] for i in missing])
            unknown = [k for k, value in enumerate(looked) if value is None]
            if unknown:
                fresh = self._count_batch([messages[missing[k]] for k in unknown])
                for k, made in zip(unknown, fresh, strict=True):
                    looked[k] = made
                self._cache.store([messages[missing[k]] for k in unknown], [notes[k] for k in unknown], fresh)
            for i, value in zip(missing, looked, strict=True):
                found[i] = value
        return found

    def known(self, messages: Sequence[BaseMessage]) -> list[int | None]:
        """The counts this view holds for ``messages`` (None for the others), tokenizing and keying nothing."""
        return list(map(self._counts.get, map(id, messages)))

    def retain(self, messages: Sequence[BaseMessage]) -> None:
        """Forget the counts of every message but ``messages`` (a session drops the copies its past plans made)."""
        counts = self._counts
        self._counts = {id(m): counts[id(m)] for m in messages if id(m) in counts}
        self._held = [m for m in messages if id(m) in self._counts]

    @property
    def held(self) -> int:
        """How many messages the view holds counts of."""
        return len(self._held)


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
