"""Where tool calls and their results sit in a conversation, which cut points would separate them, and reading and
removing an AIMessage's tool calls wherever a call is recorded.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import chain, compress, count, repeat
from operator import attrgetter, is_, itemgetter, lt, not_
from typing import Any, TypeVar

from ctxwin._accelerators import accelerator
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


def _learn_roles(messages: Sequence[BaseMessage]) -> bool:
    """Find the role of the classes of ``messages`` not in ``_ROLES``; whether there were any."""
    new = set(map(type, messages)) - _ROLES.keys()
    for kind in new:
        _ROLES[kind] = _role(kind)
    return bool(new)


_PAIRSCAN = accelerator("ctxwin.trim._pairscan")
_C_SCAN: Callable[..., Bound | None] | None = None if _PAIRSCAN is None else _PAIRSCAN.scan
_CALLS = attrgetter("tool_calls", "invalid_tool_calls")
_ID = itemgetter("id")
_ANSWERS = attrgetter("tool_call_id")
Bound = tuple[dict[int, int], dict[str, int]]  # result -> call position; call id -> a result whose call is earlier


class ToolPairs:
    """The pairs of one message list, with the number of pairs straddling each boundary of the covered suffix.

    ``strategy="last"`` asks only about boundaries near the end, so ``suffix_only`` covers a suffix, looking further
    back only for the calls of results in it, and widens it when a query reaches below.
    """

    def __init__(self, messages: Sequence[BaseMessage], *, track: bool = True, suffix_only: bool = False) -> None:
        self._messages = messages
        self._track = track
        self._start = len(messages) if suffix_only else 0
        self.call_of: dict[int, int] = {}  # result position -> call position
        self._results_of: dict[int, list[tuple[int, str]]] | None = None
        # Sorted, one entry per pair: its call's position and its result's. A pair straddles the boundaries after
        # its call up to its result's, so how many straddle a boundary is two bisections.
        self._calls: list[int] = []
        self._results: list[int] = []
        if track:
            self._scan(self._start)

    @property
    def results_of(self) -> dict[int, list[tuple[int, str]]]:
        """Call position -> [(result position, call id)], made when first asked (a trim seldom asks)."""
        if self._results_of is None:
            results_of: dict[int, list[tuple[int, str]]] = {}
            for result, call in sorted(self.call_of.items()):
                results_of.setdefault(call, []).append((result, self._messages[result].tool_call_id))  # type: ignore[attr-defined]
            self._results_of = results_of
        return self._results_of

    def _scan(self, start: int) -> None:
        messages = self._messages
        self._start = start
        call_of, unresolved = self._bound(start)
        for index in range(start - 1, -1, -1):  # results in the suffix whose call is before it (usually just before)
            if not unresolved:
                break
            message = messages[index]
            if isinstance(message, ToolMessage):
                unresolved.pop(message.tool_call_id, None)  # an earlier result took that call: ours is unpaired
            else:
                for call_id in _calls_of(message):
                    result = unresolved.pop(call_id, None)
                    if result is not None:
                        call_of[result] = index
        self.call_of, self._results_of = call_of, None
        self._calls, self._results = sorted(call_of.values()), sorted(call_of)

    def _bound(self, start: int) -> Bound:
        """The results of ``messages[start:]`` bound to the calls there they answer, and those answering none there
        (by id: their call may be earlier). In C where it is built (``_pairscan.c``, the walk in order), else in
        Python: where no call id repeats (as a provider makes them) order does not matter, else the walk decides."""
        messages = self._messages
        suffix = messages[start:]
        if _C_SCAN is not None:
            bound = _C_SCAN(messages, start, _ROLES, _RESULT, _CALLER)
            if bound is None and _learn_roles(suffix):  # a class seen for the first time: again, knowing it
                bound = _C_SCAN(messages, start, _ROLES, _RESULT, _CALLER)
            if bound is not None:
                return bound
        _learn_roles(suffix)
        roles = list(map(_ROLES.__getitem__, map(type, suffix)))  # C loops, so a message outside pairs costs ~nothing
        # An AI message without calls is outside pairs too: told by its call lists' truth, in C, not in the loop.
        callers = list(compress(count(start), map(is_, roles, repeat(_CALLER))))
        calling = list(compress(callers, map(any, map(_CALLS, map(messages.__getitem__, callers)))))
        results = list(compress(count(start), map(is_, roles, repeat(_RESULT))))
        return self._bind_unique(calling, results) or self._bind_in_order(calling, results)

    def _bind_unique(self, calling: list[int], results: list[int]) -> Bound | None:
        """The suffix's results bound to its calls where no call id repeats: a result's call is then the one with
        its id before it, found in a dict (in C loops), not by walking the suffix in order. None where an id
        repeats."""
        messages = self._messages
        lists = list(chain.from_iterable(map(_CALLS, map(messages.__getitem__, calling))))  # two per caller
        ids = list(map(_ID, chain.from_iterable(lists)))
        twice = chain.from_iterable(zip(calling, calling, strict=True))
        owners = chain.from_iterable(map(repeat, twice, map(len, lists)))
        named = list(compress(zip(ids, owners, strict=True), ids))  # (id, call position); an id-less call pairs none
        call_at = dict(named)
        answered = list(map(_ANSWERS, map(messages.__getitem__, results)))
        if len(call_at) != len(named) or len(set(answered)) != len(answered):
            return None
        callers = list(map(call_at.get, answered, results))  # a result whose id no call has: its own position
        paired = list(map(lt, callers, results))
        call_of = dict(compress(zip(results, callers, strict=True), paired))
        return call_of, dict(compress(zip(answered, results, strict=True), map(not_, paired)))

    def _bind_in_order(self, calling: list[int], results: list[int]) -> Bound:
        """The suffix's results bound by walking its calls and results in order: a result answers the latest call
        with its id not yet answered."""
        messages = self._messages
        call_of: dict[int, int] = {}
        pending: dict[str, int] = {}
        unresolved: dict[str, int] = {}  # results in the suffix whose call must be before it
        for index in sorted(chain(calling, results)):
            message = messages[index]
            if _ROLES[type(message)] is _RESULT:
                call_id = message.tool_call_id  # type: ignore[attr-defined]
                caller = pending.pop(call_id, None)
                if caller is not None:
                    call_of[index] = caller
                elif call_id not in unresolved:
                    unresolved[call_id] = index
            else:
                for call in (*message.tool_calls, *message.invalid_tool_calls):  # type: ignore[attr-defined]
                    if call["id"]:  # call_ids, inline
                        pending[call["id"]] = index
        return call_of, unresolved

    def cover(self, position: int) -> None:
        """Make sure boundaries and messages from ``position`` on are indexed (doubling the suffix as needed)."""
        if self._track and position < self._start:
            self._scan(max(0, min(position, len(self._messages) - 2 * (len(self._messages) - self._start) - 64)))

    def straddling(self, boundary: int) -> int:
        """How many pairs a cut at ``boundary`` would separate."""
        if not self._track:
            return 0
        self.cover(boundary)
        return bisect_left(self._calls, boundary) - bisect_left(self._results, boundary)

    def caller(self, result: int) -> int | None:
        self.cover(result)
        return self.call_of.get(result)

    def results_in(self, call: int, start: int, end: int) -> set[str]:
        """Ids of the calls at position ``call`` whose results lie in ``[start, end)``."""
        self.cover(call)
        return {call_id for result, call_id in self.results_of.get(call, ()) if start <= result < end}
