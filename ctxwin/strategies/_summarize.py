"""``summarize``: replace the oldest part of the conversation with one summary message. An earlier summary is extended,
not rewritten, so it stays the new one's prefix byte for byte and a session's cached prefix survives the cut.
What the built-in summarizer writes is ``salience``'s; the step's rules: docs/planner.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxwin import _tracing as tracing
from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin._plural import plural
from ctxwin.messages import BaseMessage, HumanMessage, SystemMessage
from ctxwin.strategies._base import (
    BaseStrategy,
    Budget,
    Change,
    Counts,
    StepContext,
    StepKeeps,
    StepResult,
    Summarizer,
    last_user_index,
    leading_system_count,
    must_keep_with_partners,
)
from ctxwin.strategies._facts import Fact, find_facts
from ctxwin.strategies._fitting import longest_fitting
from ctxwin.strategies._ledger import takes_ledger, told_texts
from ctxwin.strategies._pins import head_length
from ctxwin.strategies._salience import SUMMARY_HEADER, extractive_summarizer, extractive_summary, stated_tokens
from ctxwin.strategies._walk import suffix_start, within
from ctxwin.trim._tool_pairs import ToolPairs

SUMMARY_KEY = "ctxwin_summary"


def is_summary(message: BaseMessage) -> bool:
    return isinstance(message, SystemMessage) and SUMMARY_KEY in message.response_metadata


def summarized_ids(message: BaseMessage) -> list[str]:
    """Ids of every message a summary stands for, across all the summaries it extended."""
    record = message.response_metadata.get(SUMMARY_KEY) if is_summary(message) else None
    return list(record.get("summarized_ids", [])) if isinstance(record, dict) else []


def summary_message(text: str, replaced: list[BaseMessage], count: int) -> SystemMessage:
    """A system message holding the summary; ``response_metadata`` (never sent to providers) names what it replaced.

    ``count`` is how many original messages the summary covers in all, earlier summaries included.
    """
    ids: list[str] = []
    for message in replaced:
        ids.extend(summarized_ids(message) if is_summary(message) else [message.id] if message.id else [])
    return SystemMessage(
        f"{SUMMARY_HEADER}\n{text}",
        id="ctxwin-summary",
        response_metadata={SUMMARY_KEY: {"summarized_ids": ids, "summarized_count": count}},
    )


# A summary squeezed below this many tokens says nothing useful; the step is skipped instead.
MIN_SUMMARY_TOKENS = 16
# The summary's reserved room by default: this share of the messages budget, at least MIN_SUMMARY_CAP tokens.
SUMMARY_SHARE = 0.125
MIN_SUMMARY_CAP = 512
# The default room grows with what the user asked to keep and stated (``stated_tokens``), up to this share of the
# messages budget: a quarter still leaves most of the budget to the recent turns kept verbatim.
MAX_SUMMARY_SHARE = 0.25
# An extension shorter than this would say little of its messages: the earlier summary is rewritten with them.
MIN_EXTENSION_TOKENS = 64
# An earlier summary larger than this share of the messages budget is rewritten with the new span (compressed by
# the summarizer), not extended: else summaries would grow until nothing stays verbatim.
MAX_EXTENDED_SHARE = 0.5
# Dropped facts named in the step's note; the rest are counted.
NAMED_DROPPED = 8


@dataclass
class _Span:
    start: int
    end: int  # messages[start:end] less the kept ones are summarised
    kept: list[int]  # indexes in the span that stay (pinned messages and their tool partners)


@dataclass
class _Call:
    """A span, what it replaces, the summary's room, and what the summarizer returned (maybe an awaitable)."""

    span: _Span
    replaced: list[BaseMessage]
    room: int
    text: Any
    excerpts: int | None = None  # the built-in summarizer: the excerpts it quotes
    facts: tuple[Fact, ...] | None = None  # ... and the facts of what it was given (None: read them when needed)
    previous: str = ""  # the body of the earlier summary this one extends (kept byte for byte), or ""


