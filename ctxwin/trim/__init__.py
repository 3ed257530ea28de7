"""The trim engine's public face: ``trim_messages``, ``filter_messages`` and ``merge_message_runs``, with LangChain's
arguments. Called without messages, each returns a reusable ``MessageTransform`` (LangChain: a ``RunnableLambda``).
Only this module turns a counter spec string into a counter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from numbers import Real
from typing import Any, Literal, overload

from ctxwin import _tracing as tracing
from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.counters._base import TokenCounter, as_token_counter
from ctxwin.messages import BaseMessage
from ctxwin.messages._forms import CallerForms, in_caller_form
from ctxwin.trim._measure import AdditiveMeasure, ListMeasure, make_measure
from ctxwin.trim._search import TrimRequest, default_text_splitter, trim_first, trim_last
from ctxwin.trim._selection import TypeSpec, parse_type_spec
from ctxwin.trim._selection import filter_messages as _filter_messages
from ctxwin.trim._selection import merge_message_runs as _merge_message_runs

__all__ = [
    "MessageTransform", "filter_messages", "merge_message_runs", "trim_counted", "trim_messages", "trim_stored"
]

TypeArg = str | type[BaseMessage] | Sequence[str | type[BaseMessage]]


class MessageTransform:
    """A message function configured with its keyword arguments: call it (or ``.invoke`` / ``.batch`` it).

    LangChain returns a ``RunnableLambda``; ctxwin never imports LangChain, so this offers the parts of that
    interface a message function needs. ``apply`` takes the messages alone; ``kwargs`` are the arguments it was
    configured with, kept for ``repr`` and inspection. Arguments are validated when it is built, not at first use.
    """

    def __init__(self, apply: Callable[[Any], list[BaseMessage]], name: str, kwargs: dict[str, Any]) -> None:
        self._apply = apply
        self.name = name
        self.kwargs = dict(kwargs)

    def __call__(self, messages: Any) -> list[BaseMessage]:
        return self._apply(messages)

    def invoke(self, messages: Any, config: Any = None, **kwargs: Any) -> list[BaseMessage]:
        """Apply to ``messages``; ``config`` and extra keywords are accepted for runnable compatibility, unused."""
        return self._apply(messages)

    async def ainvoke(self, messages: Any, config: Any = None, **kwargs: Any) -> list[BaseMessage]:
        return self._apply(messages)

    def batch(self, inputs: Sequence[Any], config: Any = None, **kwargs: Any) -> list[list[BaseMessage]]:
        return [self._apply(messages) for messages in inputs]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{self.name}({args})"


def _resolve_spec(spec: str) -> TokenCounter:
    """The counter for a spec string; unknown specs keep LangChain's error text, then ctxwin's suggestions."""
    from ctxwin.counters._lookup import get_counter  # loads the plugins; imported when a spec is used

    try:
        counter: TokenCounter = get_counter(spec)
    except ValueError as exc:
        raise InvalidInputError(f"Invalid token_counter shortcut '{spec}'. {exc}") from None
    return counter


def _splitter(text_splitter: Any) -> Callable[[str], list[str]]:
    if text_splitter is None:
        return default_text_splitter
    split = getattr(text_splitter, "split_text", text_splitter)  # a LangChain TextSplitter, or a function
    if not callable(split):
        raise InvalidTypeError(
            "text_splitter must be a function str -> list[str] or an object with split_text(), "
            f"got {type(text_splitter).__name__}"
        )

    def checked(text: str) -> list[str]:
        pieces = split(text)
        if not isinstance(pieces, list) or not all(isinstance(p, str) for p in pieces):
            raise InvalidTypeError(f"text_splitter must return a list of strings, got {type(pieces).__name__}")
        return pieces

    return checked


class _Trim:
    """``trim_messages`` with its arguments checked once; ``run`` trims one message list."""

    max_tokens: float
    token_counter: Any
    strategy: str
    allow_partial: bool
    end_on: TypeSpec | None
    start_on: TypeSpec | None
    include_system: bool
    keep_pairs: bool
    text_splitter: Callable[[str], list[str]]

    def __init__(
        self,
        *,
        max_tokens: float,
        token_counter: Any,
        strategy: str,
        allow_partial: bool,
        end_on: TypeArg | None,
        start_on: TypeArg | None,
        include_system: bool,
        text_splitter: Any,
        tool_pairs: str,
    ) -> None:
        if start_on and strategy == "first":
            raise InvalidInputError("start_on parameter is only valid with strategy='last'")
        if include_system and strategy == "first":
            raise InvalidInputError("include_system parameter is only valid with strategy='last'")
        if isinstance(token_counter, str):
            token_counter = _resolve_spec(token_counter)
        elif (counter := as_token_counter(token_counter)) is not None:
            token_counter = counter  # a counter implementing part of the contract is wrapped once, here
        elif not (callable(token_counter) or hasattr(token_counter, "get_num_tokens_from_messages")):
            raise InvalidInputError(
                "'token_counter' expected to be a model that implements 'get_num_tokens_from_messages()' or "
                f"a function. Received object of type {type(token_counter)}."
            )
        self.text_splitter = _splitter(text_splitter)
        if strategy not in ("first", "last"):
            raise InvalidInputError(f"Unrecognized {strategy=}. Supported strategies are 'last' and 'first'.")
        if tool_pairs not in ("keep", "ignore"):
            raise InvalidInputError(f"tool_pairs must be 'keep' or 'ignore', got {tool_pairs!r}")
        if not isinstance(max_tokens, Real) or isinstance(max_tokens, bool):
            raise InvalidTypeError(f"max_tokens must be a number, got {type(max_tokens).__name__}")
        if not math.isfinite(max_tokens) or max_tokens < 0:  # NaN compares false with everything: it kept nothing
            raise InvalidInputError(f"max_tokens must be a finite number >= 0, got {max_tokens}")
        self.max_tokens = max_tokens
        self.token_counter = token_counter
        self.strategy = strategy
        self.allow_partial = bool(allow_partial)
        self.end_on = parse_type_spec(end_on, "end_on") if end_on else None
        self.start_on = parse_type_spec(start_on, "start_on") if start_on else None
        self.include_system = bool(include_system)
        self.keep_pairs = tool_pairs == "keep"

    def run(self, messages: Any) -> list[Any]:
        with tracing.span("ctxwin.trim_messages") as span:
            items, forms = CallerForms.read(messages)  # read during the call only
            kept = self.run_checked(items) if forms is None else self.run_checked(items, forms.back)
            if span is not None:
                span.set_attributes(self._span_attributes(len(items), len(kept)))
            return kept if forms is None else forms.back_all(kept)

    def _span_attributes(self, given: int, kept: int) -> dict[str, tracing.AttributeValue]:
        counter = self.token_counter
        name = counter.name if isinstance(counter, TokenCounter) else getattr(counter, "__name__", None)
        return {
            "ctxwin.budget.max_tokens": float(self.max_tokens),
            "ctxwin.trim.strategy": self.strategy,
            "ctxwin.trim.allow_partial": self.allow_partial,
            "ctxwin.counter.name": str(name or type(counter).__name__),
            "ctxwin.messages.input": given,
            "ctxwin.messages.output": kept,
        }

    def run_checked(
        self, items: Sequence[BaseMessage], view: Callable[[BaseMessage], Any] | None = None
    ) -> list[BaseMessage]:
        if not items:
            return []
        request = TrimRequest(
            limit=self.max_tokens,
            measure=make_measure(self.token_counter, items[0], view),
            keep_pairs=self.keep_pairs,
            allow_partial=self.allow_partial,
            text_splitter=self.text_splitter,
            start_on=self.start_on,
            end_on=self.end_on,
            include_system=self.include_system,
        )
        return trim_first(request, items) if self.strategy == "first" else trim_last(request, items)


@overload
def trim_messages(
    messages: None = None,
    *,
    max_tokens: float,
    token_counter: Any,
    strategy: Literal["first", "last"] = "last",
    allow_partial: bool = False,
    end_on: TypeArg | None = None,
    start_on: TypeArg | None = None,
    include_system: bool = False,
    text_splitter: Callable[[str], list[str]] | Any | None = None,
    tool_pairs: Literal["keep", "ignore"] = "keep",
) -> MessageTransform: ...


@overload
def trim_messages(
    messages: Iterable[Any] | Any,
    *,
    max_tokens: float,
    token_counter: Any,
    strategy: Literal["first", "last"] = "last",
    allow_partial: bool = False,
    end_on: TypeArg | None = None,
    start_on: TypeArg | None = None,
    include_system: bool = False,
    text_splitter: Callable[[str], list[str]] | Any | None = None,
    tool_pairs: Literal["keep", "ignore"] = "keep",
) -> list[BaseMessage]: ...


def trim_messages(
    messages: Iterable[Any] | Any | None = None,
    *,
    max_tokens: float,
    token_counter: Any,
    strategy: Literal["first", "last"] = "last",
    allow_partial: bool = False,
    end_on: TypeArg | None = None,
    start_on: TypeArg | None = None,
    include_system: bool = False,
    text_splitter: Callable[[str], list[str]] | Any | None = None,
    tool_pairs: Literal["keep", "ignore"] = "keep",
) -> list[BaseMessage] | MessageTransform:
    """Trim messages to fit ``max_tokens``: LangChain's ``trim_messages``, made exact and safe.

    Arguments and semantics are LangChain's: ``strategy="last"`` keeps the most recent messages, ``"first"`` the
    earliest; ``allow_partial`` keeps part of the message at the cut (list content loses blocks from the far end;
    otherwise its text is split with ``text_splitter``, by default on newlines keeping them, and the most pieces that
    fit are kept); ``end_on``/``start_on`` (a type string, a message class, or a sequence of either) make the result
    end/start on those types; ``include_system`` keeps a leading SystemMessage (``"last"`` only).

    ``token_counter`` is a TokenCounter, a spec string for ``ctxwin.get_counter`` (``"gpt-4o"``,
    ``"tiktoken:o200k_base"``, ``"approximate"`` — ctxwin's estimator, not LangChain's chars/4), a callable over one
    message (recognised with or without a ``BaseMessage`` annotation), a callable over a list, an object with
    ``get_num_tokens_from_messages``, or ``len`` (``max_tokens`` then counts messages).

    Where ctxwin deliberately differs from LangChain:

    * Never over budget: the returned list, counted by ``token_counter`` exactly as returned (in order, partial
      message included), is within ``max_tokens`` — also for counters with a per-call overhead or that count
      joined text. The one exception, as in LangChain: ``include_system=True`` and the system message alone is over
      budget, in which case just the system message is returned. LangChain counts a partial message's pieces in
      reverse for ``strategy="last"`` and can go over.
    * ``tool_pairs="keep"`` (default): an AIMessage's tool call and its ToolMessage are kept or dropped together, so
      the result has no orphan tool result and no call whose result was cut; a partial AIMessage keeps only the
      calls whose results remain. ``tool_pairs="ignore"`` is LangChain's behaviour.
    * The counter only sees messages in conversation order (LangChain shows reversed lists for ``"last"``).
    * With a per-message counter (or a TokenCounter) each message is counted at most once per call, only messages
      near the kept range are counted at all, and counts are cached across calls, so re-trimming a conversation
      that grew by one message costs about one message.
    * Argument errors are raised when the call is made, also in the reusable form; ``max_tokens`` must be a
      non-negative number and ``start_on``/``end_on`` type strings must name real message types.

    Returns the kept messages (the same objects; only a partial message is a new copy), or a ``MessageTransform``
    when ``messages`` is omitted. LangChain messages in give LangChain messages out, and a callable or chat model
    ``token_counter`` sees them as given (``ctxwin.messages._forms``, docs/interop.md).
    """
    trim = _Trim(
        max_tokens=max_tokens,
        token_counter=token_counter,
        strategy=strategy,
        allow_partial=allow_partial,
        end_on=end_on,
        start_on=start_on,
        include_system=include_system,
        text_splitter=text_splitter,
        tool_pairs=tool_pairs,
    )
    if messages is None:
        kwargs = {
            "max_tokens": max_tokens,
            "token_counter": token_counter,
            "strategy": strategy,
            "allow_partial": allow_partial,
            "end_on": end_on,
            "start_on": start_on,
            "include_system": include_system,
            "text_splitter": text_splitter,
            "tool_pairs": tool_pairs,
        }
        return MessageTransform(trim.run, "trim_messages", kwargs)
    return trim.run(messages)


def trim_stored(
    messages: Sequence[BaseMessage],
    *,
    max_tokens: float,
    token_counter: Any,
    strategy: Literal["first", "last"] = "last",
    end_on: TypeArg | None = None,
    include_system: bool = False,
    tool_pairs: Literal["keep", "ignore"] = "keep",
) -> list[BaseMessage]:
    """``trim_messages`` for messages known to be ``BaseMessage`` objects already (a chat history's stored
    messages, a plan's messages): they are not checked or converted again, so re-trimming a long conversation
    every turn reads only the messages near the kept end (``WindowedHistory`` and the planner's trim step do)."""
    trim = _Trim(
        max_tokens=max_tokens,
        token_counter=token_counter,
        strategy=strategy,
        allow_partial=False,
        end_on=end_on,
        start_on=None,
        include_system=include_system,
        text_splitter=None,
        tool_pairs=tool_pairs,
    )
    return trim.run_checked(messages)


def trim_counted(
    messages: Sequence[BaseMessage],
    *,
    max_tokens: float,
    each: Callable[[Sequence[BaseMessage]], Sequence[int]] | None = None,
    overhead: int = 0,
    known: Callable[[Sequence[BaseMessage]], Sequence[int | None]] | None = None,
    count_list: Callable[[list[BaseMessage]], int] | None = None,
    strategy: Literal["first", "last"] = "last",
    end_on: TypeArg | None = None,
) -> list[BaseMessage]:
    """The trim engine over counts its caller keeps (the planner's trim step hands over its plan's counts): ``each``
    gives per-message counts, a list counting their sum plus ``overhead``, and ``known`` the counts the caller holds
    already (None for the others), so the engine's walk tokenizes only the messages it reaches; or, for a counter
    that is not additive, ``count_list`` counts whole lists. Tool pairs stay whole; the messages are ``BaseMessage``
    objects already."""
    if (each is None) == (count_list is None):
        raise InvalidTypeError("trim_counted takes one of each= and count_list=")
    if not messages:
        return []
    measure = (
        AdditiveMeasure(each, counter=each, overhead=overhead, known=known)
        if each is not None
        else ListMeasure(count_list, counter=count_list)  # type: ignore[arg-type]  # one of them is given
    )
    request = TrimRequest(
        limit=max_tokens,
        measure=measure,
        keep_pairs=True,
        allow_partial=False,
        text_splitter=default_text_splitter,
        end_on=parse_type_spec(end_on, "end_on") if end_on else None,
    )
    return trim_first(request, messages) if strategy == "first" else trim_last(request, messages)


@overload
def filter_messages(messages: None = None, **kwargs: Any) -> MessageTransform: ...


@overload
def filter_messages(messages: Iterable[Any] | Any, **kwargs: Any) -> list[BaseMessage]: ...


def filter_messages(messages: Iterable[Any] | Any | None = None, **kwargs: Any) -> list[BaseMessage] | MessageTransform:
    """LangChain's ``filter_messages`` (see ``ctxwin.trim._selection.filter_messages`` for the arguments)."""
    if messages is None:
        _filter_messages([], **kwargs)  # check the arguments now
        return MessageTransform(partial(in_caller_form, partial(_filter_messages, **kwargs)), "filter_messages", kwargs)
    return in_caller_form(partial(_filter_messages, **kwargs), messages)


filter_messages.__doc__ = _filter_messages.__doc__


@overload
def merge_message_runs(messages: None = None, *, chunk_separator: str = "\n") -> MessageTransform: ...


@overload
def merge_message_runs(messages: Iterable[Any] | Any, *, chunk_separator: str = "\n") -> list[BaseMessage]: ...


def merge_message_runs(
    messages: Iterable[Any] | Any | None = None, *, chunk_separator: str = "\n"
) -> list[BaseMessage] | MessageTransform:
    """LangChain's ``merge_message_runs`` (see ``ctxwin.trim._selection.merge_message_runs``)."""
    if messages is None:
        _merge_message_runs([], chunk_separator=chunk_separator)
        merge = partial(in_caller_form, partial(_merge_message_runs, chunk_separator=chunk_separator))
        return MessageTransform(merge, "merge_message_runs", {"chunk_separator": chunk_separator})
    return in_caller_form(partial(_merge_message_runs, chunk_separator=chunk_separator), messages)


merge_message_runs.__doc__ = _merge_message_runs.__doc__
