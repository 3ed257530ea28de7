"""Turn whatever was passed as ``token_counter`` into a Measure.

Accepted, in this order: a spec string (resolved by ``ctxwin.counters.get_counter``); a TokenCounter (additive, so
per-message counts are cached; its request overhead is measured, not assumed, and a counter that turns out not to
be additive is used as a list counter); an object with ``get_num_tokens_from_messages`` (a LangChain chat model);
``len`` (counts messages, as in LangChain); a callable over one message; a callable over a list of messages.

A callable is per-message when its first parameter is annotated with a message class (ctxwin's or LangChain's
``BaseMessage``, a subclass, or a union of them), also when the annotation is a string under
``from __future__ import annotations``. Unannotated callables (lambdas) are probed once with the conversation's
first message: called with a one-message list first (LangChain's reading), then, if that fails, with the message.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import threading
import types
import typing
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ctxwin.counters.base import TokenCounter, checked_count
from ctxwin.engine.measure import AdditiveMeasure, ListMeasure, Measure
from ctxwin.engine.token_cache import cache_for
from ctxwin.messages import BaseMessage, HumanMessage

Kind = Literal["message", "list"]

_LIST_ORIGINS = re.compile(r"^\s*(typing\.|collections\.abc\.|t\.)?(list|List|Sequence|Iterable|Collection|tuple)\b")
_MESSAGE_NAMES = re.compile(r"^\s*[\w.]*Message(Chunk)?\s*(\|\s*[\w.]*Message(Chunk)?\s*)*$")

_kinds_lock = threading.Lock()
_kinds: weakref.WeakKeyDictionary[Any, Kind] = weakref.WeakKeyDictionary()


def resolve_spec(spec: str) -> TokenCounter:
    """The counter for a spec string; unknown specs keep LangChain's error text, then ctxwin's suggestions."""
    from ctxwin.counters.lookup import get_counter  # loads the plugins; imported when a spec is used

    try:
        counter: TokenCounter = get_counter(spec)
    except ValueError as exc:
        raise ValueError(f"Invalid token_counter shortcut '{spec}'. {exc}") from None
    return counter


def _is_message_class(obj: Any) -> bool:
    if isinstance(obj, type):
        return any(c.__name__ == "BaseMessage" for c in obj.__mro__)
    if typing.get_origin(obj) in (typing.Union, types.UnionType):
        return all(_is_message_class(arg) for arg in typing.get_args(obj) if arg is not type(None))
    return False


def kind_from_annotation(annotation: Any) -> Kind | None:
    """'message', 'list', or None when the annotation does not tell."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return None
    if isinstance(annotation, str):
        if _LIST_ORIGINS.match(annotation):
            return "list"
        return "message" if _MESSAGE_NAMES.match(annotation) else None
    if _is_message_class(annotation):
        return "message"
    origin = typing.get_origin(annotation) or annotation
    if isinstance(origin, type) and origin is not str and hasattr(origin, "__iter__"):
        return "list"
    return None


def _first_parameter(fn: Callable[..., Any]) -> inspect.Parameter | None:
    for eval_str in (True, False):  # unresolvable string annotations: fall back to the strings
        try:
            parameters = list(inspect.signature(fn, eval_str=eval_str).parameters.values())
        except (NameError, SyntaxError, TypeError, AttributeError):
            continue
        except ValueError:  # builtins without a signature
            return None
        if not parameters:
            raise TypeError("token_counter must accept one argument: a message or a list of messages")
        return parameters[0]
    return None


def _probe(fn: Callable[..., Any], sample: BaseMessage) -> Kind:
    try:
        checked_count(fn([sample]), fn, "a one-message list")
        return "list"
    except Exception as list_error:
        try:
            checked_count(fn(sample), fn, "a message")
        except Exception:
            raise list_error from None
        return "message"


def callable_kind(fn: Callable[..., Any], sample: BaseMessage) -> Kind:
    """Whether ``fn`` counts one message or a list; remembered per callable so a probe runs once."""
    with _kinds_lock:
        try:
            known = _kinds.get(fn)
        except TypeError:
            known = None
    if known is not None:
        return known
    parameter = _first_parameter(fn)
    kind = kind_from_annotation(parameter.annotation) if parameter is not None else None
    if kind is None:
        kind = _probe(fn, sample)
    with _kinds_lock, contextlib.suppress(TypeError):  # callables that cannot be held weakly: probe each time
        _kinds[fn] = kind
    return kind


def _counter_measure(counter: TokenCounter) -> Measure:
    cache = cache_for(counter)
    overhead = cache.overheads if cache is not None else None
    if overhead is None:
        probe = HumanMessage("ctxwin")
        one = checked_count(counter.count_message(probe), counter, "a message")
        first = checked_count(counter.count_messages([probe]), counter, "a list of 1 message") - one
        second = checked_count(counter.count_messages([probe, probe]), counter, "a list of 2 messages") - 2 * one
        overhead = (first, 1 if first == second else 0)
        if cache is not None:
            cache.overheads = overhead
    if not overhead[1]:
        return ListMeasure(counter.count_messages, counter=counter)
    batch = getattr(counter, "count_message_batch", None)
    if not callable(batch):

        def batch(messages: Sequence[BaseMessage]) -> list[int]:
            return [counter.count_message(m) for m in messages]

    # A counter that remembers counts itself (the planner's meter) may say which it holds, so that a trim walks
    # past them without tokenizing the chunk beyond.
    known = getattr(counter, "known_counts", None) if cache is None else None
    return AdditiveMeasure(
        batch, counter=counter, overhead=overhead[0], cache=cache, known=known if callable(known) else None
    )


def _count_one_by_one(fn: Callable[[BaseMessage], Any]) -> Callable[[Sequence[BaseMessage]], list[Any]]:
    def count_batch(messages: Sequence[BaseMessage]) -> list[Any]:
        return [fn(m) for m in messages]

    return count_batch


def _count_messages(messages: Sequence[BaseMessage]) -> list[int]:
    return [1] * len(messages)


def make_measure(token_counter: Any, sample: BaseMessage) -> Measure:
    """The Measure for ``token_counter``; ``sample`` (the first message) is used only to probe a bare callable."""
    if isinstance(token_counter, str):
        token_counter = resolve_spec(token_counter)
    if isinstance(token_counter, TokenCounter):
        return _counter_measure(token_counter)
    if hasattr(token_counter, "get_num_tokens_from_messages"):
        return ListMeasure(token_counter.get_num_tokens_from_messages, counter=token_counter)
    if token_counter is len:
        return AdditiveMeasure(_count_messages, counter=len)
    if callable(token_counter):
        if callable_kind(token_counter, sample) == "message":
            return AdditiveMeasure(
                _count_one_by_one(token_counter), counter=token_counter, cache=cache_for(token_counter)
            )
        return ListMeasure(token_counter, counter=token_counter)
    raise ValueError(
        "'token_counter' expected to be a model that implements 'get_num_tokens_from_messages()' or a function. "
        f"Received object of type {type(token_counter)}."
    )
