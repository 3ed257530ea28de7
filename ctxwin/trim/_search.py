"""The two trimming strategies over a Measure: the cut, moved off tool pairs, a partial message, ``start_on``/
``end_on``, in LangChain's order. Unlike LangChain, every candidate is measured as it would be returned
(docs/trim.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ctxwin.messages import AIMessage, BaseMessage, SystemMessage
from ctxwin.trim._measure import Measure
from ctxwin.trim._selection import TypeSpec, is_message_type
from ctxwin.trim._tool_pairs import ToolPairs, keep_tool_calls

Side = Literal["first", "last"]


def largest_fitting(upper: int, fits: Callable[[int], bool]) -> int:
    """The largest ``k`` in ``1..upper`` with ``fits(k)``, by binary search (``fits`` taken as monotone); else 0."""
    low, high = 0, upper
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def _nearest_text(content: list[Any], side: Side) -> str | None:
    if not content:
        return None
    block = content[0] if side == "first" else content[-1]
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    return None


def find_partial(
    message: BaseMessage,
    side: Side,
    fits: Callable[[BaseMessage], bool],
    text_splitter: Callable[[str], list[str]],
    *,
    whole_first: bool = False,
) -> BaseMessage | None:
    """The largest part of ``message`` for which ``fits`` holds, as a deep copy; None if no part fits.

    ``whole_first`` also tries the message as it is first (the engine passes it when tool calls were removed, so
    the whole content may now fit).
    """

    def with_content(content: str | list[Any]) -> BaseMessage:
        return message.model_copy(update={"content": content})

    if whole_first and message.content and fits(message):
        return message.model_copy(deep=True)
    content = message.content
    if isinstance(content, list) and len(content) > 1:

        def blocks(k: int) -> list[Any]:
            return content[:k] if side == "first" else content[-k:]

        kept = largest_fitting(len(content) - 1, lambda k: fits(with_content(blocks(k))))
        if kept:
            return with_content(blocks(kept)).model_copy(deep=True)
    text = content if isinstance(content, str) else _nearest_text(content, side)
    if not text:
        return None
    pieces = text_splitter(text)

    def joined(k: int) -> str:
        return "".join(pieces[:k] if side == "first" else pieces[len(pieces) - k :])

    kept = largest_fitting(len(pieces), lambda k: fits(with_content(joined(k))))
    return with_content(joined(kept)).model_copy(deep=True) if kept else None


def default_text_splitter(text: str) -> list[str]:
    """Split on newlines, keeping each newline at the end of its piece (LangChain's default)."""
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


@dataclass(frozen=True)
class TrimRequest:
    limit: float
    measure: Measure
    keep_pairs: bool
    allow_partial: bool
    text_splitter: Callable[[str], list[str]]
    start_on: TypeSpec | None = None
    end_on: TypeSpec | None = None
    include_system: bool = False


def _partial_at(
    request: TrimRequest,
    messages: Sequence[BaseMessage],
    pairs: ToolPairs,
    position: int,
    kept: tuple[int, int],
    straddling: int,
    side: Side,
    fits: Callable[[BaseMessage], bool],
) -> BaseMessage | None:
    """The partial version of ``messages[position]`` next to the kept range, if pairs allow one and a part fits."""
    message = messages[position]
    stripped = False
    if request.keep_pairs:
        own = 0
        caller = pairs.caller(position)
        if caller is not None:  # a result: only when its call is kept and nothing else straddles
            if not kept[0] <= caller < kept[1]:
                return None
            own = 1 if side == "first" else 0
        if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
            keep = pairs.results_in(position, *kept)
            own = len(keep) if side == "last" else 0
            candidate = keep_tool_calls(message, lambda call_id: call_id in keep)
            stripped = candidate != message
            message = candidate
        if straddling != own:
            return None
    return find_partial(message, side, fits, request.text_splitter, whole_first=stripped)


def _allowed(request: TrimRequest, pairs: ToolPairs) -> Callable[[int], bool] | None:
    """Where a list shown to a list counter may start or end: boundaries that separate no tool pair."""
    if not request.keep_pairs:
        return None
    return lambda boundary: not pairs.straddling(boundary)


def trim_last(request: TrimRequest, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    n = len(messages)
    if not n:
        return []
    pairs = ToolPairs(messages, track=request.keep_pairs, suffix_only=True)
    hi = n
    end_on = request.end_on
    if end_on is not None:
        while hi > 0 and not is_message_type(messages[hi - 1], end_on):
            hi -= 1
    # As in LangChain, the system message stays when end_on left it in place.
    system = request.include_system and hi and isinstance(messages[0], SystemMessage)
    head = list(messages[:1]) if system else []
    result = _trim_suffix(request, messages, pairs, head, hi)
    if result is None and end_on is not None:
        # The kept part would end on an AIMessage whose results end_on dropped: end on an earlier end_on message
        # that separates no pair instead, and trim again from there.
        while hi > 0 and not (is_message_type(messages[hi - 1], end_on) and not pairs.straddling(hi)):
            hi -= 1
        result = _trim_suffix(request, messages, pairs, head, hi)
    assert result is not None  # with every pair on one side of hi, no kept call can have lost its result
    return result


def _trim_suffix(
    request: TrimRequest, messages: Sequence[BaseMessage], pairs: ToolPairs, head: list[BaseMessage], hi: int
) -> list[BaseMessage] | None:
    """``head`` plus what fits of ``messages[:hi]``; None if that keeps a call whose result is at or after ``hi``."""
    lo = len(head)
    if hi <= lo:
        return head or []
    measure, limit = request.measure, request.limit
    if head and measure.total(messages, head, hi, hi) > limit:
        return head  # the one allowed overflow: the system message alone is over budget
    raw, allow_partial = (
        measure.cut_last(messages, lo, hi, head, limit, _allowed(request, pairs)),
        request.allow_partial,
    )
    while True:
        cut, partial = _place_last(request, messages, pairs, head, lo, hi, raw, allow_partial)
        if measure.total(messages, head, cut, hi, partial, True) <= limit or (cut >= hi and partial is None):
            break
        # Over budget only with a counter that is not monotone: drop the partial, else one more message.
        raw, allow_partial = (cut, False) if partial is not None else (cut + 1, allow_partial)
    if pairs.straddling(hi) and any(
        result >= hi for call in range(cut, hi) for result, _ in pairs.results_of.get(call, ())
    ):
        return None
    return [*head, *([partial] if partial is not None else []), *messages[cut:hi]]


def _place_last(
    request: TrimRequest,
    messages: Sequence[BaseMessage],
    pairs: ToolPairs,
    head: list[BaseMessage],
    lo: int,
    hi: int,
    raw: int,
    allow_partial: bool,
) -> tuple[int, BaseMessage | None]:
    measure, limit = request.measure, request.limit
    cut, partial = min(raw, hi), None
    while True:
        straddling = pairs.straddling(cut)
        if allow_partial and cut - 1 >= lo:

            def fits(candidate: BaseMessage, start: int = cut) -> bool:
                return measure.total(messages, head, start, hi, candidate, True) <= limit

            partial = _partial_at(request, messages, pairs, cut - 1, (cut, hi), straddling, "last", fits)
            if partial is not None:
                break
        if not straddling or cut >= hi:
            break
        cut += 1
    if request.start_on is not None and not (partial is not None and is_message_type(partial, request.start_on)):
        partial = None
        while cut < hi and not (is_message_type(messages[cut], request.start_on) and not pairs.straddling(cut)):
            cut += 1
    return cut, partial


def trim_first(request: TrimRequest, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    n = len(messages)
    if not n:
        return []
    pairs = ToolPairs(messages, track=request.keep_pairs)
    measure, limit = request.measure, request.limit
    raw, allow_partial = measure.cut_first(messages, n, limit, _allowed(request, pairs)), request.allow_partial
    while True:
        cut, partial = _place_first(request, messages, pairs, n, raw, allow_partial)
        if measure.total(messages, (), 0, cut, partial, False) <= limit or (cut == 0 and partial is None):
            return [*messages[:cut], *([partial] if partial is not None else [])]
        # Over budget only with a counter that is not monotone: drop the partial, else one more message.
        raw, allow_partial = (cut, False) if partial is not None else (cut - 1, allow_partial)


def _place_first(
    request: TrimRequest,
    messages: Sequence[BaseMessage],
    pairs: ToolPairs,
    n: int,
    raw: int,
    allow_partial: bool,
) -> tuple[int, BaseMessage | None]:
    measure, limit = request.measure, request.limit
    cut, partial = raw, None
    while True:
        straddling = pairs.straddling(cut)
        if allow_partial and cut < n:

            def fits(candidate: BaseMessage, end: int = cut) -> bool:
                return measure.total(messages, (), 0, end, candidate, False) <= limit

            partial = _partial_at(request, messages, pairs, cut, (0, cut), straddling, "first", fits)
            if partial is not None:
                break
        if not straddling:
            break
        cut -= 1
    if request.end_on is not None and not (partial is not None and is_message_type(partial, request.end_on)):
        partial = None
        while cut > 0 and not (is_message_type(messages[cut - 1], request.end_on) and not pairs.straddling(cut)):
            cut -= 1
    return cut, partial
