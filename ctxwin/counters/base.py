"""The TokenCounter protocol and BaseTokenCounter, which derives message framing from ``count_text``.

Framing follows OpenAI's published chat accounting: every message costs ``tokens_per_message`` plus the tokens of
its role, content and other string fields; a ``name`` costs ``tokens_per_name`` more; a request costs
``reply_priming`` for the assistant reply it primes. ``count_messages`` is exactly the sum of ``count_message`` plus
the per-request overhead, so engines can cache per-message counts.

A counter says so itself (``additive`` and ``request_overhead``, part of the ``TokenCounter`` contract; see
``declared_overhead``): nothing measures it by counting sample messages. A counter whose whole-request count is not
a sum (Mistral before v7, the count-tokens endpoints) declares ``additive = False``, and the engines then count whole
candidate lists with ``count_messages``.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Iterator, Sequence
from numbers import Real
from typing import Any, Protocol, runtime_checkable

from ctxwin.counters.errors import PluginCounterError
from ctxwin.messages import AIMessage, BaseMessage, ToolMessage
from ctxwin.messages.content import block_text
from ctxwin.messages.convert import MessageLike, read_messages, request_tools
from ctxwin.messages.openai_format import openai_role

# Flat estimate for a non-text block whose size is unknown (an OpenAI high-detail 512x512 image costs 255).
DEFAULT_BLOCK_TOKENS = 255
# Labels remembered per counter before the memo starts over (call ids are unique, so it must not grow forever).
_LABEL_MEMO_SIZE = 4096
# The largest count accepted: counts are scaled and compared as floats, exact up to 2**53 (no text has that many).
MAX_COUNT = 2**53
# How errors name a plugin's counter, also when its own BaseTokenCounter methods check its counts (CheckedCounter).
_PLUGIN_LABELS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def counter_label(counter: Any) -> str:
    """How errors name a counter: its ``name`` (a plugin's registered name), else a function's qualified name,
    else its repr."""
    if isinstance(counter, CheckedCounter):
        return counter.label
    try:
        return _PLUGIN_LABELS[counter]
    except (KeyError, TypeError):  # not a plugin's, or not weakly referable
        pass
    name = getattr(counter, "name", None)
    if isinstance(name, str):
        return repr(name)
    qualname = getattr(counter, "__qualname__", None)
    return qualname if isinstance(qualname, str) else repr(counter)


def checked_count(value: Any, counter: Any, what: str) -> Any:
    """``value`` if it is a count (a number from 0 to ``MAX_COUNT``, not a bool; a number of another type as a
    float), else a TypeError/ValueError naming the counter and what it returned: a plugin's bad count must not turn
    into a negative total or a crash further on."""
    if value.__class__ is int and 0 <= value <= MAX_COUNT:
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        number: Any = value  # compared as it is: 10**400 overflows a float; NaN compares false
        if 0 <= number <= MAX_COUNT:
            return value if isinstance(value, int) else float(value)
        kind: type[Exception] = ValueError
    else:
        kind = TypeError
    raise kind(f"token counter {counter_label(counter)} returned {value!r} for {what}; expected a number from 0 "
               f"to 2**53")


def checked_counts(values: Sequence[Any], counter: Any, items: Sequence[Any], describe: Any = None) -> list[Any]:
    """``checked_count`` for the counts of ``items`` (texts, messages), one each: a list of ints costs two C passes.
    ``describe(item)`` names an item in an error (by default its repr, shortened)."""
    if not isinstance(values, Sequence) or len(values) != len(items):
        got = f"{len(values)} counts" if isinstance(values, Sequence) else repr(values)
        raise ValueError(f"token counter {counter_label(counter)} returned {got} for {len(items)} items")
    if set(map(type, values)) <= {int} and (not values or (min(values) >= 0 and max(values) <= MAX_COUNT)):
        return list(values)
    name = describe or (lambda item: f"{str(item)[:40]!r}")
    return [checked_count(value, counter, name(item)) for value, item in zip(values, items, strict=True)]


class CheckedCounter:
    """A plugin's counter whose every count is checked where it is produced (``checked_count``): a count that is
    None, a string, NaN, negative or beyond ``MAX_COUNT`` names the plugin's counter instead of becoming a negative
    total or a crash further on, and so does an exception from its counting (a ``PluginCounterError``), also when
    its own ``BaseTokenCounter`` methods check its counts. Every other attribute is the wrapped counter's, so its
    optional methods keep working."""

    def __init__(self, counter: Any, label: str) -> None:
        self._counter = counter
        self.name: str = counter.name
        self.label = label
        with contextlib.suppress(TypeError):  # not weakly referable: its own checks name it by its name only
            _PLUGIN_LABELS[counter] = label

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr in ("_counter", "label"):  # pickling and copying probe before __init__
            raise AttributeError(attr)
        value = getattr(self._counter, attr)
        if attr == "count_texts" and callable(value):
            return lambda texts: self._checked_list(value, texts, None)
        if attr == "count_message_batch" and callable(value):
            return lambda messages: self._checked_list(value, messages, _describe_message)
        return value

    @contextlib.contextmanager
    def _blamed(self, what: str) -> Iterator[None]:
        """The plugin's exceptions while counting ``what``, as a PluginCounterError naming it (ours pass as they
        are: they name it already)."""
        try:
            yield
        except Exception as exc:
            if str(exc).startswith(f"token counter {self.label}"):
                raise
            raise PluginCounterError(f"token counter {self.label} failed on {what}: {type(exc).__name__}: "
                                     f"{exc}") from exc

    def _checked_list(self, method: Any, items: Sequence[Any], describe: Any) -> list[Any]:
        with self._blamed(f"{len(items)} items"):
            counts = method(items)
        return checked_counts(counts, self, items, describe)

    def count_text(self, text: str) -> int:
        with self._blamed(f"text {text[:40]!r}"):
            count = self._counter.count_text(text)
        return checked_count(count, self, f"text {text[:40]!r}")  # type: ignore[no-any-return]

    def count_message(self, message: MessageLike) -> int:
        if not isinstance(message, BaseMessage):  # the plugin's counter sees ctxwin messages only
            return sum(self.count_message(m) for m in read_messages([message]))
        with self._blamed("a message"):
            count = self._counter.count_message(message)
        return checked_count(count, self, "a message")  # type: ignore[no-any-return]

    def count_messages(self, messages: Sequence[MessageLike], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        tools = request_tools(messages) if tools is None else tools
        messages = read_messages(messages)
        what = f"a list of {len(messages)} messages"
        with self._blamed(what):
            count = self._counter.count_messages(messages, tools=tools)
        return checked_count(count, self, what)  # type: ignore[no-any-return]


def _describe_message(message: BaseMessage) -> str:
    return f"a {message.type} message"


def scalar_text(text: str) -> str:
    """``text`` as tiktoken encodes it when it holds surrogates (from a JSON ``\\ud800`` escape): surrogate pairs
    joined into their character, lone surrogates replaced by U+FFFD. Counters whose tokenizer refuses surrogates
    count this, so every counter counts such text, and counts it alike."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@runtime_checkable
