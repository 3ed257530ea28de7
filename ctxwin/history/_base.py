"""BaseChatMessageHistory: the interface every chat history shares, with LangChain's names and signatures.
Unlike LangChain, storing a batch is the primitive, so that a batch is stored atomically; the caller's message forms
are kept here once for every store (docs/history.md).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, ClassVar, Literal

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.history._codec import message_json
from ctxwin.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    MessageLike,
    RemoveMessage,
    convert_to_messages,
    get_buffer_string,
)
from ctxwin.messages._forms import CallerForms
from ctxwin.messages._writer import WRITER, notes_of

Form = Literal["messages", "langchain"]
FORMS: tuple[Form, ...] = ("messages", "langchain")
LANGCHAIN_PACKAGE = "langchain_core.messages"


class BaseChatMessageHistory:
    """A stored conversation: read it with ``messages``, append with ``add_message(s)``, empty it with ``clear``.

    ``form`` is how ``messages`` reads before any LangChain message was added through this object: ``"messages"``
    (ctxwin messages) or ``"langchain"`` (LangChain messages, for a history reopened by a LangChain program; needs
    langchain-core, imported at the first read).
    """

    # Whether ``stored_messages`` gives new objects rather than the ones stored (a file or a database): then the
    # caller's objects are found again by the stored record of the message read from them, not by identity.
    copies_on_read: ClassVar[bool] = True
    form: Form = "messages"
    _caller: _CallerObjects | None = None
    _caller_lock = threading.Lock()  # only guards creating ``_caller``; shared by every history, held briefly

    def __init__(self, *, form: Form = "messages") -> None:
        if form not in FORMS:
            raise InvalidInputError(f"form must be 'messages' or 'langchain', got {form!r}")
        self.form = form

    @property
    def messages(self) -> list[Any]:
        """Every stored message, oldest first (a fresh list; changing it does not change the store), in the caller's
        form: LangChain messages once LangChain messages were added through this object or with
        ``form="langchain"``, else ctxwin messages."""
        return self.in_caller_form(self.stored_messages())

    def stored_messages(self) -> list[BaseMessage]:
        """Every stored message as ctxwin messages, oldest first (a fresh list)."""
        return convert_to_messages(self._overridden("messages", "stored_messages").fget(self))

    def store_messages(self, batch: list[BaseMessage]) -> None:
        """Append ``batch`` (checked by ``add_messages``) in order; when this returns it is stored (durably, for
        persistent stores)."""
        self._overridden("add_messages", "store_messages")(self, batch)

    def clear_stored(self) -> None:
        """Remove every stored message of this history."""
        self._overridden("clear", "clear_stored")(self)

    def _overridden(self, face: str, primitive: str) -> Any:
        """A subclass's own ``face`` (LangChain's contract), for the base's ``primitive`` it did not implement."""
        own = getattr(type(self), face)
        if own is getattr(BaseChatMessageHistory, face):
            raise NotImplementedError(
                f"{type(self).__name__} implements neither {primitive}() nor {face} (LangChain's contract)"
            )
        return own

    def add_messages(self, messages: Sequence[Any]) -> None:
        """Append ``messages`` (anything ``convert_to_messages`` reads) in order; see ``store_messages``."""
        batch, found = read_batch(messages)
        self.store_messages(batch)
        if found is not None:
            forms, originals = found
            with self._caller_lock:
                if self._caller is None:
                    self._caller = _CallerObjects(forms, by_record=self.copies_on_read)
            self._caller.remember(batch, originals)

    def clear(self) -> None:
        """Remove every message of this history (the form it reads in stays)."""
        self.clear_stored()
        if self._caller is not None:
            self._caller.forget()

    def in_caller_form(self, messages: list[BaseMessage]) -> list[Any]:
        """``messages`` (stored by this history) in the caller's form: the caller's own object for one added through
        this object and stored as it was read from it, a new instance of the caller's class for the others."""
        caller = self._caller
        if caller is None and self.form == "langchain":
            with self._caller_lock:
                if self._caller is None:
                    self._caller = _CallerObjects(_langchain_forms(), by_record=self.copies_on_read)
                caller = self._caller
        return messages if caller is None else caller.back(messages)

    def revision(self) -> tuple[Hashable, int] | None:
        """A cheap mark of the stored messages' state, so a reader can tell whether it must read them again.

        ``(others, writes)``: ``others`` changes whenever anyone but this object changes the stored messages, and
        ``writes`` counts this object's writes (a non-empty ``add_messages``, a ``clear``); so after one
        ``add_messages`` of at least one message through this object and no other change, it is
        ``(others, writes + 1)``. None (the default) when the store cannot
        tell cheaply; readers then read everything every time.
        """
        return None

    def add_message(self, message: Any) -> None:
        self.add_messages([message])

    def add_user_message(self, message: HumanMessage | str) -> None:
        self.add_message(HumanMessage(message) if isinstance(message, str) else message)

    def add_ai_message(self, message: AIMessage | str) -> None:
        self.add_message(AIMessage(message) if isinstance(message, str) else message)

    async def aget_messages(self) -> list[Any]:
        return await asyncio.to_thread(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[Any]) -> None:
        await asyncio.to_thread(self.add_messages, messages)

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    def __str__(self) -> str:
        return get_buffer_string(self.stored_messages())


