"""Type in = type out: remember the form the caller's messages came in, and give messages back in it.

The engine works on ctxwin messages. When every input item is a LangChain message, a public face (``trim_messages``,
``filter_messages``, ``merge_message_runs``, ``fit``, ``add_messages``) reads them with ``CallerForms.read`` and
returns ``forms.back_all(result)``: a message the engine kept unchanged is the caller's own object; a changed or new
one (a partial message, a truncated tool output, a summary, a merged run) is built with the caller's class of that
name (the input's own class, else the one its package exports), so LangChain is never imported by ctxwin. Any other
input (ctxwin messages, dicts, strings, tuples, a mix) gives ctxwin messages, as before.

A ``token_counter`` given by the caller (a callable, a chat model) sees messages through ``back`` too, so LangChain's
``count_tokens_approximately`` and a chat model's ``get_num_tokens_from_messages`` get LangChain objects.

``output=`` (``fit``, ``Planner``) asks for a provider's request form instead (``give_back``): ``"openai"`` (chat
completions dicts; OpenAI dicts in give the caller's own dicts back for the messages kept unchanged, so their
unknown keys and ``"content": null`` survive), ``"responses"`` (Responses input items) or ``"anthropic"`` (the
messages of an Anthropic request, and its top-level ``system`` apart).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from ctxwin.messages.anthropic_format import convert_to_anthropic
from ctxwin.messages.base import BaseMessage
from ctxwin.messages.convert import is_langchain_message, read_messages
from ctxwin.messages.openai_format import convert_to_openai_messages
from ctxwin.messages.responses_format import convert_to_responses_items

Output = Literal["messages", "openai", "responses", "anthropic"]
OUTPUTS: tuple[Output, ...] = ("messages", "openai", "responses", "anthropic")


class CallerForms:
    """The caller's LangChain objects behind the ctxwin messages read from them, and their classes by name."""

    __slots__ = ("_classes", "_originals", "_package")

    def __init__(self, items: Sequence[BaseMessage], originals: Sequence[Any]) -> None:
        self._originals: dict[int, tuple[BaseMessage, Any]] = {}
        self._classes: dict[str, type] = {}
        self._package = type(originals[0]).__module__.rpartition(".")[0]
        self.add(items, originals)

    def add(self, items: Sequence[BaseMessage], originals: Sequence[Any]) -> None:
        """Remember more of the caller's objects (a session's next turn)."""
        self._originals.update((id(item), (item, original)) for item, original in zip(items, originals, strict=True))
        self._classes.update((type(o).__name__, type(o)) for o in originals)

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
        return self.new(message)

    def new(self, message: BaseMessage) -> Any:
        name = type(message).__name__
        target = self._classes.get(name) or getattr(sys.modules.get(self._package), name, None)
        if not isinstance(target, type):
            raise TypeError(f"cannot give a {name} back as a {self._package} message: {self._package} has no {name}")
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


def read_for(messages: Iterable[Any] | Any, output: Output) -> tuple[list[BaseMessage], CallerForms | None]:
    """``CallerForms.read``, and for ``output="openai"`` the caller's OpenAI dicts to give back."""
    items, forms = CallerForms.read(messages)
    if forms is None and output == "openai":
        forms = OpenAIDicts.read_dicts(messages, items)
    return items, forms


def give_back(messages: list[BaseMessage], output: Output, forms: CallerForms | None) -> tuple[list[Any], Any]:
    """The messages in the ``output`` form (the caller's form for ``"messages"``), and the Anthropic request's
    top-level ``system`` (None for the other forms, whose system messages stay in the list)."""
    if output == "anthropic":
        request = convert_to_anthropic(messages)
        return list(request["messages"]), request.get("system")
    if output == "responses":
        return list(convert_to_responses_items(messages)), None
    if output == "openai" and not isinstance(forms, OpenAIDicts):
        return convert_to_openai_messages(messages), None
    return (messages if forms is None else forms.back_all(messages)), None


def in_caller_form(apply: Callable[[list[BaseMessage]], list[BaseMessage]], messages: Iterable[Any] | Any) -> list[Any]:
    """``apply`` to the messages read as ctxwin messages, the result given back in the caller's form."""
    items, forms = CallerForms.read(messages)
    result = apply(items)
    return result if forms is None else forms.back_all(result)