class TokenCounter(Protocol):
    """What the engine, strategies and planner need from a tokenizer.

    Two more attributes are part of the contract, optional for the protocol check (``BaseTokenCounter`` derives
    them; a counter without them is taken as not additive): ``additive: bool``, whether ``count_messages(ms)``
    (without tools) is, for every non-empty list, at most ``sum(count_message(m)) + request_overhead`` and equal to
    it for a request of one user message, so that engines may add up cached per-message counts and never
    under-count; and
    ``request_overhead: int``, what a non-empty request adds to its messages' counts (reply priming, BOS, a default
    system prompt). Two more change what the planner does (``BaseTokenCounter`` declares them, a counter without
    them is taken as exact): ``max_relative_error: float``, the error the planner's default ``safety_margin``
    allows for; ``estimating: bool``, counts that estimate the provider's (a session's ``observe`` corrects the
    budget both ways).
    """

    name: str

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: BaseMessage) -> int: ...

    def count_messages(
        self, messages: Sequence[BaseMessage], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> int: ...


def declared_overhead(counter: Any) -> int | None:
    """The request overhead of a counter that declares itself additive (``TokenCounter``), None for any other; a
    declaration that is not a bool and a non-negative int is a TypeError naming the counter."""
    additive = getattr(counter, "additive", False)
    if not isinstance(additive, bool):
        raise TypeError(f"token counter {counter_label(counter)}: additive must be a bool, got {additive!r}")
    if not additive:
        return None
    overhead = getattr(counter, "request_overhead", None)
    if overhead.__class__ is not int or overhead < 0:
        raise TypeError(
            f"token counter {counter_label(counter)} declares additive = True: request_overhead must be an int >= 0, "
            f"got {overhead!r}"
        )
    return int(overhead)


class BaseTokenCounter:
    """Subclass and implement ``count_text``; message and request framing come for free.

    Override ``count_texts`` to tokenize many strings at once (the trim engine calls it through
    ``count_message_batch``), and the class attributes to change the framing constants. ``additive`` is True and
    ``request_overhead`` is ``reply_priming``, as this framing makes them; a subclass that counts a request another
    way overrides them (see ``TokenCounter``).
    """

    name: str = "base"
    # Counts are the provider's own (a tokenizer it uses); an estimating counter sets ``estimating = True`` (a
    # session's ``observe`` then corrects its budget both ways) and its ``max_relative_error`` (the safety margin).
    estimating: bool = False
    max_relative_error: float = 0.0
    tokens_per_message: int = 3
    tokens_per_name: int = 1
    reply_priming: int = 3
    additive: bool = True

    @property
    def request_overhead(self) -> int:
        """What a non-empty request adds to its messages' counts (without tools)."""
        return self.reply_priming

    def count_text(self, text: str) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement count_text")

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        return [self.count_text(t) for t in texts]

    def count_block(self, block: dict[str, Any]) -> int:
        """Tokens of a non-text content block; a flat estimate unless a counter knows better."""
        return DEFAULT_BLOCK_TOKENS

    def content_parts(self, content: str | list[str | dict[str, Any]]) -> tuple[list[str], int]:
        """The text pieces of message content, and the tokens of its other blocks (images, files, ...)."""
        if isinstance(content, str):
            return [content], 0
        texts: list[str] = []
        fixed = 0
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif (text := block_text(block)) is not None:
                texts.append(text)
            else:
                fixed += self.count_block(block)
        return texts, fixed

    def label_tokens(self, label: str) -> int:
        """Tokens of a short label (role, name, tool name, call id), remembered per counter: labels repeat (every
        message names a role; a call id appears in the call and again in its result)."""
        memo: dict[str, int] | None = self.__dict__.get("_label_tokens")
        if memo is None or len(memo) > _LABEL_MEMO_SIZE:  # created on first use: subclasses need not call __init__
            memo = self.__dict__["_label_tokens"] = {}
        count = memo.get(label)
        if count is None:
            count = memo[label] = checked_count(self.count_text(label), self, f"text {label!r}")
        return count

    def message_texts(self, message: BaseMessage) -> tuple[list[str], int]:
        """The strings of a message to tokenize, and the tokens its framing, labels and non-text blocks add."""
        texts, fixed = self.content_parts(message.content)
        label = self.label_tokens
        fixed += self.tokens_per_message + label(openai_role(message))
        if message.name:
            fixed += self.tokens_per_name + label(message.name)
        if isinstance(message, AIMessage):
            reasoning = message.additional_kwargs.get("reasoning_content")
            if isinstance(reasoning, str):  # DeepSeek's, sent back beside the content (counted as text)
                texts.append(reasoning)
            for call in message.tool_calls:
                texts.append(json.dumps(call["args"], ensure_ascii=False))
                fixed += label(call["name"]) + label(call.get("id") or "")
            legacy = message.additional_kwargs.get("function_call")
            if not message.tool_calls and isinstance(legacy, dict):  # pre-tools OpenAI format: counted as sent
                texts.append(str(legacy.get("arguments") or ""))
                fixed += label(str(legacy.get("name") or ""))
            for bad in message.invalid_tool_calls:
                texts.append(bad.get("args") or "")
                fixed += label(bad.get("name") or "") + label(bad.get("id") or "")
        if isinstance(message, ToolMessage):
            fixed += label(message.tool_call_id)
        return texts, fixed

    def checked_texts(self, texts: Sequence[str]) -> Sequence[int]:
        """``count_texts``, checked: what a subclass's tokenizer returns is a count for every text."""
        return checked_counts(self.count_texts(texts), self, texts)

    def count_message(self, message: MessageLike) -> int:
        """Tokens of one message: a ctxwin message or anything ``convert_to_messages`` reads (an OpenAI dict, a
        LangChain message; an Anthropic dict that reads as several messages counts as all of them)."""
        if not isinstance(message, BaseMessage):
            return sum(self.count_message_batch(read_messages([message])))
        texts, fixed = self.message_texts(message)
        return fixed + sum(self.checked_texts(texts))

    def count_message_batch(self, messages: Sequence[BaseMessage]) -> list[int]:
        """``[count_message(m) for m in messages]``, tokenizing all their strings in one ``count_texts`` call."""
        spans: list[tuple[int, int, int]] = []
        texts: list[str] = []
        for message in messages:
            parts, fixed = self.message_texts(message)
            spans.append((len(texts), len(texts) + len(parts), fixed))
            texts.extend(parts)
        counts = self.checked_texts(texts)
        return [fixed + sum(counts[start:end]) for start, end, fixed in spans]

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        """Tokens of tool definitions sent with the request; by default the tokens of their JSON."""
        return sum(self.checked_texts([json.dumps(list(tools), ensure_ascii=False)])) if tools else 0

    def count_messages(self, messages: Sequence[MessageLike], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        """Tokens of a request; ``messages`` is anything ``convert_to_messages`` reads, so every field it keeps
        (an OpenAI or LangChain message's tool calls and call ids) is counted, never skipped; a whole request's
        ``tools`` are counted unless ``tools`` is given."""
        tools = request_tools(messages) if tools is None else tools
        messages = read_messages(messages)
        if not messages and not tools:
            return 0
        return sum(self.count_message_batch(messages)) + self.reply_priming + self.count_tools(tools or [])
