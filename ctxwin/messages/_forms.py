"""Type in = type out: the form the caller's messages came in (LangChain objects, a provider's request form), and the
messages given back in it, the caller's own objects where unchanged, without ctxwin importing LangChain.
How it reads a re-trimmed history cheaply: docs/architecture.md.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress
from operator import is_
from typing import Any, Literal

from ctxwin._errors import InvalidTypeError
from ctxwin.messages._base import BaseMessage
from ctxwin.messages._convert import is_langchain_message, read_messages
from ctxwin.messages._openai_format import convert_to_openai_messages
from ctxwin.messages._writer import WRITER, Writer, notes_of

# The outputs of the built-in forms, for typing (a registered form's name is an output too: ``registry.is_output``).
Output = Literal["messages", "openai", "responses", "anthropic", "request"]

_MAX_CONVERTED = 1 << 17
_MISSING = object()
_alive = weakref.ref.__call__  # an entry's object, or None once collected


class _Noted(weakref.ref[Any]):
    """A LangChain object (weakly), the object written when it was read, and the ctxwin message read from it."""

    __slots__ = ("key", "message", "note")

    key: int
    note: bytes
    message: BaseMessage


class _Converted:
    """The ctxwin message read from each LangChain object seen, while the object lives and is written as it was.
    ``writer``: the process's, unless a test compares the two."""

    def __init__(self, writer: Writer = WRITER) -> None:
        self._writer = writer
        self._by_id: dict[int, _Noted] = {}
        self._dead: list[_Noted] = []  # entries of collected objects, dropped under the lock at the next write
        self._lock = threading.Lock()

    def _recalled(self, objects: Sequence[Any]) -> list[BaseMessage | None]:
        """The messages read before from the objects that live and are written as they were (None for the rest):
        the noted objects checked in one writer call; only where that differs (something changed), one by one."""
        noted = list(map(self._by_id.get, map(id, objects)))
        if noted.count(None) == len(noted):
            return noted  # type: ignore[return-value]  # all None
        held = list(compress(objects, noted))
        notes: list[_Noted] = list(filter(None, noted))
        same = self._writer.all_noted
        if all(map(is_, map(_alive, notes), held)) and same(held, [n.note for n in notes]):
            return [None if n is None else n.message for n in noted]
        return [
            n.message if n is not None and n() is o and same([o], [n.note]) else None
            for o, n in zip(objects, noted, strict=True)
        ]

    def read(self, objects: Sequence[Any]) -> list[BaseMessage]:
        by_id = self._by_id
        found = self._recalled(objects)
        missing = [i for i, m in enumerate(found) if m is None]
        if not missing:
            return found  # type: ignore[return-value]
        try:
            fresh = read_messages([objects[i] for i in missing])
        except (TypeError, ValueError) as exc:  # name the caller's index, not the index among the unread ones
            detail = str(exc)
            if detail.startswith("messages[") and "]" in detail:
                head, _, rest = detail.partition("]")
                detail = f"messages[{missing[int(head.removeprefix('messages['))]}]{rest}"
            raise type(exc)(detail) from None
        if len(fresh) != len(missing):  # an object read as several messages: keep the plain reading
            return read_messages(objects)
        entries = []
        for i, message, note in zip(missing, fresh, notes_of([objects[i] for i in missing], self._writer), strict=True):
            found[i] = message
            if note is not None:
                entry = _Noted(objects[i], self._dead.append)
                entry.key, entry.note, entry.message = id(objects[i]), note, message
                entries.append(entry)
        with self._lock:
            while self._dead:
                dead = self._dead.pop()
                if by_id.get(dead.key) is dead:
                    del by_id[dead.key]
            for entry in entries:
                by_id.pop(entry.key, None)
                by_id[entry.key] = entry
            while len(by_id) > _MAX_CONVERTED:
                del by_id[next(iter(by_id))]
        return found  # type: ignore[return-value]


_converted = _Converted()