@dataclass
class Summarize(BaseStrategy):
    """Summarise the oldest turns, keeping at least the last ``keep_last_messages`` messages or ``keep_last_tokens``
    tokens verbatim, and beyond that as much of the recent conversation as fits beside the summary. ``summarizer``
    unset: the offline one (``salience``); ``max_summary_tokens`` unset: ``SUMMARY_SHARE`` of the
    messages budget, at least ``MIN_SUMMARY_CAP``."""

    summarizer: Summarizer | None = None
    keep_last_messages: int | None = None
    keep_last_tokens: int | None = None
    max_summary_tokens: int | None = None
    name: str = field(default="summarize")

    def __post_init__(self) -> None:
        if self.summarizer is not None and not callable(self.summarizer):
            raise InvalidTypeError(f"summarizer must be callable (list[BaseMessage] -> str), got {self.summarizer!r}")
        for label in ("keep_last_messages", "keep_last_tokens", "max_summary_tokens"):
            value = getattr(self, label)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise InvalidInputError(f"summarize {label} must be a non-negative int, got {value!r}")
        if self.max_summary_tokens is not None and self.max_summary_tokens < 1:
            raise InvalidInputError(f"summarize max_summary_tokens must be at least 1, got {self.max_summary_tokens}")

    def with_defaults(self, summarizer: Summarizer | None, keep_last: int | None) -> Summarize:
        """This step with the planner's ``summarizer`` and ``keep_last`` where it leaves its own unset (``self``
        when nothing changes)."""
        summarizer = self.summarizer if self.summarizer is not None else summarizer
        keep_last = self.keep_last_messages if self.keep_last_messages is not None else keep_last
        if summarizer is self.summarizer and keep_last == self.keep_last_messages:
            return self
        return dataclasses.replace(self, summarizer=summarizer, keep_last_messages=keep_last)

    def _cap(self, budget: Budget, stated: int = 0) -> int:
        """The summary's reserved room: ``max_summary_tokens``, or by default a share of the budget (the summary
        stands for most of a long conversation: a fixed 512 tokens would be one line per thousand at 128k) plus the
        ``stated`` tokens of the user's keep requests and facts, within ``MAX_SUMMARY_SHARE`` of the budget."""
        if self.max_summary_tokens is not None:
            return self.max_summary_tokens
        base = max(MIN_SUMMARY_CAP, int(SUMMARY_SHARE * budget.messages_budget))
        return max(base, min(base + stated, int(MAX_SUMMARY_SHARE * budget.messages_budget)))

    @property
    def keeps(self) -> StepKeeps:
        return "last"

    @property
    def summarizes(self) -> bool:
        return True

    def _span(
        self, messages: list[BaseMessage], context: StepContext, protected: set[int], stated: int
    ) -> _Span | None:
        budget, counts = context.budget, context.counts
        keep_last = self.keep_last_messages

        start = leading_system_count(messages)
        start += head_length(messages, context.head, start)
        if start < len(messages) and is_summary(messages[start]):
            pass  # an earlier summary opens the span and is extended
        elif start > 0 and is_summary(messages[start - 1]):
            start -= 1
        last_user = last_user_index(messages)
        if last_user is None:
            return None
        # The newest messages that fit beside the summary stay verbatim; keep_last only ever keeps more. An earlier
        # summary up to MAX_EXTENDED_SHARE of the budget is kept whole and extended: room is left for it as well.
        reserve = self._cap(budget, stated)
        if start < len(messages) and is_summary(messages[start]):
            previous = counts.count(messages[start])
            reserve += previous if previous <= MAX_EXTENDED_SHARE * budget.messages_budget else 0
        room = budget.messages_budget - sum(counts.each(messages[:start])) - reserve
        if self.keep_last_tokens is not None:
            room = max(room, self.keep_last_tokens)
        cut = suffix_start(counts, messages, room, start)
        floor = len(messages) if keep_last is None else len(messages) - keep_last
        cut = max(min(cut, last_user, floor), start)
        # Cut only where a user turn starts and no tool pair straddles (a user message may sit between a call and
        # its result): forward, so the result fits, but never into the messages keep_last keeps; else backward.
        pairs = ToolPairs(messages, suffix_only=True)

        def clean(at: int) -> bool:
            return isinstance(messages[at], HumanMessage) and pairs.straddling(at) == 0

        ahead = cut
        while ahead < min(last_user, floor) and not clean(ahead):
            ahead += 1
        cut = ahead if ahead < len(messages) and clean(ahead) else cut
        while cut > start and not clean(cut):
            cut -= 1
        kept = [i for i in range(start, cut) if i in protected and not is_summary(messages[i])]  # pins, partners
        if cut - start == len(kept) or (cut - start == 1 and is_summary(messages[start])):
            return None
        return _Span(start, cut, kept)

    def _room(self, others: list[BaseMessage], framing: int, context: StepContext, stated: int) -> int:
        """Summary tokens allowed: all the budget leaves beside ``others`` (the messages the summary joins) when that
        is more than ``max_summary_tokens`` (the span ends at a turn start, so the verbatim part seldom fills the
        room reserved beside it: the summary gets what is left rather than leaving it unused); else
        ``max_summary_tokens``, or less when the budget left beside the part that no later step may drop (the
        summary becomes part of it) is smaller, so summarising never makes a plan unfittable."""
        counts = context.counts
        room, cap = context.budget.messages_budget - framing, self._cap(context.budget, stated)
        if within(counts, others, room - cap):  # counts from the newest only until over
            return room - counts.total(others)
        kept = [others[i] for i in sorted(must_keep_with_partners(others, context.pinned))]
        return min(cap, room - counts.total(kept))

    def _result(self, messages: list[BaseMessage], call: _Call, text: Any, counts: Counts) -> StepResult:
        span, replaced, room = call.span, call.replaced, call.room
        if not isinstance(text, str) or not text.strip():
            return StepResult(list(messages), ["summarizer returned no text; nothing summarised"], skipped=True)
        part = text.strip()
        prefix = f"{call.previous}\n" if call.previous else ""
        count = _covered(replaced)
        kept = [messages[i] for i in span.kept]
        tokens = counts.text(prefix + part)
        cut_note = ""
        if tokens > room:  # the new part is cut, never the earlier summary it extends
            limit = room - counts.text("…")
            if limit - counts.text(prefix) < MIN_SUMMARY_TOKENS:
                note = f"no room for a summary: {max(room, 0)} tokens left beside the messages that must stay"
                return StepResult(list(messages), [note], skipped=True)
            fits = longest_fitting(len(part), len(part) // 2, lambda k: counts.text(prefix + part[:k]), limit)[0]
            part = part[:fits] + "…"
            tokens = counts.text(prefix + part)
            cut_note = "; the summarizer's text was cut to fit"
        summary = summary_message(prefix + part, replaced, count)
        out = [*messages[: span.start], summary, *kept, *messages[span.end :]]
        originals = [m for m in replaced if not is_summary(m)]
        note = f"summarised {plural(len(originals), 'message')} into {plural(tokens, 'token')}"
        if call.previous:
            note += f" (extending the summary of {len(summarized_ids(replaced[0])) or 'earlier'} messages)"
        elif any(is_summary(m) for m in replaced):
            note += " (rewriting the earlier summary with them: too little room to extend it)"
        if call.excerpts is not None:
            note += f" ({plural(call.excerpts, 'excerpt')} chosen by salience)"
        facts = call.facts if call.facts is not None else find_facts(originals)
        return StepResult(out, [note + cut_note, *_dropped(facts, part)], [Change("summarized", originals)])

    def _failed(self, messages: list[BaseMessage], exc: BaseException) -> StepResult:
        # The exception's type only: its text may echo conversation content or secrets into the report.
        tracing.fail_current(exc)
        return StepResult(list(messages), [f"summarizer raised {type(exc).__name__}; nothing summarised"], skipped=True)

    def _call(self, messages: list[BaseMessage], context: StepContext) -> StepResult | _Call:
        """The span and what the summarizer returned for it (maybe an awaitable), or the skipped step."""
        counts = context.counts
        summarizer = self.summarizer or extractive_summarizer
        protected = must_keep_with_partners(messages, context.pinned)
        last_user = last_user_index(messages)
        query = messages[last_user].text if last_user is not None else ""
        stated = 0
        if self.max_summary_tokens is None and last_user is not None:
            stated = stated_tokens(messages[:last_user], counts.text)
        span = self._span(messages, context, protected, stated)
        if span is None:
            return StepResult(list(messages), ["nothing to summarise"], skipped=True)
        kept = set(span.kept)
        replaced = [m for i, m in enumerate(messages[span.start : span.end], span.start) if i not in kept]
        others = [*messages[: span.start], *(messages[i] for i in span.kept), *messages[span.end :]]
        room = self._room(others, counts.count(summary_message("", replaced, _covered(replaced))), context, stated)
        # An earlier summary opening the span is extended with the new messages alone: its text stays the new
        # summary's prefix, byte for byte, when the room leaves MIN_EXTENSION_TOKENS beside it; else it is rewritten.
        previous, part_room, summarizing = "", room, replaced
        if len(replaced) > 1 and is_summary(replaced[0]):
            body = summary_body(replaced[0])
            if room - counts.text(f"{body}\n") >= MIN_EXTENSION_TOKENS:
                previous, part_room, summarizing = body, room - counts.text(f"{body}\n"), replaced[1:]
        told = context.ledger
        try:
            if summarizer is extractive_summarizer:  # the built-in one fills the room it is given
                said = told_texts(told) if told is not None else ()
                extract = extractive_summary(summarizing, max(part_room, MIN_SUMMARY_TOKENS), counts.text, query,
                                             said)
                return _Call(span, replaced, room, extract.text, extract.excerpts, extract.facts, previous)
            if told is not None and takes_ledger(summarizer):
                return _Call(span, replaced, room, summarizer(summarizing, ledger=told),  # type: ignore[call-arg]
                             previous=previous)
            return _Call(span, replaced, room, summarizer(summarizing), previous=previous)
        except Exception as exc:
            return self._failed(messages, exc)

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        call = self._call(messages, context)
        if isinstance(call, StepResult):
            return call
        try:
            text = _run_sync(call.text) if inspect.isawaitable(call.text) else call.text
        except Exception as exc:
            return self._failed(messages, exc)
        return self._result(messages, call, text, context.counts)

    async def aapply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        call = self._call(messages, context)
        if isinstance(call, StepResult):
            return call
        try:
            text = await call.text if inspect.isawaitable(call.text) else call.text
        except Exception as exc:
            return self._failed(messages, exc)
        return self._result(messages, call, text, context.counts)


def summary_body(message: BaseMessage) -> str:
    """A summary message's text without its first line (``SUMMARY_HEADER``)."""
    return message.text.removeprefix(SUMMARY_HEADER).removeprefix("\n")


def _dropped(facts: Sequence[Fact], summary: str) -> list[str]:
    """The note naming the ``facts`` (of what the summary replaced) it does not quote (the user's first), or none."""
    lost = sorted((f for f in facts if f.text not in summary), key=lambda f: not f.user)
    if not lost:
        return []
    users = sum(f.user for f in lost)
    named = ", ".join(f.text for f in lost[:NAMED_DROPPED]) + (", …" if len(lost) > NAMED_DROPPED else "")
    return [f"the summary dropped {len(lost):,} of the {plural(len(facts), 'fact')} of what it replaced "
            f"({users:,} stated by the user): {named}"]


def _covered(replaced: list[BaseMessage]) -> int:
    """How many original messages a summary of ``replaced`` stands for, earlier summaries included."""
    return sum(
        m.response_metadata["ctxwin_summary"].get("summarized_count", 0) if is_summary(m) else 1 for m in replaced
    )


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
