"""The TokenCounter protocol, BaseTokenCounter (message framing derived from ``count_text``, OpenAI's chat accounting)
and ``as_token_counter``, which gives a counter with only the original four members the rest of the contract.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from numbers import Real
from typing import Any, Protocol, runtime_checkable

from ctxwin._accelerators import accelerator
from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin._plural import plural
from ctxwin.counters._compaction import COMPACTION, compaction_parts
from ctxwin.counters._errors import PluginCounterError
from ctxwin.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from ctxwin.messages._content import block_text
from ctxwin.messages._convert import MessageLike, read_messages, request_tools
from ctxwin.messages._openai_format import FIXED_ROLES, dumps_unescaped, openai_role, sent_arguments

# How the framing reads a message's class, found once per class: ``isinstance`` with a pydantic class the message
# is not an instance of costs more than framing a short message. The bits are _framing.c's too.
_CALLS, _RESULT = 1, 2
_KINDS: dict[type, int] = {}


def _kind(cls: type) -> int:
    """``_CALLS`` for an assistant message class (it may call tools), ``_RESULT`` for a tool result's, else 0."""
    kind = _KINDS.get(cls)
    if kind is None:
        kind = _KINDS[cls] = (_CALLS if issubclass(cls, AIMessage) else 0) | (
            _RESULT if issubclass(cls, ToolMessage) else 0)
    return kind


_FRAMING = accelerator("ctxwin.counters._framing")
_C_FRAME: Callable[..., tuple[list[str], list[tuple[int, int]]]] | None = None if _FRAMING is None else _FRAMING.frame

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
        raise InvalidInputError(f"token counter {counter_label(counter)} returned {got} for "
                                f"{plural(len(items), 'item')}")
    if set(map(type, values)) <= {int} and (not values or (min(values) >= 0 and max(values) <= MAX_COUNT)):
        return list(values)
    name = describe or (lambda item: f"{str(item)[:40]!r}")
    return [checked_count(value, counter, name(item)) for value, item in zip(values, items, strict=True)]


def _describe_message(message: BaseMessage) -> str:
    return f"a {message.type} message"


