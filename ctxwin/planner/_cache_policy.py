"""``CachePolicy``: how a session's requests use the provider's prompt cache (the lifetime their writes ask for, the
prefixes they mark, what each is estimated to cost) and what the provider's reported usage corrects (``observe``)."""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
import uuid
import warnings
from collections import deque
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.counters._compaction import newest_compaction
from ctxwin.messages import BaseMessage
from ctxwin.messages._request_forms.anthropic import MAX_BREAKPOINTS
from ctxwin.planner._cache_marks import (
    TtlChoice,
    check_cache_control,
    checked_ttl,
    choose_ttl,
    payback_turns,
)
from ctxwin.planner._config import FitConfig
from ctxwin.planner._planning import Planning
from ctxwin.planner._report import CacheReport, Plan
from ctxwin.planner._usage import Usage, read_usage
from ctxwin.strategies._base import leading_system_count
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._pins import head_length

# observe(): the margin over the largest measured ratio of provider tokens to counted tokens, so a later request
# whose ratio is a little higher still fits...
OBSERVE_MARGIN = 0.05
# ...and the ratios it believes: a provider's tokenizer against an estimate or another tokenizer stays within them;
# a usage outside belongs to another request or is made up, and correcting the budget by it would empty or inflate
# it, so it is reported (RuntimeWarning) and leaves the budget as it was.
PLAUSIBLE_RATIOS = (0.5, 2.0)
# The gaps between requests a session's cache lifetime follows: the median of the last few, so one long pause does
# not change the lifetime.
_GAP_TURNS = 8


