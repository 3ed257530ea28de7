"""Where tool calls and their results sit in a conversation, which cut points would separate them, and reading and
removing an AIMessage's tool calls wherever a call is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate, chain, compress, count, repeat
from operator import attrgetter, is_
from typing import Any, TypeVar

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

_AI = TypeVar("_AI", bound=AIMessage)


def call_ids(message: AIMessage) -> list[str]:
    """The ids of the message's tool calls, valid and invalid, in order (calls without an id are skipped)."""
    return [c["id"] for c in (*message.tool_calls, *message.invalid_tool_calls) if c["id"]]


def keep_tool_calls(message: _AI, keep: Callable[[str | None], bool]) -> _AI:
    """A copy of ``message`` without the tool calls whose id ``keep`` rejects; the input is never mutated.

    Calls are removed from ``tool_calls``, ``invalid_tool_calls``, the raw OpenAI entries in
    ``additional_kwargs["tool_calls"]`` (kept by ctxwin for exact round trips; the key is dropped when empty, as
    providers reject an empty list) and Anthropic ``tool_use`` content blocks.
    """
    update: dict[str, Any] = {
        "tool_calls": [c for c in message.tool_calls if keep(c.get("id"))],
        "invalid_tool_calls": [c for c in message.invalid_tool_calls if keep(c.get("id"))],
    }
    raw = message.additional_kwargs.get("tool_calls")
    if isinstance(raw, list):
        kept_raw = [r for r in raw if not isinstance(r, dict) or keep(r.get("id"))]
        extra = {k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"}
        if kept_raw:
            extra["tool_calls"] = kept_raw
        update["additional_kwargs"] = extra
    if isinstance(message.content, list):
        update["content"] = [
            block
            for block in message.content
            if not (isinstance(block, dict) and block.get("type") == "tool_use") or keep(block.get("id"))
        ]
    return message.model_copy(update=update)


def _calls_of(message: BaseMessage) -> list[str]:
    if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
        return call_ids(message)
    return []


_OTHER, _RESULT, _CALLER = "other", "result", "caller"


def _role(kind: type) -> str:
    if issubclass(kind, ToolMessage):
        return _RESULT
    return _CALLER if issubclass(kind, AIMessage) else _OTHER


# Each message class's role in a pair, found once per class: a scan reads every message's class, and ``isinstance``
# with a pydantic class costs as much as the rest of the loop.
_ROLES: dict[type, str] = {HumanMessage: _OTHER, ToolMessage: _RESULT, AIMessage: _CALLER}
_CALLS = attrgetter("tool_calls", "invalid_tool_calls")


class ToolPairs:
    """The pairs of one message list, with the number of pairs straddling each boundary of the covered suffix.

    ``strategy="last"`` asks only about boundaries near the end, so ``suffix_only`` covers a suffix, looking further
    back only for the calls of results in it, and widens it when a query reaches below.
    """

    def __init__(self, messages: Sequence[BaseMessage], *, track: bool = True, suffix_only: bool = False) -> None:
        self._messages = messages
        self._track = track
        self._start = len(messages) if suffix_only else 0
        self.results_of: dict[int, list[tuple[int, str]]] = {}  # call position -> [(result position, id)]
        self.call_of: dict[int, int] = {}  # result position -> call position
        self._straddling: list[int] = []
        if track:
            self._scan(self._start)

    def _scan(self, start: int) -> None:
        messages = self._messages
        self._start = start
        results_of: dict[int, list[tuple[int, str]]] = {}
        call_of: dict[int, int] = {}
        self.results_of, self.call_of = results_of, call_of
        pending: dict[str, int] = {}
        unresolved: dict[str, int] = {}  # results in the suffix whose call must be before it
        suffix = messages[start:]
        roles = list(map(_ROLES.get, map(type, suffix)))  # C loops, so a message outside pairs costs ~nothing
        if None in roles:
            for kind in set(map(type, suffix)) - _ROLES.keys():
                _ROLES[kind] = _role(kind)
            roles = list(map(_ROLES.__getitem__, map(type, suffix)))
        # An AI message without calls is outside pairs too: told by its call lists' truth, in C, not in the loop.
        callers = list(compress(count(start), map(is_, roles, repeat(_CALLER))))
        calling = list(compress(callers, map(any, map(_CALLS, map(messages.__getitem__, callers)))))
        results = list(compress(count(start), map(is_, roles, repeat(_RESULT))))
        if self._bind_unique(calling, results, unresolved):
            calling = results = []  # bound: no call id repeats, so order did not matter
        for index in sorted(chain(calling, results)):
            message = messages[index]
            if roles[index - start] is _RESULT:
                call_id = message.tool_call_id  # type: ignore[attr-defined]
                caller = pending.pop(call_id, None)
                if caller is not None:  # bound here, inline: this loop reads every message of the suffix
                    results_of.setdefault(caller, []).append((index, call_id))
                    call_of[index] = caller
                elif call_id not in unresolved:
                    unresolved[call_id] = index
            else:
                for call in (*message.tool_calls, *message.invalid_tool_calls):  # type: ignore[attr-defined]
                    if call["id"]:  # call_ids, inline
                        pending[call["id"]] = index
        for index in range(start - 1, -1, -1):
            if not unresolved:
                break
            message = messages[index]
            if isinstance(message, ToolMessage):
                unresolved.pop(message.tool_call_id, None)  # an earlier result took that call: ours is unpaired
            else:
                for call_id in _calls_of(message):
                    result = unresolved.pop(call_id, None)
                    if result is not None:
                        self._bind(index, result, call_id)
        diff = [0] * (len(messages) - start + 2)
        for result, call in call_of.items():
            diff[max(call + 1, start) - start] += 1
            diff[result + 1 - start] -= 1
        self._straddling = list(accumulate(diff))

    def _bind_unique(self, calling: list[int], results: list[int], unresolved: dict[str, int]) -> bool:
        """Bind the suffix's results to its calls where no call id repeats (as a provider makes them): a result's
        call is then the one with its id before it, found in a dict, not by walking the suffix in order. False,
        binding nothing, where an id repeats (the walk decides which call a result answers)."""
        messages = self._messages
        call_at: dict[str, int] = {}
        made = 0
        for index in calling:
            message = messages[index]
            for call in (*message.tool_calls, *message.invalid_tool_calls):  # type: ignore[attr-defined]
                if call["id"]:
                    call_at[call["id"]] = index
                    made += 1
        answered = list(map(attrgetter("tool_call_id"), map(messages.__getitem__, results)))
        if len(call_at) != made or len(set(answered)) != len(answered):
            return False
        for index, call_id in zip(results, answered, strict=True):
            caller = call_at.get(call_id, index)
            if caller < index:
                self.results_of.setdefault(caller, []).append((index, call_id))
                self.call_of[index] = caller
            elif call_id not in unresolved:
                unresolved[call_id] = index
        return True

    def _bind(self, call: int, result: int, call_id: str) -> None:
        self.results_of.setdefault(call, []).append((result, call_id))
        self.call_of[result] = call

    def cover(self, position: int) -> None:
        """Make sure boundaries and messages from ``position`` on are indexed (doubling the suffix as needed)."""
        if self._track and position < self._start:
            self._scan(max(0, min(position, len(self._messages) - 2 * (len(self._messages) - self._start) - 64)))

    def straddling(self, boundary: int) -> int:
        """How many pairs a cut at ``boundary`` would separate."""
        if not self._track:
            return 0
        self.cover(boundary)
        return self._straddling[boundary - self._start]

    def caller(self, result: int) -> int | None:
        self.cover(result)
        return self.call_of.get(result)

    def results_in(self, call: int, start: int, end: int) -> set[str]:
        """Ids of the calls at position ``call`` whose results lie in ``[start, end)``."""
        self.cover(call)
        return {call_id for result, call_id in self.results_of.get(call, ()) if start <= result < end}