def scalar_text(text: str) -> str:
    """``text`` as tiktoken encodes it when it holds surrogates (from a JSON ``\\ud800`` escape): surrogate pairs
    joined into their character, lone surrogates replaced by U+FFFD. Counters whose tokenizer refuses surrogates
    count this, so every counter counts such text, and counts it alike."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@runtime_checkable
class TokenCounter(Protocol):
    """What the engine, strategies and planner read of a tokenizer: every member, in one place.

    ``BaseTokenCounter`` implements them all from ``count_text`` (its defaults are in its docstring). A counter that
    implements only ``name``, ``count_text``, ``count_message`` and ``count_messages`` still works: where it enters
    (``get_counter``, ``trim_messages``, a ``Planner``), ``as_token_counter`` wraps it once in a ``CounterAdapter``
    that supplies the rest, with the defaults of a counter that promises nothing (in parentheses below).

    - ``additive`` (False): whether ``count_messages(ms)`` (without tools) is, for every non-empty list, at most
      ``sum(count_message(m)) + request_overhead`` and equal to it for a request of one user message, so engines
      may add up cached per-message counts and never under-count; if not, they count whole candidate lists.
    - ``request_overhead`` (0): what a non-empty request adds to its messages' counts (reply priming, BOS, a default
      system prompt); read only when ``additive``.
    - ``estimating`` (False): counts estimate the provider's, so a session's ``observe`` corrects its budget both
      ways (an exact counter's only when the provider counted more).
    - ``max_relative_error`` (0.0): the error the planner's default ``safety_margin`` allows for (a counter with one
      is also taken as estimating).
    - ``count_texts(texts)`` (``count_text`` each): many strings at once, as the strategies ask.
    - ``count_message_batch(messages)`` (``count_message`` each): many messages at once, as the engines ask.
    - ``count_tools(tools)`` (a one-message request's count with the tools, less its count without): what tool
      definitions add to a request.
    - ``exact_sum`` (False): the sum of the messages' counts plus ``request_overhead`` and ``count_tools`` is the
      request's count exactly (``BaseTokenCounter``'s own framing); otherwise a plan reports ``count_messages`` of
      what it sends, the sum (an upper bound) only deciding.
    """

    name: str

    @property
    def additive(self) -> bool: ...

    @property
    def request_overhead(self) -> int: ...

    @property
    def estimating(self) -> bool: ...

    @property
    def max_relative_error(self) -> float: ...

    @property
    def exact_sum(self) -> bool: ...

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: BaseMessage) -> int: ...

    def count_messages(
        self, messages: Sequence[BaseMessage], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> int: ...

    def count_texts(self, texts: Sequence[str]) -> list[int]: ...

    def count_message_batch(self, messages: Sequence[BaseMessage]) -> list[int]: ...

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int: ...


def declared_overhead(counter: TokenCounter) -> int | None:
    """The request overhead of a counter that declares itself additive (``TokenCounter``), None for any other; a
    declaration that is not a bool and a non-negative int is a TypeError naming the counter."""
    additive: Any = counter.additive
    if not isinstance(additive, bool):
        raise InvalidTypeError(f"token counter {counter_label(counter)}: additive must be a bool, got {additive!r}")
    if not additive:
        return None
    overhead: Any = counter.request_overhead
    if overhead.__class__ is not int or overhead < 0:
        raise InvalidTypeError(
            f"token counter {counter_label(counter)} declares additive = True: request_overhead must be an int >= 0, "
            f"got {overhead!r}"
        )
    return int(overhead)


class BaseTokenCounter:
    """Subclass and implement ``count_text``; message and request framing come for free, and every other member of
    ``TokenCounter`` has a default that holds for this framing.

    ``additive`` is True and ``request_overhead`` is ``reply_priming``, as this framing makes them; a subclass that
    counts a request another way overrides them. ``estimating`` is False and ``max_relative_error`` 0.0: counts are
    the provider's own (a tokenizer it uses); an estimating counter sets both. ``count_texts`` counts each text
    (override it to tokenize many strings at once: ``count_message_batch`` and ``count_tools`` go through it), and
    the class attributes below change the framing constants.
    """

    name: str = "base"
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

    @property
    def exact_sum(self) -> bool:
        """Whether ``count_messages`` is exactly the sum of ``count_message`` plus ``request_overhead`` and the
        tools' ``count_tools``: this class's framing is; a subclass that counts whole requests its own way (a chat
        template that drops earlier reasoning or joins tool results) is not, its sum being an upper bound that the
        planner uses to decide and never to report."""
        return type(self).count_messages is BaseTokenCounter.count_messages

    def count_text(self, text: str) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement count_text")

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        return [self.count_text(t) for t in texts]

    def count_block(self, block: dict[str, Any]) -> int:
        """Tokens of a non-text content block; a flat estimate unless a counter knows better."""
        return DEFAULT_BLOCK_TOKENS

    def content_parts(self, content: str | list[str | dict[str, Any]]) -> tuple[list[str], int]:
        """The text pieces of message content, and the tokens of its other blocks (images, files, a provider's
        compaction block: ``compaction_parts``, ...). ``message_texts`` asks it for list content only: string
        content is its one piece."""
        if isinstance(content, str):
            return [content], 0
        texts: list[str] = []
        fixed = 0
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif (text := block_text(block)) is not None:
                texts.append(text)
            elif block.get("type") == COMPACTION:
                summary, opaque = compaction_parts(block)
                texts += summary
                fixed += opaque
            else:
                fixed += self.count_block(block)
        return texts, fixed

    def label_tokens(self, label: str) -> int:
        """Tokens of a short label (role, name, tool name, call id), remembered per counter: labels repeat (every
        message names a role; a call id appears in the call and again in its result)."""
        labels = self._labels()
        count = labels.get(label)
        if count is None:
            count = labels[label] = checked_count(self.count_text(label), self, f"text {label!r}")
        return count

    def _labels(self) -> dict[str, int]:
        """The remembered label counts, started over when full (call ids are unique: it must not grow forever)."""
        labels: dict[str, int] | None = self.__dict__.get("_label_tokens")
        if labels is None or len(labels) > _LABEL_MEMO_SIZE:  # made on first use: subclasses need not call __init__
            labels = self.__dict__["_label_tokens"] = {}
        return labels

    def message_texts(self, message: BaseMessage) -> tuple[list[str], int]:
        """The strings of a message to tokenize, and the tokens its framing, labels and non-text blocks add."""
        # Asked of every message a cold trim reaches: a pydantic message's fields are read from its dict (each
        # attribute read goes through pydantic's ``__getattr__`` hook), its class once, its labels from the memo.
        fields = message.__dict__
        content = fields["content"]
        texts, fixed = ([content], 0) if content.__class__ is str else self.content_parts(content)
        labels = [FIXED_ROLES.get(fields["type"]) or openai_role(message)]  # what it names, counted as labels
        if name := fields["name"]:
            fixed += self.tokens_per_name
            labels.append(name)
        kind = _KINDS.get(type(message))
        if kind is None:
            kind = _kind(type(message))
        if kind & _CALLS:
            self._call_texts(message, fields, texts, labels)
        if kind & _RESULT:
            labels.append(fields["tool_call_id"])
        memo = self.__dict__.get("_label_tokens") or self._labels()
        counts: list[Any] = list(map(memo.get, labels))
        if None in counts:  # a label not seen before
            counts = list(map(self.label_tokens, labels))
        return texts, fixed + self.tokens_per_message + sum(counts)

    def _call_texts(self, message: BaseMessage, fields: dict[str, Any], texts: list[str], labels: list[str]) -> None:
        """An assistant message's texts and labels besides its content: reasoning sent back, tool calls as sent."""
        extra = fields["additional_kwargs"]
        reasoning = extra.get("reasoning_content")
        if isinstance(reasoning, str):  # DeepSeek's, sent back beside the content (counted as text)
            texts.append(reasoning)
        calls = fields["tool_calls"]
        if calls:
            texts += sent_arguments(message)  # type: ignore[arg-type]  # as sent: the caller's own text if kept
            for call in calls:
                labels += call["name"], call.get("id") or ""
        elif isinstance(legacy := extra.get("function_call"), dict):
            texts.append(str(legacy.get("arguments") or ""))  # pre-tools OpenAI format: counted as sent
            labels.append(str(legacy.get("name") or ""))
        for bad in fields["invalid_tool_calls"]:
            texts.append(bad.get("args") or "")
            labels += bad.get("name") or "", bad.get("id") or ""

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
        texts, framed = self._framed(messages)
        counts = iter(self.checked_texts(texts))
        return [fixed + (next(counts) if size == 1 else sum(islice(counts, size))) for size, fixed in framed]

    def _framed(self, messages: Sequence[BaseMessage]) -> tuple[list[str], list[tuple[int, int]]]:
        """Every message's strings, in order, and for each message how many strings and the tokens its framing
        adds: ``message_texts``, in C (``_framing.c``) where this counter frames as this class does."""
        if _C_FRAME is not None and self._frames_as_base():
            return _C_FRAME(messages, self._labels(), FIXED_ROLES, _KINDS, self.tokens_per_message,
                            self.tokens_per_name, dumps_unescaped, self.message_texts)
        texts: list[str] = []
        framed: list[tuple[int, int]] = []
        for message in messages:
            parts, fixed = self.message_texts(message)
            texts += parts
            framed.append((len(parts), fixed))
        return texts, framed

    def _frames_as_base(self) -> bool:
        """Whether this counter's framing is this class's own: no framing method of its own, whole framing
        constants (a subclass's framing is asked in Python)."""
        cls = type(self)
        return (cls.message_texts is BaseTokenCounter.message_texts and "message_texts" not in self.__dict__
                and cls.label_tokens is BaseTokenCounter.label_tokens and "label_tokens" not in self.__dict__
                and type(self.tokens_per_message) is int and type(self.tokens_per_name) is int)

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