class _CallerObjects:
    """The caller's LangChain objects behind the messages added through one history, and the classes of the caller.

    By identity, for a store that keeps the messages it was given (in memory, a window's own view); with
    ``by_record``, also by the JSON record of each message (what a file or a database stores), the k-th stored
    message of a record going back as the k-th object added with it. An object changed in place since it was added
    no longer holds what was stored (it is written as bytes when added and again when given back,
    ``ctxwin.messages._writer``): the message goes back as a new instance instead.
    """

    def __init__(self, forms: CallerForms, *, by_record: bool) -> None:
        self._forms = forms
        self._by_record = by_record
        self._lock = threading.Lock()
        # The message kept alive, so its id stays its own; the caller's object; the object written (None: cannot be).
        self._by_id: dict[int, tuple[BaseMessage, Any, bytes | None]] = {}
        self._records: dict[str, list[tuple[Any, bytes | None]]] = {}

    def remember(self, batch: list[BaseMessage], originals: list[Any]) -> None:
        noted = list(zip(batch, originals, notes_of(originals), strict=True))
        records = [(message_json(m, i), (o, n)) for i, (m, o, n) in enumerate(noted)] if self._by_record else []
        with self._lock:
            self._by_id.update((id(entry[0]), entry) for entry in noted)
            for record, entry in records:
                self._records.setdefault(record, []).append(entry)

    def forget(self) -> None:
        with self._lock:
            self._by_id = {}
            self._records = {}

    def back(self, messages: list[BaseMessage]) -> list[Any]:
        with self._lock:
            by_id, records = self._by_id, self._records
        seen: dict[str, int] = {}
        result = []
        for message in messages:
            entry = by_id.get(id(message))
            if entry is not None and entry[0] is message:
                found: tuple[Any, bytes | None] | None = entry[1:]
            elif records:
                record = message_json(message, 0)
                k = seen.get(record, 0)
                seen[record] = k + 1
                candidates = records.get(record, ())
                found = candidates[k] if k < len(candidates) else None
            else:
                found = None
            if found is not None and (found[1] is None or WRITER.all_noted([found[0]], [found[1]])):
                result.append(found[0])
            else:
                result.append(self._forms.new(message))
        return result


def _langchain_forms() -> CallerForms:
    """The forms of a history read as LangChain messages before any was added: langchain-core's classes."""
    try:
        import langchain_core.messages  # noqa: F401  (imported here only: ctxwin never needs it otherwise)
    except ImportError:
        raise ImportError(
            "form='langchain' needs langchain-core, which is not installed: pip install langchain-core "
            "(or read ctxwin messages with form='messages')"
        ) from None
    return CallerForms([], [], package=LANGCHAIN_PACKAGE)


def read_batch(messages: Iterable[Any]) -> tuple[list[BaseMessage], tuple[CallerForms, list[Any]] | None]:
    """The messages to store, and the caller's forms and objects when they were all LangChain messages (a non-empty
    batch); RemoveMessage refused.

    A history is an append-only log of what was said; deleting by id is the job of the ``add_messages`` reducer,
    so storing a RemoveMessage (as LangChain would) is refused rather than kept as a phantom message.
    """
    if isinstance(messages, (BaseMessage, str, dict)) or CallerForms.read_langchain([messages]) is not None:
        raise InvalidTypeError(
            f"add_messages expects a sequence of messages, got a single {type(messages).__name__}; "
            "use add_message for one message"
        )
    items = list(messages)
    found = CallerForms.read_langchain(items)
    converted = found[0] if found is not None else convert_to_messages(items)
    for index, message in enumerate(converted):
        if isinstance(message, RemoveMessage):
            raise InvalidInputError(
                f"messages[{index}]: a RemoveMessage (id={message.id!r}) cannot be stored; chat histories are "
                "append-only. "
                "Apply removals with ctxwin.history.add_messages and store the result after clear()"
            )
    return converted, None if found is None else (found[1], items)


def checked_messages(messages: Iterable[MessageLike]) -> list[BaseMessage]:
    """``read_batch``'s messages, for a store filled without a caller to give them back to."""
    return read_batch(messages)[0]
