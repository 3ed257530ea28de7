"""What the networked counters share: per-message counts derived from a provider's whole-request count endpoint, each
distinct request sent once, with timeouts and no retries. Their counts do not add up exactly, so the counter
declares itself non-additive and the trim engine measures whole candidate lists (docs/counters.md).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.counters._api.store import StoredCounts
from ctxwin.counters._base import BaseTokenCounter
from ctxwin.counters._errors import CountRequestError
from ctxwin.messages import BaseMessage, convert_to_openai_messages
from ctxwin.messages._convert import MessageLike, read_messages, request_tools

# Seconds a counting request may take before it fails (one attempt: never retried).
DEFAULT_TIMEOUT = 20.0
TIMEOUT_ENV = "CTXWIN_API_TIMEOUT"
_DOT: dict[str, Any] = {"role": "user", "content": "."}
_REPLY: dict[str, Any] = {"role": "assistant", "content": "."}


def api_timeout() -> float:
    """``$CTXWIN_API_TIMEOUT`` seconds, else ``DEFAULT_TIMEOUT``."""
    value = os.environ.get(TIMEOUT_ENV)
    if not value:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise InvalidInputError(f"{TIMEOUT_ENV} must be a positive number of seconds, got {value!r}")
    return seconds


def transport_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """``(timeouts, other connection errors)`` of httpx and httpx2, whichever are installed (an SDK's transport
    may be either, and raise its errors as they are)."""
    timeouts: list[type[Exception]] = []
    transport: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


def checked_tokens(value: Any, what: str) -> int:
    """A count from a provider's response, or CountRequestError naming the malformed response."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CountRequestError(f"{what}: malformed response: expected a token count (int >= 0), got {value!r}")
    return value


def _context(item: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The minimal conversation before and after a message (OpenAI form) that makes it a valid request."""
    role = item["role"]
    if role in ("system", "developer"):
        return [], [_DOT]
    if role == "assistant":
        return [_DOT], []
    if role == "tool":
        call = {"id": item.get("tool_call_id"), "type": "function",
                "function": {"name": item.get("name") or "tool", "arguments": "{}"}}
        return [_DOT, {"role": "assistant", "content": "", "tool_calls": [call]}], []
    return [_DOT, _REPLY], []


class ApiCounter(BaseTokenCounter):
    """A counter backed by a token-counting endpoint; subclasses build the provider's request and send it."""

    provider = "api"
    # A message's count is the endpoint's difference with and without it: the request's count is not their sum.
    additive = False

    def __init__(self, model: str, *, cache: StoredCounts | None = None, timeout: float | None = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError(f"the {self.provider} counter needs a model: '{self.provider}:<model>'")
        self.model = model
        self.name = f"{self.provider}:{model}"
        self.cache = cache if cache is not None else StoredCounts()
        self.timeout = api_timeout() if timeout is None else timeout

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"

    def request(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
        """The provider's count request (JSON-able) for OpenAI-form ``messages`` and OpenAI-form ``tools``."""
        raise NotImplementedError

    def send(self, request: Mapping[str, Any]) -> int:
        """One request to the endpoint, no retry: its count, or CountRequestError / ValueError."""
        raise NotImplementedError

    def tokens(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> int:
        """The provider's count of a request, from the cache when it was counted before."""
        return self.cache.count(self.name, self.request(messages, tools), self.send)

    def count_text(self, text: str) -> int:
        if not isinstance(text, str):
            raise InvalidTypeError(f"count_text expects a str, got {type(text).__name__}")
        if not text:
            return 0
        return max(0, self.tokens([{"role": "user", "content": text}]) - self.tokens([_DOT]) + 1)

    def count_message(self, message: MessageLike) -> int:
        return sum(self.count_message_batch(read_messages([message])))

    def count_message_batch(self, messages: Sequence[BaseMessage]) -> list[int]:
        counts = []
        for item in convert_to_openai_messages(list(messages)):
            before, after = _context(item)
            counts.append(max(0, self.tokens([*before, item, *after]) - self.tokens([*before, *after])))
        return counts

    def count_messages(self, messages: Sequence[MessageLike], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        tools = request_tools(messages) if tools is None else tools  # a whole request's own tools
        items = convert_to_openai_messages(read_messages(messages))
        if not items and not tools:
            return 0
        if not items:  # a request needs a message: the tools' share of a one-turn request
            return max(0, self.tokens([_DOT], tools) - self.tokens([_DOT]))
        return self.tokens(items, tools)