class CachePolicy:
    """A session's use of the prompt cache, by its ``config`` (``cache_control``, ``expected_gap``, ``cache_ttl``,
    ``cache_key``: ``FitConfig``) and its planner's model (``rules``, the model's caching rules). ``marks``: whether
    requests carry cache marks (``cache_control``, or by default where the output's form and the model take them:
    Anthropic's, and OpenAI's for a model that takes its marks). ``key``: the ``prompt_cache_key`` requests
    carry. ``ttl``: the lifetime the next request's writes ask for. ``prefixes``: the prefixes (message counts of
    the last request) it marks, or would with marks: what a biller reads as written. ``budget``: the budget plans
    fit, corrected by ``observe``."""

    def __init__(self, planner: Planning[Any], config: FitConfig, meter: Meter) -> None:
        self.planner, self.config, self.meter = planner, config, meter
        self.rules = rules = planner.caching
        form = planner.form
        marks = config.cache_control
        if marks is None:
            marks = form.marks_cache and form.cache_marks_refusal(rules, planner.model) is None
        check_cache_control(marks, planner.output, rules, planner.model)
        self.marks: bool = marks
        checked_ttl(config.cache_ttl, rules)
        routed = form.routes_by_cache_key and rules is not None and rules.cache_key
        self.key = config.cache_key or (f"ctxwin-{uuid.uuid4().hex}" if routed else None)
        self.budget = planner.budget
        self.ttl: TtlChoice = choose_ttl(rules, config.expected_gap, config.cache_ttl)
        self.prefixes: tuple[int, ...] = ()
        self._ratio = 0.0  # the largest measured ratio of the provider's input tokens to the counted ones
        self._planned_at: float | None = None
        self._gaps: deque[float] = deque(maxlen=_GAP_TURNS)  # seconds between the recent plans
        self._measured: list[BaseMessage] = []  # the compaction messages counted by a provider's usage

    def note_plan(self) -> None:
        """Note that a plan is made now, and choose the lifetime from the gaps between plans (``expected_gap`` when
        given, else the median of the recent ones)."""
        now = time.monotonic()
        if self._planned_at is not None:
            self._gaps.append(now - self._planned_at)
        self._planned_at = now
        gap = self.config.expected_gap
        if gap is None and self._gaps:
            gap = statistics.median(self._gaps)
        self.ttl = choose_ttl(self.rules, gap, self.config.cache_ttl)

    @property
    def writes(self) -> bool:
        """Whether requests are written to the cache at a write price: the provider bills writes, and the request
        marks what is written (with markers) or the provider writes it anyway (automatic caching)."""
        rules = self.rules
        if rules is None or not rules.bills_writes:
            return False
        return self.ttl.writes if (self.marks or rules.mode == "explicit") else True

    def payback(self) -> int:
        """How many requests after a cut must read its prefix for its cache write to pay for itself (1 when writes
        cost nothing more)."""
        return payback_turns(self.rules, self.ttl) if self.writes else 1

    def plan_fields(self, plan: Plan[Any], sent: list[BaseMessage], previous: list[BaseMessage] | None,
                    previous_out: int, head: tuple[BaseMessage, ...], cut: bool) -> dict[str, Any]:
        """The cache fields of the session's plan for the request ``sent`` (``plan``, the planner's), after the
        request ``previous`` (``previous_out`` messages in the output's form; None before the first): what it shares
        with it and its estimated bill (``cache``), the breakpoints and lifetime it marks, the key; ``prefixes``
        becomes what it marks."""
        shared = 0
        if previous is not None:
            while shared < min(len(previous), len(sent)) and previous[shared] is sent[shared]:
                shared += 1
        shared_tokens = (self.budget.tools_tokens + sum(self.meter.each(sent[:shared]))) if previous else 0
        self.prefixes = self._prefixes(sent, shared, previous, head)
        marks = self.marks and bool(plan.messages)
        return {
            "cache": self._report(min(shared_tokens, plan.tokens_after), plan.tokens_after, cut),
            "cache_breakpoints": self._breakpoints(plan, sent, shared, previous, previous_out)
            if marks else plan.cache_breakpoints,
            "cache_ttl": self.ttl.sent if marks else plan.cache_ttl,
            "cache_key": self.key,
        }

    def _prefixes(self, sent: list[BaseMessage], shared: int, previous: list[BaseMessage] | None,
                  head: tuple[BaseMessage, ...]) -> tuple[int, ...]:
        """The lengths (in messages) of the prefixes the request marks for the cache: the system prompt, the
        ``head``, the previous request when this one starts with all of it (what it reads), and the whole request
        (what the next one reads); at most the provider's breakpoints (Anthropic marks its tools apart: one fewer
        with tools; the earliest but the system prompt go first); none when no lifetime outlasts the gap."""
        rules = self.rules
        if not self.ttl.writes or not sent:
            return ()
        start = leading_system_count(sent)
        ends = {len(sent)}
        if head and head_length(sent, head, start) == len(head):
            ends.add(start + len(head))
        if previous is not None and 0 < shared == len(previous):
            ends.add(shared)
        # A model without rules (a planner given a counter) is marked as Anthropic allows, where it is marked at all.
        limit = rules.max_breakpoints if rules is not None else MAX_BREAKPOINTS
        explicit = rules.mode == "explicit" if rules is not None else self.planner.form.explicit_cache
        room = max(limit, 1) - (explicit and bool(self.budget.tools_tokens))
        if start:
            room -= 1
        later = sorted(end for end in ends if end > start)[-max(room, 1):]
        return (start, *later) if start else tuple(later)

    def _breakpoints(self, plan: Plan[Any], sent: list[BaseMessage], shared: int, previous: list[BaseMessage] | None,
                     previous_out: int) -> tuple[int, ...] | None:
        """``prefixes`` as indexes in ``plan.messages`` (a system prompt the form holds apart is no message: the form
        marks it itself). None (a form that caches only what is marked) or none (OpenAI: explicit mode, nothing
        written) when no lifetime outlasts the gap."""
        if not self.prefixes:
            return None if self.planner.form.explicit_cache else ()
        marks: list[int] = []
        for length in self.prefixes:
            if length == len(sent):
                marks.append(-1)
            elif length == shared == len(previous or ()) and 0 < previous_out < len(plan.messages):
                marks.append(previous_out - 1)  # the previous request, as sent: no conversion needed
            else:
                index = self._end_of(plan, sent[:length])
                if index is not None and index < len(plan.messages) - 1:
                    marks.append(index)
        return tuple(dict.fromkeys(marks))

    def _end_of(self, plan: Plan[Any], prefix: list[BaseMessage]) -> int | None:
        """The index in ``plan.messages`` (the output's form) of the last message ``prefix`` becomes, when the plan
        starts with it unchanged; None otherwise (or for an empty prefix). Converts only ``prefix``."""
        if not prefix:
            return None
        ends = self.planner.form.write(prefix, None)[0]
        end = len(ends) - 1
        return end if 0 <= end < len(plan.messages) and plan.messages[end] == ends[-1] else None

    def _report(self, shared: int, tokens: int, cut: bool) -> CacheReport:
        """The request's estimated reads and writes: a request that marks reads its prefix and writes the rest (at
        the lifetime chosen); one that cannot mark caches nothing with explicit caching; automatic caching reads,
        and writes at the write price where the provider bills writes."""
        rules = self.rules
        if rules is None:
            return CacheReport(shared, 0, 0, None, cut)
        marks = self.marks and self.ttl.writes
        caches = marks if (self.marks or rules.mode == "explicit") else True
        cached = rules.cached_tokens(shared) if caches else 0
        written = tokens - cached if caches and rules.bills_writes and tokens >= rules.min_prefix else 0
        cost = rules.cost(tokens, cached, written, written_long=written if self.ttl.long else 0)
        return CacheReport(shared, cached, written, cost, cut)

    def observe(
        self, usage: Any, last: Plan[Any] | None, sent: list[BaseMessage] | None = None, cleared: int = 0
    ) -> Usage:
        """``PlanSession.observe``: the provider's usage of the ``last`` request (of the ctxwin messages ``sent``)
        becomes its ``cache`` figures, and its ratio of input tokens (with the ``cleared`` ones its context editing
        removed, which ctxwin counted) to counted ones corrects ``budget`` (the largest seen, plus
        ``OBSERVE_MARGIN``); a request holding one compaction message not measured yet counts it instead
        (``_measure_compaction``)."""
        if last is None:
            raise InvalidInputError("observe(usage) reports on the last planned request: call plan() first")
        measured = read_usage(usage)
        rules = self.rules
        cost = rules.cost(measured.input_tokens, measured.cached_tokens, measured.cache_write_tokens,
                          written_long=measured.cache_write_long_tokens) if rules else None
        previous = last.cache
        last.cache = CacheReport(
            previous.shared_tokens if previous else 0, measured.cached_tokens, measured.cache_write_tokens, cost,
            previous.cut if previous else True, measured=True,
        )
        read = last.tokens_after - self._ignored(sent or [])
        provider = measured.input_tokens + cleared  # the request as sent, before the provider's editing
        if sent is not None and measured.input_tokens > 0 and self._measure_compaction(provider, read, sent):
            return measured
        if read > 0 and measured.input_tokens > 0:
            ratio = provider / read
            low, high = PLAUSIBLE_RATIOS
            if low <= ratio <= high:
                self._ratio = max(self._ratio, ratio)
                self._correct()
            else:
                warnings.warn(
                    f"observe: the provider counted {measured.input_tokens:,} input tokens for a request of "
                    f"{last.tokens_after:,} counted ({ratio:.3g}x, outside {low}-{high}x): taken as the usage of "
                    "another request; the budget is left as it was",
                    RuntimeWarning, stacklevel=3,
                )
        return measured

    def _ignored(self, sent: list[BaseMessage]) -> int:
        """The tokens of the messages of ``sent`` between its system prompt and its newest compaction message, which
        the provider does not read (OpenAI and Anthropic drop what a compaction item stands for): no usage counts
        them."""
        newest = newest_compaction(sent) or 0
        return sum(self.meter.each(sent[leading_system_count(sent):newest]))

    def _measure_compaction(self, provider: int, read: int, sent: list[BaseMessage]) -> bool:
        """Count the newest compaction message of ``sent``, when not measured yet, by what the provider counted
        (``provider``: its input tokens), in the counter's tokens (over the ratio measured so far), less the rest of
        what it read (``read``: the request as counted from that message on). An opaque item's size says little of
        its tokens, so the difference is the item's, not the counter's error, and corrects no budget."""
        newest = newest_compaction(sent)
        if newest is None or any(sent[newest] is m for m in self._measured):
            return False
        item = sent[newest]
        rest = read - self.meter.count(item)
        tokens = math.ceil(provider / (self._ratio or 1.0)) - rest
        if tokens < 1:  # the provider counted less than the rest alone: not this request's usage (the ratio says so)
            return False
        self.meter.note(item, tokens)
        self._measured.append(item)
        return True

    def _correct(self) -> None:
        """Fit later plans to the budget in counted tokens that the measured ratio keeps within the real one."""
        planner, budget = self.planner, self.planner.budget
        bound = self._ratio * (1 + OBSERVE_MARGIN)
        counter = planner.counter
        estimating = bool(counter.max_relative_error) or counter.estimating is True
        if self._ratio <= 1 and not estimating:  # an exact counter is tightened only when the provider counted more
            self.budget = budget
            return
        real = budget.context_window - budget.reserve_output  # the provider's limit, in its tokens
        limit = math.floor(real / bound)
        # The budget in counted tokens: the provider's limit over the measured ratio, which bounds the counter's error.
        self.budget = dataclasses.replace(budget, context_window=limit + budget.reserve_output, safety_margin=0)
