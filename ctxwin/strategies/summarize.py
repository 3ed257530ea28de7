"""``summarize``: replace the oldest part of the conversation with one summary message; the summary message; and
the offline extractive summarizer that writes it by default. Changing how summarisation behaves means this module.

``summarize``: replace the oldest part of the conversation with one summary message.

The span ends at the start of a user turn that no tool pair straddles, so a tool call is never separated from its
results and no turn is cut in the middle; the leading system messages and the last user turn are never in it, and
pinned messages in it stay, with their tool partners, right after the summary. The newest messages that fit beside
the summary stay verbatim (``keep_last_*`` only keeps more). An existing
summary at the start of the span is passed to the summarizer with the new messages, so it is extended rather than
rewritten. The summary is capped at ``max_summary_tokens`` and at the room the budget leaves beside what must stay
(skipped when that is under ``MIN_SUMMARY_TOKENS``). A summarizer that raises or returns nothing skips the
step (the planner reports it); its error text never becomes the summary.

The summarizer is the step's own (the planner builds the step with its ``summarizer`` and ``keep_last`` when the
step leaves them unset: ``with_defaults``), else the extractive one below.

The summary message is a system message whose ``response_metadata`` (never sent to providers) records the ids and
number of the messages it stands for.

The extractive summarizer: one line per message, built from what the message itself says.

No model is called: each message contributes its first sentence (or the start of it), tool calls their names and
arguments, tool results their first words. An earlier summary is carried over line by line, so summaries grow
incrementally instead of being rewritten.

Given a token cap (the ``summarize`` step passes its room), the summary covers the whole span it replaces: the lines
share the cap (short lines whole, long ones cut to one common length), and when there are more messages than the
cap has room for lines, lines evenly spread across the span are quoted and the summary's first line says so. It
never covers the oldest messages and stops, which would misreport what was summarised.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxwin import tracing
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.plural import plural
from ctxwin.strategies.base import (
    BaseStrategy,
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
from ctxwin.strategies.fitting import longest_fitting
from ctxwin.strategies.walk import suffix_start, within
from ctxwin.trim.tool_pairs import ToolPairs

SUMMARY_KEY = "ctxwin_summary"
SUMMARY_HEADER = "Summary of the earlier conversation:"


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


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
LINE_CHARS = 160
# A line cut shorter than this says nothing; with less room per line, fewer lines are quoted instead.
MIN_LINE_CHARS = 40
# Rounds of fitting the text to the cap: each rescales the characters allowed by the measured tokens per character.
_ROUNDS = 4


def _first_sentence(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0] if text else ""
    return _shorten(sentence, limit)


def _shorten(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: max(limit - 1, 0)] + "…"


def _lines(message: BaseMessage) -> list[str]:
    """The summary lines of one message (an earlier summary: its own lines)."""
    if is_summary(message):
        body = message.text.removeprefix(SUMMARY_HEADER).strip()
        return [line for line in body.split("\n") if line and not line.startswith("(")]  # not its coverage line
    role = {"ai": "assistant", "human": "user"}.get(message.type, message.type)
    text = _first_sentence(message.text)
    if isinstance(message, ToolMessage):
        return [f"- tool result {message.name or message.tool_call_id}: {text}"]
    lines = [f"- {role}: {text}"] if text else []
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = json.dumps(call["args"], ensure_ascii=False)
            lines.append(f"- assistant called {call['name']}({_first_sentence(args, 80)})")
    return lines


@dataclass(frozen=True)
class Extract:
    """A summary text and how much of its span it quotes (``quoted`` of ``lines`` lines, each whole or cut)."""

    text: str
    lines: int
    quoted: int


def extractive_summary(
    messages: Sequence[BaseMessage], max_tokens: int | None = None, count: Callable[[str], int] | None = None
) -> Extract:
    """The summary of ``messages`` within ``max_tokens`` (as ``count`` counts them), covering the whole span."""
    lines = [line for message in messages for line in _lines(message)]
    full = "\n".join(lines)
    if max_tokens is None or count is None or not lines:
        return Extract(full, len(lines), len(lines))
    sample = full[:4000]
    chars = max(len(sample) / max(count(sample), 1), 1.0) * max_tokens  # characters the cap holds, first guess
    if len(full) <= chars and count(full) <= max_tokens:
        return Extract(full, len(lines), len(lines))
    extract = Extract(full, len(lines), len(lines))
    for _ in range(_ROUNDS):
        extract = _within(lines, int(chars))
        tokens = count(extract.text)
        if tokens <= max_tokens:
            break
        chars *= 0.97 * max_tokens / tokens
    return extract  # may still be a little over: the summarize step cuts it to the cap


def _within(lines: list[str], chars: int) -> Extract:
    """The lines within about ``chars`` characters: all of them sharing the room, or evenly spread ones."""
    header = f"(covers {len(lines)} lines; " + "{what})"
    room = chars - len(header) - 40
    per_line = room // len(lines) - 1
    if per_line >= MIN_LINE_CHARS:
        picked = lines
        what = "long lines shortened"
    else:
        wanted = max(room // (MIN_LINE_CHARS + 1), 1)
        step = (len(lines) - 1) / max(wanted - 1, 1)
        picked = [lines[round(k * step)] for k in range(min(wanted, len(lines)))]
        what = f"{len(picked)} quoted, evenly spread"
    level = _level([len(line) for line in picked], room - len(picked))
    text = "\n".join([header.format(what=what), *(_shorten(line, level) for line in picked)])
    return Extract(text, len(lines), len(picked))


def _level(lengths: list[int], room: int) -> int:
    """The largest line length ``L`` with ``sum(min(length, L)) <= room``: short lines whole, long ones cut evenly."""
    remaining, left = room, len(lengths)
    for length in sorted(lengths):
        if length * left > remaining:
            return max(remaining // left, 1)
        remaining -= length
        left -= 1
    return max(lengths, default=1)


def extractive_summarizer(messages: list[BaseMessage]) -> str:
    """One line per message: who said what first, which tools were called with what, what they returned. The
    ``summarize`` step calls the capped form (``extractive_summary``) so that the summary covers its whole span."""
    return extractive_summary(messages).text


# A summary squeezed below this many tokens says nothing useful; the step is skipped instead.
MIN_SUMMARY_TOKENS = 16


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
    quoted: int | None = None  # the built-in summarizer: lines quoted of those it covers (None: all of them)
    lines: int = 0


@dataclass
class Summarize(BaseStrategy):
    """Summarise the oldest turns, keeping at least the last ``keep_last_messages`` messages or ``keep_last_tokens``
    tokens verbatim, and beyond that as much of the recent conversation as fits beside the summary. ``summarizer``
    unset: the extractive one (see the module docstring)."""

    summarizer: Summarizer | None = None
    keep_last_messages: int | None = None
    keep_last_tokens: int | None = None
    max_summary_tokens: int = 512
    name: str = field(default="summarize")

    def __post_init__(self) -> None:
        if self.summarizer is not None and not callable(self.summarizer):
            raise TypeError(f"summarizer must be callable (list[BaseMessage] -> str), got {self.summarizer!r}")
        for label in ("keep_last_messages", "keep_last_tokens", "max_summary_tokens"):
            value = getattr(self, label)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"summarize {label} must be a non-negative int, got {value!r}")
        if self.max_summary_tokens < 1:
            raise ValueError(f"summarize max_summary_tokens must be at least 1, got {self.max_summary_tokens}")

    @property
    def keeps(self) -> StepKeeps:
        return "last"

    @property
    def summarizes(self) -> bool:
        return True

    def with_defaults(self, summarizer: Summarizer | None, keep_last: int | None) -> Summarize:
        """This step with the planner's ``summarizer`` and ``keep_last`` where it leaves its own unset (``self``
        when nothing changes)."""
        summarizer = self.summarizer if self.summarizer is not None else summarizer
        keep_last = self.keep_last_messages if self.keep_last_messages is not None else keep_last
        if summarizer is self.summarizer and keep_last == self.keep_last_messages:
            return self
        return dataclasses.replace(self, summarizer=summarizer, keep_last_messages=keep_last)

    def _span(
        self, messages: list[BaseMessage], context: StepContext, protected: set[int]
    ) -> _Span | None:
        budget, counts = context.budget, context.counts
        keep_last = self.keep_last_messages

        start = leading_system_count(messages)
        if start < len(messages) and is_summary(messages[start]):
            pass  # an earlier summary opens the span and is extended
        elif start > 0 and is_summary(messages[start - 1]):
            start -= 1
        last_user = last_user_index(messages)
        if last_user is None:
            return None
        # The newest messages that fit beside the summary stay verbatim; keep_last only ever keeps more.
        room = budget.messages_budget - sum(counts.each(messages[:start])) - self.max_summary_tokens
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

    def _room(self, others: list[BaseMessage], framing: int, context: StepContext) -> int:
        """Summary tokens allowed: all the budget leaves beside ``others`` (the messages the summary joins) when that
        is more than ``max_summary_tokens`` (the span ends at a turn start, so the verbatim part seldom fills the
        room reserved beside it: the summary gets what is left rather than leaving it unused); else
        ``max_summary_tokens``, or less when the budget left beside the part that no later step may drop (the
        summary becomes part of it) is smaller, so summarising never makes a plan unfittable."""
        counts = context.counts
        room = context.budget.messages_budget - framing
        if within(counts, others, room - self.max_summary_tokens):  # counts from the newest only until over
            return room - counts.total(others)
        kept = [others[i] for i in sorted(must_keep_with_partners(others, context.pinned))]
        return min(self.max_summary_tokens, room - counts.total(kept))

    def _result(self, messages: list[BaseMessage], call: _Call, text: Any, counts: Counts) -> StepResult:
        span, replaced, room = call.span, call.replaced, call.room
        if not isinstance(text, str) or not text.strip():
            return StepResult(list(messages), ["summarizer returned no text; nothing summarised"], skipped=True)
        text = text.strip()
        count = _covered(replaced)
        kept = [messages[i] for i in span.kept]
        tokens = counts.text(text)
        cut_note = ""
        if tokens > room:
            limit = room - counts.text("…")
            if limit < MIN_SUMMARY_TOKENS:
                note = f"no room for a summary: {max(room, 0)} tokens left beside the messages that must stay"
                return StepResult(list(messages), [note], skipped=True)
            text = text[: longest_fitting(len(text), limit * 2, lambda k: counts.text(text[:k]), limit)[0]] + "…"
            tokens = counts.text(text)
            cut_note = "; the summarizer's text was cut to fit"
        summary = summary_message(text, replaced, count)
        out = [*messages[: span.start], summary, *kept, *messages[span.end :]]
        originals = [m for m in replaced if not is_summary(m)]
        note = f"summarised {plural(len(originals), 'message')} into {plural(tokens, 'token')}"
        if any(is_summary(m) for m in replaced):
            note += f" (extending the summary of {len(summarized_ids(replaced[0])) or 'earlier'} messages)"
        if call.quoted is not None and call.quoted < call.lines:
            note += f"; the summary quotes {call.quoted:,} of their {call.lines:,} lines, evenly spread"
        return StepResult(out, [note + cut_note], [Change("summarized", originals)])

    def _failed(self, messages: list[BaseMessage], exc: BaseException) -> StepResult:
        # The exception's type only: its text may echo conversation content or secrets into the report.
        tracing.fail_current(exc)
        return StepResult(list(messages), [f"summarizer raised {type(exc).__name__}; nothing summarised"], skipped=True)

    def _call(self, messages: list[BaseMessage], context: StepContext) -> StepResult | _Call:
        """The span and what the summarizer returned for it (maybe an awaitable), or the skipped step."""
        counts = context.counts
        summarizer = self.summarizer or extractive_summarizer
        protected = must_keep_with_partners(messages, context.pinned)
        span = self._span(messages, context, protected)
        if span is None:
            return StepResult(list(messages), ["nothing to summarise"], skipped=True)
        kept = set(span.kept)
        replaced = [m for i, m in enumerate(messages[span.start : span.end], span.start) if i not in kept]
        others = [*messages[: span.start], *(messages[i] for i in span.kept), *messages[span.end :]]
        room = self._room(others, counts.count(summary_message("", replaced, _covered(replaced))), context)
        try:
            if summarizer is extractive_summarizer:  # the built-in one covers the whole span within the room
                extract = extractive_summary(replaced, max(room, MIN_SUMMARY_TOKENS), counts.text)
                return _Call(span, replaced, room, extract.text, extract.quoted, extract.lines)
            return _Call(span, replaced, room, summarizer(replaced))
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
