"""WindowedHistory: keeps every message in a backing history and shows the recent window that fits, statefully, so a
chat turn costs what changed (docs/history.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.counters._base import TokenCounter, as_token_counter
from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from ctxwin.trim import trim_stored
from ctxwin.trim._selection import TypeSpec, is_message_type, parse_type_spec

if TYPE_CHECKING:
    from ctxwin.trim import TypeArg

CounterLike = TokenCounter | str | Callable[[list[BaseMessage]], int] | Callable[[BaseMessage], int]


class WindowedHistory(BaseChatMessageHistory):
    """A view of ``history`` limited to a recent window; writes go to ``history`` unchanged.

    ``counter`` (needed with ``max_tokens``) is a TokenCounter, a spec for ``ctxwin.counters.get_counter`` such as
    ``"gpt-4o"`` or ``"approximate"``, or anything else ``trim_messages`` takes as ``token_counter``.
    ``start_on`` (``trim_messages``'s argument: type strings such as ``"human"``, message classes, or a sequence of
    either; default ``"human"``) is what the window after the system message must begin with: earlier messages in
    the window are left out, and with no such message the window is the system message alone. ``None`` lets it
    begin anywhere. ``tool_pairs="keep"`` never lets the window hold a ToolMessage whose tool call is not in it
    (cut, or never stored); ``"ignore"`` cuts blindly, as LangChain does.

    The window is in the caller's form (docs/interop.md): LangChain messages once LangChain messages were added
    through it, or when ``history`` was opened with ``form="langchain"``.
    """

    def __init__(
        self,
        history: BaseChatMessageHistory,
        *,
        max_messages: int | None = None,
        max_tokens: int | None = None,
        counter: CounterLike | None = None,
        include_system: bool = True,
        tool_pairs: Literal["keep", "ignore"] = "keep",
        system_prompt: str | SystemMessage | None = None,
        start_on: TypeArg | None = "human",
    ) -> None:
        if not all(callable(getattr(history, name, None)) for name in ("add_messages", "clear")):
            raise InvalidTypeError(f"history must be a chat message history, got {type(history).__name__}")
        for name, limit in (("max_messages", max_messages), ("max_tokens", max_tokens)):
            if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
                raise InvalidInputError(f"{name} must be a positive integer or None, got {limit!r}")
        if (max_tokens is None) != (counter is None):
            raise InvalidInputError("max_tokens and counter go together: a token budget needs a counter and vice versa")
        if tool_pairs not in ("keep", "ignore"):
            raise InvalidInputError(f"tool_pairs must be 'keep' or 'ignore', got {tool_pairs!r}")
        if system_prompt is not None and not isinstance(system_prompt, (str, SystemMessage)):
            raise InvalidTypeError(f"system_prompt must be a string or a SystemMessage, got "
                                   f"{type(system_prompt).__name__}")
        super().__init__(form=getattr(history, "form", "messages"))
        self.history = history
        self.max_messages = max_messages
        self.max_tokens = max_tokens
        self.counter = _resolve(counter)
        self.include_system = include_system
        self.tool_pairs = tool_pairs
        self.system_prompt = SystemMessage(system_prompt) if isinstance(system_prompt, str) else system_prompt
        self.start_on = start_on
        self._start_on = None if start_on is None else parse_type_spec(start_on, "start_on")
        # The stored messages as last read (after the system prompt, when there is one), plus those added through
        # this window since, and the backing history's revision they correspond to (None: read on the next read).
        self._view: list[BaseMessage] = []
        self._revision: tuple[Hashable, int] | None = None
        self._state = threading.Lock()  # one thread at a time reads, trims or extends the kept messages

    @property
    def all_messages(self) -> list[Any]:
        """Everything stored in the backing history, in the window's form."""
        return self.in_caller_form(_stored(self.history))

    def stored_messages(self) -> list[BaseMessage]:
        """The window: the leading system message, then the most recent messages within the limits."""
        with self._state:  # the kept messages do not grow while they are trimmed
            return self._window(self._read())

    def _window(self, view: list[BaseMessage]) -> list[BaseMessage]:
        """The window of ``view``: the stored messages, after the system prompt when there is one."""
        lead = 1 if self.system_prompt is not None or (
            self.include_system and view and isinstance(view[0], SystemMessage)
        ) else 0
        if self.max_messages is not None:
            room = self.max_messages - lead
            view = view[:lead] + view[max(lead, len(view) - room) :] if room > 0 else view[:lead]
        head = list(view[:lead])
        if self.max_tokens is not None and view:
            trimmed = trim_stored(
                view,
                max_tokens=self.max_tokens,
                token_counter=self.counter,
                include_system=bool(lead),
                tool_pairs=self.tool_pairs,
            )
            kept = lead if trimmed[:lead] == head else 0
            head, body = trimmed[:kept], trimmed[kept:]
        else:
            body = view[lead:]
        return head + valid_window(body, start_on=self._start_on, keep_tool_pairs=self.tool_pairs == "keep")

    def store_messages(self, batch: list[BaseMessage]) -> None:
        """The history stores the batch (it refuses it whole, or takes it), and the window's view grows by it."""
        with self._state:
            before = self._history_revision()
            self.history.add_messages(batch)
            after = self._history_revision()
            if batch and before is not None and before == self._revision and after == (before[0], before[1] + 1):
                self._view += batch  # nobody else wrote in between: the stored messages are ours plus the batch
                self._revision = after
            else:
                self._revision = None

    def clear_stored(self) -> None:
        with self._state:
            self.history.clear()
            self._revision = None

    def _history_revision(self) -> tuple[Hashable, int] | None:
        revision = getattr(self.history, "revision", None)  # histories not derived from BaseChatMessageHistory
        return revision() if callable(revision) else None

    def _read(self) -> list[BaseMessage]:
        """The stored messages after the system prompt if any, read again only when the backing history changed
        other than through this window. Called under ``_state``; never handed out: every window is a new list."""
        revision = self._history_revision()
        if revision is None or revision != self._revision:
            prompt = [self.system_prompt] if self.system_prompt is not None else []
            self._view = prompt + _stored(self.history)
            self._revision = revision
        return self._view


