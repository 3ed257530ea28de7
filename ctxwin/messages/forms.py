"""Type in = type out: remember the form the caller's messages came in, and give messages back in it.

The engine works on ctxwin messages. When every input item is a LangChain message, a public face (``trim_messages``,
``filter_messages``, ``merge_message_runs``, ``fit``, ``add_messages``) reads them with ``CallerForms.read`` and
returns ``forms.back_all(result)``: a message the engine kept unchanged is the caller's own object; a changed or new
one (a partial message, a truncated tool output, a summary, a merged run) is built with the caller's class of that
name (the input's own class, else the one its package exports), so LangChain is never imported by ctxwin. Any other
input (ctxwin messages, dicts, strings, tuples, a mix) gives ctxwin messages, as before.

A ``token_counter`` given by the caller (a callable, a chat model) sees messages through ``back`` too, so LangChain's
``count_tokens_approximately`` and a chat model's ``get_num_tokens_from_messages`` get LangChain objects.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ctxwin.messages.base import BaseMessage
from ctxwin.messages.convert import is_langchain_message, read_messages


class CallerForms:
    """The caller's LangChain objects behind the ctxwin messages read from them, and their classes by name."""

    __slots__ = ("_classes", "_originals", "_package")

    def __init__(self, items: Sequence[BaseMessage], originals: Sequence[Any]) -> None:
        self._originals = {id(item): (item, original) for item, original in zip(items, originals, strict=True)}
        self._classes = {type(o).__name__: type(o) for o in originals}
        self._package = type(originals[0]).__module__.rpartition(".")[0]

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
        if isinstance(messages, (list, tuple)) and messages and all(map(is_langchain_message, messages)):
            items = read_messages(messages)
            return items, cls(items, messages)
        return None

    def back(self, message: BaseMessage) -> Any:
        """The caller's object for ``message`` if it is one read from the caller, else a new one of its class."""
        found = self._originals.get(id(message))
        if found is not None and found[0] is message:
            return found[1]
        name = type(message).__name__
        target = self._classes.get(name) or getattr(sys.modules.get(self._package), name, None)
        if not isinstance(target, type):
            raise TypeError(f"cannot give a {name} back as a {self._package} message: {self._package} has no {name}")
        return target(**message.model_dump())

    def back_all(self, messages: Iterable[BaseMessage]) -> list[Any]:
        return [self.back(m) for m in messages]


def in_caller_form(apply: Callable[[list[BaseMessage]], list[BaseMessage]], messages: Iterable[Any] | Any) -> list[Any]:
    """``apply`` to the messages read as ctxwin messages, the result given back in the caller's form."""
    items, forms = CallerForms.read(messages)
    result = apply(items)
    return result if forms is None else forms.back_all(result)