class CallerForms:
    """The caller's LangChain objects behind the ctxwin messages read from them, and their classes by name."""

    __slots__ = ("_classes", "_items", "_originals", "_package")

    def __init__(self, items: Sequence[BaseMessage], originals: Sequence[Any], *, package: str | None = None) -> None:
        """``package`` (the module whose classes build new messages) defaults to that of the first original; give it
        for forms with no originals yet (a history reopened to be read as LangChain messages)."""
        self._items: list[BaseMessage] = []
        self._originals: dict[int, Any] = {}
        self._classes: dict[str, type] = {}
        self._package = package if package is not None else type(originals[0]).__module__.rpartition(".")[0]
        self.add(items, originals)

    def add(self, items: Sequence[BaseMessage], originals: Sequence[Any]) -> None:
        """Remember more of the caller's objects (a session's next turn). Keyed by id alone: ``_items`` keeps the items
        alive, so no other live message can have one of their ids (and a dict of ints, unlike one of tuples, gives
        the garbage collector nothing to walk)."""
        self._items.extend(items)
        self._originals.update(zip(map(id, items), originals, strict=True))
        self._classes.update({cls.__name__: cls for cls in set(map(type, originals))})

    @classmethod
    def read(cls, messages: Iterable[Any] | Any) -> tuple[list[BaseMessage], CallerForms | None]:
        """The messages as ctxwin messages, and the caller's forms when they were all LangChain messages (a
        LangChain ``PromptValue`` holds LangChain messages)."""
        if hasattr(messages, "to_messages") and callable(messages.to_messages):
            messages = messages.to_messages()
        found = cls.read_langchain(messages)
        return (read_messages(messages), None) if found is None else found

    @classmethod
    def read_langchain(cls, messages: Any) -> tuple[list[BaseMessage], CallerForms] | None:
        """``read`` for a non-empty list or tuple of LangChain messages only; None (nothing read) for the rest."""
        # One object per class is looked at: a LangChain message's class fixes its ``type``. The first message alone
        # answers for a list of ctxwin messages, with no pass over the list: a chat loop re-trims long histories.
        if (
            isinstance(messages, (list, tuple))
            and messages
            and is_langchain_message(messages[0])
            and all(map(is_langchain_message, dict(zip(map(type, messages), messages, strict=True)).values()))
        ):
            items = _converted.read(messages)
            return items, cls(items, messages)
        return None

    def back(self, message: BaseMessage) -> Any:
        """The caller's object for ``message`` if it is one read from the caller, else a new one of its class."""
        found = self._originals.get(id(message), _MISSING)
        if found is not _MISSING:
            return found
        return self.new(message)

    def new(self, message: BaseMessage) -> Any:
        name = type(message).__name__
        target = self._classes.get(name) or getattr(sys.modules.get(self._package), name, None)
        if not isinstance(target, type):
            raise InvalidTypeError(f"cannot give a {name} back as a {self._package} message: {self._package} has no "
                                   f"{name}")
        return target(**message.model_dump())

    def back_all(self, messages: Iterable[BaseMessage]) -> list[Any]:
        return [self.back(m) for m in messages]


class OpenAIDicts(CallerForms):
    """The caller's OpenAI chat dicts behind the messages read from them: a message kept unchanged goes back as the
    caller's own dict (unknown keys and ``"content": null`` as given), a changed or new one as a new dict."""

    @classmethod
    def read_dicts(cls, messages: Any, items: list[BaseMessage]) -> OpenAIDicts | None:
        """The forms of ``messages`` if they are chat dicts read one message each, else None."""
        if (
            isinstance(messages, (list, tuple))
            and len(messages) == len(items)
            and messages
            and all(isinstance(m, Mapping) and "role" in m and "type" not in m for m in messages)
        ):
            return cls(items, messages)
        return None

    def new(self, message: BaseMessage) -> Any:
        return convert_to_openai_messages(message)


def in_caller_form(apply: Callable[[list[BaseMessage]], list[BaseMessage]], messages: Iterable[Any] | Any) -> list[Any]:
    """``apply`` to the messages read as ctxwin messages, the result given back in the caller's form."""
    items, forms = CallerForms.read(messages)
    result = apply(items)
    return result if forms is None else forms.back_all(result)
