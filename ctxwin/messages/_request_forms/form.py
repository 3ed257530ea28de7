"""``RequestForm``: everything ctxwin knows of one provider's request form, behind one interface, so that no other
code compares a form's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ctxwin.messages._base import BaseMessage
from ctxwin.messages._forms import CallerForms
from ctxwin.messages._tool_forms import openai_tools


@dataclass(frozen=True)
class MediaRules:
    """Where the API takes media: the roles (as ``openai_role`` names them) whose content holds it, the kinds it
    takes nowhere, and whether an image keeps OpenAI's ``detail`` (else it is dropped, counted as sent)."""

    roles: frozenset[str]
    nowhere: frozenset[str]
    image_detail: bool = True


class CacheRules(Protocol):
    """What a form reads of a model's prompt-caching rules (``counters.CachingRules``, a layer above)."""

    @property
    def mode(self) -> str: ...

    @property
    def max_breakpoints(self) -> int: ...


class RequestForm:
    """A provider's request form. A subclass sets the class attributes it differs in and overrides ``write``
    (and what else its API does its own way); ``registry.register_form`` makes ``output=<name>`` use it."""

    name: ClassVar[str]
    items_key: ClassVar[str] = "messages"  # where the conversation goes in the body
    system_key: ClassVar[str | None] = None  # where a system prompt taken apart goes (None: it stays a message)
    limit_key: ClassVar[str | None] = None  # the reply limit's name
    requires_limit: ClassVar[bool] = False  # the API refuses a request without a reply limit
    media: ClassVar[MediaRules | None] = None  # None: media stays where it is
    later_system: ClassVar[bool] = True  # a system message may follow the conversation's start
    marks_cache: ClassVar[bool] = False  # a request can carry prompt-cache marks (``mark_cache``)
    explicit_cache: ClassVar[bool] = False  # the provider caches only what a request marks
    routes_by_cache_key: ClassVar[bool] = False  # requests carry a ``prompt_cache_key``
    # Request keys sent as the caller gave them (the provider's context editing and compaction options): a plan of
    # a whole request carries them into its ``request`` unchanged (``passed_options``).
    passes: ClassVar[tuple[str, ...]] = ()

    def claims(self, request: Any) -> bool:
        """Whether ``request`` (a whole request or a list of items) is in this form (``registry.form_of``)."""
        return False

    def read(self, given: Any) -> tuple[list[BaseMessage], CallerForms | None]:
        """``given`` (anything ``convert_to_messages`` reads) as ctxwin messages, as this form counts and sends
        them, and the caller's forms to give them back in (``CallerForms.read``, then ``as_sent``)."""
        items, forms = CallerForms.read(given)
        return self.as_sent(given, items, forms)

    def as_sent(
        self, given: Any, items: list[BaseMessage], forms: CallerForms | None
    ) -> tuple[list[BaseMessage], CallerForms | None]:
        """The ``items`` read from ``given`` as this form sends them, and the caller's forms (``forms``: the
        LangChain objects behind them, if any)."""
        return items, forms

    def write(self, messages: list[BaseMessage], forms: CallerForms | None) -> tuple[list[Any], Any]:
        """The messages in this form, and the system prompt the request holds apart (None: none)."""
        raise NotImplementedError

    def passed_options(self, request: Any) -> dict[str, Any] | None:
        """The keys of ``request`` (a whole request) this form ``passes``, as given; None when it holds none."""
        if not isinstance(request, Mapping):
            return None
        found = {key: request[key] for key in self.passes if request.get(key) is not None}
        return found or None

    def tools(self, tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """OpenAI chat function tools in this form."""
        return [dict(tool) for tool in tools]

    def tool_choice(self, choice: Any) -> Any:
        """A ``tool_choice`` of any form in this one."""
        return choice

    def tools_as_sent(self, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """OpenAI function ``tools`` as this form sends them, read back as the OpenAI functions a counter counts, so
        a plan counts the definitions a recount of its request counts."""
        return openai_tools(self.tools(tools)) if tools else tools

    def body(
        self, messages: list[Any], *, model: str | None = None, system: Any = None,
        tools: Sequence[dict[str, Any]] | None = None, tool_choice: Any = None, max_output_tokens: int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of the SDK call: the ``model`` (left out when None), the messages, the system
        prompt apart, the tools and ``tool_choice`` (only with tools: no API takes one without them), the reply
        limit (left out when None or 0) and the ``options`` passed through as given (``passes``)."""
        body: dict[str, Any] = {} if model is None else {"model": model}
        body[self.items_key] = messages
        if system is not None and self.system_key is not None:
            body[self.system_key] = system
        if tools:
            body["tools"] = self.tools(tools)
            if tool_choice is not None:
                body["tool_choice"] = self.tool_choice(tool_choice)
        if max_output_tokens and self.limit_key is not None:
            body[self.limit_key] = max_output_tokens
        body.update(options or {})
        return body

    def cache_marks_refusal(self, rules: CacheRules | None, model: str | None) -> str | None:
        """Why a request of this form for ``model`` cannot carry cache marks (None: it can); asked only of a form
        that ``marks_cache``."""
        return None

    def mark_cache(
        self, body: dict[str, Any], breakpoints: tuple[int, ...] | None, *, ttl: str | None, key: str | None
    ) -> dict[str, Any]:
        """``body`` with the cache marks of a session's plan: ``breakpoints`` (message indexes; None: none),
        their lifetime and the ``prompt_cache_key``."""
        return body

    def nonstreaming_limit(self, model: str | None) -> int | None:
        """The largest reply limit the SDK sends without streaming for ``model`` (None: no limit)."""
        return None

    def refusals(
        self, messages: Sequence[BaseMessage], tools: Sequence[Mapping[str, Any]] | None, reserve: int,
        model: str | None,
    ) -> list[str]:
        """What the provider or its SDK would refuse in a request of ``messages`` with ``tools`` and the reply
        limit ``reserve``: a warning each."""
        return []


class CallerForm(RequestForm):
    """``output="messages"``: the caller's own form (``Plan.messages`` as given); the body is the messages alone."""

    name = "messages"

    def write(self, messages: list[BaseMessage], forms: CallerForms | None) -> tuple[list[Any], Any]:
        return (messages if forms is None else forms.back_all(messages)), None

    def tools_as_sent(self, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        return tools

    def body(
        self, messages: list[Any], *, model: str | None = None, system: Any = None,
        tools: Sequence[dict[str, Any]] | None = None, tool_choice: Any = None, max_output_tokens: int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        return {"messages": messages}  # no SDK call: no model, no tools


CALLER = CallerForm()