# What a counter must have to be one; the other members of ``TokenCounter`` have defaults (``CounterAdapter``).
REQUIRED_METHODS = ("count_text", "count_message", "count_messages")
# The members ``CounterAdapter`` takes from the counter when it has them.
OPTIONAL_MEMBERS = (
    "additive", "request_overhead", "estimating", "max_relative_error", "exact_sum", "count_texts",
    "count_message_batch", "count_tools",
)


def missing_members(obj: Any) -> list[str]:
    """What ``obj`` lacks of the members every counter has: a str ``name`` and the ``REQUIRED_METHODS``."""
    missing = [] if isinstance(getattr(obj, "name", None), str) else ["a str 'name'"]
    return missing + [method for method in REQUIRED_METHODS if not callable(getattr(obj, method, None))]


class CounterAdapter:
    """A counter that implements part of the contract (at least ``name`` and the ``REQUIRED_METHODS``) as a whole
    ``TokenCounter``: the members it has are read once, here, and the others are the defaults listed on
    ``TokenCounter``. Other attributes are the wrapped counter's (``counter``), so its own extras keep working."""

    def __init__(self, counter: Any) -> None:
        self.counter = counter
        self.name: str = counter.name
        own = {member: getattr(counter, member) for member in OPTIONAL_MEMBERS if hasattr(counter, member)}
        self.additive: bool = own.get("additive", False)
        self.request_overhead: int = own.get("request_overhead", 0)
        self.estimating: bool = own.get("estimating", False)
        self.max_relative_error: float = own.get("max_relative_error", 0.0)
        self.exact_sum: bool = own.get("exact_sum", False)
        self._own_methods = frozenset(m for m in ("count_texts", "count_message_batch", "count_tools") if m in own)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr in ("counter", "_own_methods"):  # pickling and copying probe before __init__
            raise AttributeError(attr)
        return getattr(self.counter, attr)

    def count_text(self, text: str) -> int:
        return self.counter.count_text(text)  # type: ignore[no-any-return]

    def count_message(self, message: BaseMessage) -> int:
        return self.counter.count_message(message)  # type: ignore[no-any-return]

    def count_messages(self, messages: Sequence[BaseMessage], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        if tools is None:  # a counter written before tools were counted may not take them
            return self.counter.count_messages(messages)  # type: ignore[no-any-return]
        return self.counter.count_messages(messages, tools=tools)  # type: ignore[no-any-return]

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        if "count_texts" in self._own_methods:
            return list(self.counter.count_texts(texts))
        return [self.count_text(text) for text in texts]

    def count_message_batch(self, messages: Sequence[BaseMessage]) -> list[int]:
        if "count_message_batch" in self._own_methods:
            return list(self.counter.count_message_batch(messages))
        return [self.count_message(message) for message in messages]

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        if "count_tools" in self._own_methods:
            return self.counter.count_tools(tools)  # type: ignore[no-any-return]
        if not tools:
            return 0
        probe = [SystemMessage("x")]
        return self.count_messages(probe, tools=tools) - self.count_messages(probe)


class CheckedCounter(CounterAdapter):
    """A plugin's counter (a ``CounterAdapter``) whose every count is checked where it is produced
    (``checked_count``): a count that is None, a string, NaN, negative or beyond ``MAX_COUNT`` names the plugin's
    counter instead of becoming a negative total or a crash further on, and so does an exception from its counting
    (a ``PluginCounterError``), also when its own ``BaseTokenCounter`` methods check its counts."""

    def __init__(self, counter: Any, label: str) -> None:
        super().__init__(counter)
        self.label = label
        with contextlib.suppress(TypeError):  # not weakly referable: its own checks name it by its name only
            _PLUGIN_LABELS[counter] = label

    def __getattr__(self, attr: str) -> Any:
        if attr == "label":
            raise AttributeError(attr)
        return super().__getattr__(attr)

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
        with self._blamed(plural(len(items), "item")):
            counts = method(items)
        return checked_counts(counts, self, items, describe)

    def count_text(self, text: str) -> int:
        with self._blamed(f"text {text[:40]!r}"):
            count = self.counter.count_text(text)
        return checked_count(count, self, f"text {text[:40]!r}")  # type: ignore[no-any-return]

    def count_message(self, message: MessageLike) -> int:
        if not isinstance(message, BaseMessage):  # the plugin's counter sees ctxwin messages only
            return sum(self.count_message(m) for m in read_messages([message]))
        with self._blamed("a message"):
            count = self.counter.count_message(message)
        return checked_count(count, self, "a message")  # type: ignore[no-any-return]

    def count_messages(self, messages: Sequence[MessageLike], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        tools = request_tools(messages) if tools is None else tools
        messages = read_messages(messages)
        what = f"a list of {len(messages)} messages"
        with self._blamed(what):
            count = super().count_messages(messages, tools=tools)
        return checked_count(count, self, what)  # type: ignore[no-any-return]

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        if "count_texts" in self._own_methods:
            return self._checked_list(self.counter.count_texts, texts, None)
        return super().count_texts(texts)

    def count_message_batch(self, messages: Sequence[BaseMessage]) -> list[int]:
        if "count_message_batch" in self._own_methods:
            return self._checked_list(self.counter.count_message_batch, messages, _describe_message)
        return super().count_message_batch(messages)

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        if "count_tools" not in self._own_methods:
            return super().count_tools(tools)
        with self._blamed(f"{len(tools)} tool definitions"):
            count = self.counter.count_tools(tools)
        return checked_count(count, self, f"{len(tools)} tool definitions")  # type: ignore[no-any-return]


def as_token_counter(obj: Any) -> TokenCounter | None:
    """``obj`` as a whole ``TokenCounter``: itself when it declares the whole contract, a ``CounterAdapter`` when it
    has the members every counter has (``missing_members``), None when it is not a counter (a function, a chat
    model). Called where a counter enters, so nothing further on looks for optional members."""
    if isinstance(obj, (BaseTokenCounter, CounterAdapter)):  # the usual cases, without the protocol's attribute walk
        return obj
    if missing_members(obj):
        return None
    return obj if isinstance(obj, TokenCounter) else CounterAdapter(obj)


def estimates(counter: TokenCounter) -> bool:
    """Whether ``counter``'s counts estimate the provider's: it says so (``estimating``) or allows for an error
    (``max_relative_error``); reports call its figures estimates."""
    return bool(counter.estimating or counter.max_relative_error)


def require_counter(obj: Any, what: str = "counter") -> TokenCounter:
    """``as_token_counter(obj)``, or a TypeError naming ``what`` and the members ``obj`` lacks."""
    counter = as_token_counter(obj)
    if counter is None:
        raise InvalidTypeError(f"{what} must be a TokenCounter or a counter name, got {type(obj).__name__}, which "
                               f"lacks "
                               f"{', '.join(missing_members(obj))}")
    return counter
