"""``summarize``: replace the oldest part of the conversation with one summary message.

The span ends at the start of a user turn, so a tool call is never separated from its results and no turn is cut
in the middle; the leading system messages, pinned messages and the last user turn are never in it. An existing
summary at the start of the span is passed to the summarizer with the new messages, so it is extended rather than
rewritten. The summary is capped at ``max_summary_tokens`` and at the room the budget leaves beside what must stay
(skipped when that is under ``MIN_SUMMARY_TOKENS``). A summarizer that raises or returns nothing skips the
step (the planner reports it); its error text never becomes the summary.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.strategies.base import (
    Budget,
    StepResult,
    is_pinned,
    last_user_index,
    leading_system_count,
    must_keep_with_partners,
)
from ctxwin.strategies.extractive import extractive_summarizer
from ctxwin.strategies.meter import Meter
from ctxwin.strategies.summary import is_summary, summarized_ids, summary_message
from ctxwin.strategies.truncate import longest_fitting

Summarizer = Callable[[list[BaseMessage]], "str | Awaitable[str]"]
# A summary squeezed below this many tokens says nothing useful; the step is skipped instead.
MIN_SUMMARY_TOKENS = 16


@dataclass
class _Span:
    start: int
    end: int  # messages[start:end] minus pinned ones are summarised


@dataclass
class Summarize:
    """Summarise the oldest turns, keeping the last ``keep_last_messages`` or ``keep_last_tokens`` verbatim.

    With neither set, as much of the recent conversation is kept as fits beside the summary.
    """

    keeps: ClassVar[str] = "last"  # see Strategy

    summarizer: Summarizer = extractive_summarizer
    keep_last_messages: int | None = None
    keep_last_tokens: int | None = None
    max_summary_tokens: int = 512
    name: str = field(default="summarize")

    def __post_init__(self) -> None:
        for label in ("keep_last_messages", "keep_last_tokens"):
            value = getattr(self, label)
            if value is not None and value < 0:
                raise ValueError(f"summarize {label} must be >= 0, got {value}")
        if self.max_summary_tokens < 1:
            raise ValueError(f"summarize max_summary_tokens must be at least 1, got {self.max_summary_tokens}")

    def _span(self, messages: list[BaseMessage], budget: Budget, meter: Meter) -> _Span | None:
        start = leading_system_count(messages)
        if start < len(messages) and is_summary(messages[start]):
            pass  # an earlier summary opens the span and is extended
        elif start > 0 and is_summary(messages[start - 1]):
            start -= 1
        last_user = last_user_index(messages)
        if last_user is None:
            return None
        if self.keep_last_messages is not None:
            cut = len(messages) - self.keep_last_messages
        else:
            room = (
                self.keep_last_tokens
                if self.keep_last_tokens is not None
                else budget.messages_budget - sum(meter.each(messages[:start])) - self.max_summary_tokens
            )
            cut = meter.suffix_start(messages, room, start)
        # Cut only where a user turn starts, never later than the last user message. An explicit keep_last keeps at
        # least that much (the cut moves back); a budget-driven cut moves forward, so the result fits without the
        # trim step dropping unsummarised messages between the summary and the verbatim tail.
        cut = min(max(cut, start), last_user)
        explicit = self.keep_last_messages is not None or self.keep_last_tokens is not None
        while start < cut < last_user and not isinstance(messages[cut], HumanMessage):
            cut += -1 if explicit else 1
        while cut > start and not isinstance(messages[cut], HumanMessage):
            cut -= 1
        if not any(not is_pinned(m) for m in messages[start:cut]) or (cut - start == 1 and is_summary(messages[start])):
            return None
        return _Span(start, cut)

    def _room(self, others: list[BaseMessage], framing: int, budget: Budget, meter: Meter) -> int:
        """Summary tokens allowed: ``max_summary_tokens``, or less when the budget left beside the part that no later
        step may drop (the summary becomes part of it) is smaller, so summarising never makes a plan unfittable."""
        kept = [others[i] for i in sorted(must_keep_with_partners(others, meter))]
        return min(self.max_summary_tokens, budget.messages_budget - meter.total(kept) - framing)

    def _result(
        self, messages: list[BaseMessage], span: _Span, text: Any, budget: Budget, meter: Meter
    ) -> StepResult:
        replaced = [m for m in messages[span.start : span.end] if not is_pinned(m)]
        if not isinstance(text, str) or not text.strip():
            return StepResult(list(messages), ["summarizer returned no text; nothing summarised"], skipped=True)
        text = text.strip()
        count = sum(
            m.response_metadata["ctxwin_summary"].get("summarized_count", 0) if is_summary(m) else 1 for m in replaced
        )
        pinned = [m for m in messages[span.start : span.end] if is_pinned(m)]
        others = [*messages[: span.start], *pinned, *messages[span.end :]]
        room = self._room(others, meter.count(summary_message("", replaced, count)), budget, meter)
        tokens = meter.text(text)
        if tokens > room:
            limit = room - meter.text("…")
            if limit < MIN_SUMMARY_TOKENS:
                note = f"no room for a summary: {max(room, 0)} tokens left beside the messages that must stay"
                return StepResult(list(messages), [note], skipped=True)
            text = text[: longest_fitting(len(text), limit * 2, lambda k: meter.text(text[:k]), limit)[0]] + "…"
            tokens = meter.text(text)
        summary = summary_message(text, replaced, count)
        out = [*messages[: span.start], summary, *pinned, *messages[span.end :]]
        originals = [m for m in replaced if not is_summary(m)]
        note = f"summarised {len(originals)} messages into {tokens} tokens"
        if any(is_summary(m) for m in replaced):
            note += f" (extending the summary of {len(summarized_ids(replaced[0])) or 'earlier'} messages)"
        return StepResult(out, [note], summarized=originals)

    def _failed(self, messages: list[BaseMessage], exc: BaseException) -> StepResult:
        # The exception's type only: its text may echo conversation content or secrets into the report.
        return StepResult(list(messages), [f"summarizer raised {type(exc).__name__}; nothing summarised"], skipped=True)

    def _call(self, messages: list[BaseMessage], budget: Budget, meter: Meter) -> StepResult | tuple[_Span, Any]:
        """The span and what the summarizer returned for it (maybe an awaitable), or the skipped step."""
        span = self._span(messages, budget, meter)
        if span is None:
            return StepResult(list(messages), ["nothing to summarise"], skipped=True)
        try:
            return span, self.summarizer([m for m in messages[span.start : span.end] if not is_pinned(m)])
        except Exception as exc:
            return self._failed(messages, exc)

    def apply(self, messages: list[BaseMessage], budget: Budget, meter: Meter) -> StepResult:
        called = self._call(messages, budget, meter)
        if isinstance(called, StepResult):
            return called
        span, text = called
        try:
            text = _run_sync(text) if inspect.isawaitable(text) else text
        except Exception as exc:
            return self._failed(messages, exc)
        return self._result(messages, span, text, budget, meter)

    async def aapply(self, messages: list[BaseMessage], budget: Budget, meter: Meter) -> StepResult:
        called = self._call(messages, budget, meter)
        if isinstance(called, StepResult):
            return called
        span, text = called
        try:
            text = await text if inspect.isawaitable(text) else text
        except Exception as exc:
            return self._failed(messages, exc)
        return self._result(messages, span, text, budget, meter)


def _run_sync(awaitable: Awaitable[Any]) -> Any:
    """Run an async summarizer from synchronous code; inside a running loop, ``aplan`` is the way."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    if inspect.iscoroutine(awaitable):
        awaitable.close()
    raise RuntimeError("an async summarizer cannot run inside a running event loop from plan(); use aplan()")


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