def valid_window(
    messages: Sequence[BaseMessage], *, start_on: TypeSpec | None, keep_tool_pairs: bool
) -> list[BaseMessage]:
    """``messages`` from the first ``start_on`` message on; with ``keep_tool_pairs``, minus tool results whose call
    is not before them in the result. One pass over the window, never over the whole history.

    Leaving the result out (rather than moving the start past the call's turn) keeps the most recent turns.
    """
    window: list[BaseMessage] = []
    calls: set[Any] = set()
    for message in messages:
        if not window and start_on is not None and not is_message_type(message, start_on):
            continue
        if isinstance(message, ToolMessage) and keep_tool_pairs and message.tool_call_id not in calls:
            continue
        if isinstance(message, AIMessage):
            calls.update(call["id"] for call in [*message.tool_calls, *message.invalid_tool_calls])
        window.append(message)
    return window


def _stored(history: BaseChatMessageHistory) -> list[BaseMessage]:
    """A history's messages as ctxwin messages (the ``messages`` of one not derived from ours, as it gives them)."""
    stored = getattr(history, "stored_messages", None)
    return stored() if callable(stored) else history.messages


def _resolve(counter: CounterLike | None) -> CounterLike | None:
    if isinstance(counter, str):
        from ctxwin.counters import get_counter  # lazily: plugins load on first use

        resolved: TokenCounter = get_counter(counter)
        return resolved
    if counter is None:
        return None
    adapted = as_token_counter(counter)
    if adapted is not None:
        return adapted
    if not (callable(counter) or hasattr(counter, "get_num_tokens_from_messages")):
        raise InvalidTypeError(
            f"counter must be a TokenCounter, a counter spec string or a token-counting callable, "
            f"got {type(counter).__name__}"
        )
    return counter
