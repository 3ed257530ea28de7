"""``CutPolicy``: when a session cuts and what a cut keeps: the low-water mark it plans down to (from how long the
turns are and whether an agent is at work), the head it keeps in front, and the planner runs a cut takes."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from ctxwin.messages._placement import place_media
from ctxwin.planner._cache_policy import CachePolicy
from ctxwin.planner._config import FitConfig
from ctxwin.planner._planning import Planned, Planning
from ctxwin.strategies._base import leading_system_count, working_set_start
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._must_send import must_send, sends
from ctxwin.strategies._pins import head_length
from ctxwin.strategies._walk import within

# The low-water mark a cut plans down to, as a share of the input budget (low_water=None picks one per cut, from
# how long the user turns are): with short turns a sliding trim keeps its window nearly full, and a session should
# send about as much; with long ones the sliding trim keeps less, so a deeper cut costs little context and saves
# cuts. docs/sessions-measurements.md ("Per-run defaults") has the replays behind both values and the bounds below.
DEFAULT_LOW_WATER = 0.6
AGENT_LOW_WATER = 0.45
# User turns are short up to this share of the input budget (the mean tokens added per user message over the recent
# requests) and long from the second; between, the mark and the head's fill go linearly from one to the other.
_SHORT_TURN, _LONG_TURN = 0.05, 0.15
# A cut leaves room for the growth of the recent turns (the largest of the last few), at most this share of the
# budget: a single huge tool output must not make the session throw its history away.
_MAX_HEADROOM = 0.6
_GROWTH_TURNS = 8
# ...and, when a cut would read nothing from the cache (no head, the tools and system prompt below the minimum
# cacheable prefix), room for this many requests of the mean growth of the last _MEAN_TURNS requests: such a cut is
# a miss, and a hit on nine requests in ten needs one every ten requests or fewer. The mean, not the median: a few
# large tool outputs are what bring the next cut closer. A cut that reads its head is a hit and gets no such room.
_TURNS_BETWEEN_CUTS = 10
_MEAN_TURNS = 32
# A new tool output over this share of the input budget is oversize: two never fit one request, so each would make
# the request that brings it a cut, and that cut would shorten it anyway, to whatever room it found. A cache-stable
# session cuts it once, on arrival, to _OVERSIZE_CAP of the budget and sends that copy from then on: the room a cut
# leaves at the default marks (0.4-0.55 of the budget) holds the working set's outputs at that size and the next
# ones, so at most one request in three is a cut.
_OVERSIZE, _OVERSIZE_CAP = 0.5, 0.125
# An agent run: fewer than this share of the recent requests added a user message (the rest are tool rounds).
_AGENT_USER_SHARE = 0.5
# With long user turns and no summary (head_fill=None) the head a cut keeps is filled to this share of keep_first:
# every later cut reads it (the task and the first findings) from the cache instead of rewriting it. A summary of
# the middle needs that room instead.
_LONG_TURN_HEAD = 2 / 3

# What a cut's caller makes of each planner run the cut asks for (the messages, the target, whether they are every
# message added so far).
R = TypeVar("R")


class CutPolicy:
    """When a session's request is a cut and what the cut keeps, by its ``config`` (``low_water``, ``keep_first``,
    ``head_fill``, ``tool_output_cap``: ``FitConfig``), its planner (what its chain summarises), the ``cache``
    policy (the model's rules, the budget, what a write costs) and the session's ``meter``. It learns from each
    request (``note``) how much the turns add and whether a user or an agent is adding them.

    A cut's request is, front to back: the system prompt, the fixed ``head`` (chosen at the first cut, kept byte for
    byte by every later one: ``SessionTurn.head``, which the planner keeps pinned and puts a summary after), then
    what the planner's chain makes of the rest down to ``target`` (a summary where it summarises, the recent turns
    verbatim), then recall's message where the kept conversation starts. A block carried across cuts goes after the
    head as part of the fixed prefix a run is given; a summariser is the chain's summarize step."""

    def __init__(self, planner: Planning[Any], config: FitConfig, cache: CachePolicy, meter: Meter) -> None:
        self.planner, self.config, self.cache, self.meter = planner, config, cache, meter
        self.head: tuple[BaseMessage, ...] = ()  # what every cut keeps after the system prompt
        self.head_chosen = False  # the first cut chooses the head (maybe none); later cuts keep it
        self._growth: deque[int] = deque(maxlen=_MEAN_TURNS)  # the tokens each recent request added
        self._asked: deque[bool] = deque(maxlen=_MEAN_TURNS)  # whether each of those requests added a user message

    def note(self, added: Sequence[BaseMessage]) -> None:
        """Take what a request added to the one before."""
        self._growth.append(sum(self.meter.each(added)))
        self._asked.append(any(isinstance(m, HumanMessage) for m in added))

    @property
    def agent_run(self) -> bool:
        """Whether most of the recent requests were tool rounds, not user messages: an agent run."""
        return bool(self._asked) and sum(self._asked) < _AGENT_USER_SHARE * len(self._asked)

    @property
    def turn_length(self) -> float:
        """How long the recent user turns are against the input budget: 0 when the mean tokens added per user message
        are at most ``_SHORT_TURN`` of it (chats), 1 from ``_LONG_TURN`` on (or with no user message: an agent
        left to work), linear between; 0 before any request."""
        if not self._growth:
            return 0.0
        users = sum(self._asked)
        if not users:
            return 1.0
        share = sum(self._growth) / users / self.cache.budget.max_input_tokens
        return min(1.0, max(0.0, (share - _SHORT_TURN) / (_LONG_TURN - _SHORT_TURN)))

    @property
    def low_water(self) -> float:
        """The low-water mark the next cut plans down to: ``low_water``, or when it is None from
        ``DEFAULT_LOW_WATER`` (short user turns) down to ``AGENT_LOW_WATER`` (long ones) by ``turn_length``."""
        if self.config.low_water is not None:
            return float(self.config.low_water)
        return DEFAULT_LOW_WATER - (DEFAULT_LOW_WATER - AGENT_LOW_WATER) * self.turn_length

    def tool_output_cap(self) -> int | None:
        """The tokens a new tool output is cut to on arrival: ``tool_output_cap`` of the input budget in an agent
        run of a cache-stable session; None otherwise."""
        share = self.config.tool_output_cap if self.config.cache_stable and self.agent_run else None
        return None if share is None else max(1, math.floor(share * self.cache.budget.max_input_tokens))

    def arrived(self, items: list[BaseMessage]) -> list[BaseMessage]:
        """``items`` as a cache-stable session's requests send them from now on: each new tool output over
        ``_OVERSIZE`` of the input budget cut to ``_OVERSIZE_CAP`` of it (when the chain shortens tool outputs), and
        in an agent run each over ``tool_output_cap`` cut to that (the others the same objects)."""
        if not self.config.cache_stable:
            return items
        out = list(items)
        budget = self.cache.budget.max_input_tokens
        over = [i for i, m in enumerate(items) if self.planner.truncates  # a chain that never shortens outputs: none
                and isinstance(m, ToolMessage) and self.meter.count(m) > _OVERSIZE * budget]
        size = max(1, math.floor(_OVERSIZE_CAP * budget))
        for i, message in zip(over, self.planner.cap_tool_outputs([items[i] for i in over], size, self.meter),
                              strict=True):
            out[i] = message
        cap = self.tool_output_cap()
        return out if cap is None else self.planner.cap_tool_outputs(out, cap, self.meter)

    def appended_fits(self, candidate: list[BaseMessage]) -> bool:
        """Whether the previous request plus what was appended fits as it is sent, so no cut is due: with media where
        the output's API takes it (``place_media``, the plan's first step), so a request that appends is exactly
        that."""
        candidate = place_media(candidate, self.planner.form).messages
        budget, meter = self.cache.budget, self.meter
        if candidate and meter.overhead is not None:
            return within(meter, candidate, budget.max_input_tokens - budget.tools_tokens)
        return meter.exact(candidate) <= budget.max_input_tokens

    def cut(
        self, candidate: list[BaseMessage], appended: bool, view: list[BaseMessage], sent: list[BaseMessage],
        run: Callable[[list[BaseMessage], int | None, bool], R],
    ) -> Generator[R, Planned[Any], Planned[Any]]:
        """A cut of ``candidate`` (the previous request ``sent`` plus what was appended, when ``appended``; else
        ``view``, every message), as the planner runs it asks for (``run(messages, target, whole)``), each sent its
        result: the chain once, again when that fails: to the budget when the low-water mark is below what must
        stay, without the head when the head leaves too little room (from then on), from every message when what
        the last cut made leaves too little. The agent's working set goes out whole (``working_set_whole``)."""
        candidate = self.working_set_whole(candidate, view)
        if appended and not self.head_chosen:
            self.choose_head(sent)
        planned = yield run(candidate, self.target(sent), not appended)
        if not planned.plan.fits:  # the low-water mark is below what must stay: fit to the budget
            planned = yield run(candidate, None, False)
        if not self.head_kept(planned, candidate):  # the head leaves too little room: cut without it, from now on
            self.head = ()
            planned = yield run(candidate, self.target(sent), False)
            if not planned.plan.fits:
                planned = yield run(candidate, None, False)
        if not planned.plan.fits and appended:  # what the last cut made (its summary) leaves too little: start afresh
            planned = yield run(view, None, True)
        return planned

    @staticmethod
    def working_set_whole(candidate: list[BaseMessage], view: list[BaseMessage]) -> list[BaseMessage]:
        """``candidate`` for a cut, with the agent's working set (its newest tool outputs, ``working_set_start``) as
        the session was given it (``view``): an output an earlier cut shortened goes out whole again when the cut
        holds it (``candidate`` itself when none was shortened)."""
        start = working_set_start(candidate)
        if start is None:
            return candidate
        wanted = {m.tool_call_id for m in candidate[start:] if isinstance(m, ToolMessage)}
        given: dict[str, BaseMessage] = {}
        for message in reversed(view):
            if isinstance(message, ToolMessage) and message.tool_call_id in wanted:
                given.setdefault(message.tool_call_id, message)
                if len(given) == len(wanted):
                    break
        tail = [given.get(m.tool_call_id, m) if isinstance(m, ToolMessage) else m for m in candidate[start:]]
        if all(a is b for a, b in zip(tail, candidate[start:], strict=True)):
            return candidate
        return [*candidate[:start], *tail]

    def target(self, sent: list[BaseMessage]) -> int:
        """The input tokens a cut plans down to: the low-water mark, lower when the room it leaves would not hold
        the largest recent growth times the requests a cache write takes to pay for itself, or, when the cut reads
        nothing from the cache, ``_TURNS_BETWEEN_CUTS`` requests of the mean recent growth (at most
        ``_MAX_HEADROOM`` of the budget). ``sent``: the previous request."""
        budget = self.cache.budget.max_input_tokens
        headroom = (1 - self.low_water) * budget
        if self._growth:
            room: float = self.cache.payback() * max(list(self._growth)[-_GROWTH_TURNS:])
            if not self._reads_cache(sent):
                room = max(room, _TURNS_BETWEEN_CUTS * sum(self._growth) / len(self._growth))
            headroom = max(headroom, min(room, _MAX_HEADROOM * budget))
        return math.floor(budget - headroom)

    def _reads_cache(self, sent: list[BaseMessage]) -> bool:
        """Whether a cut's request reads a prefix from the cache: a head is kept, or the tools and system prompt
        alone reach the model's minimum cacheable prefix."""
        if self.head:
            return True
        rules = self.cache.rules
        if rules is None or rules.min_prefix <= 0:
            return False
        system = sum(self.meter.each(sent[: leading_system_count(sent)]))
        return self.cache.budget.tools_tokens + system >= rules.min_prefix

    def choose_head(self, sent: list[BaseMessage]) -> None:
        """At the first cut, the head later cuts keep: the first messages after the system prompt of the last
        request ``sent``, as few as make the tools, system prompt and head reach the model's minimum cacheable
        prefix and ``head_fill`` of the input budget (or as many as ``keep_first`` of it holds), ending where no
        tool call waits for its results; none when no such head within ``keep_first`` reaches the minimum, the
        model caches nothing, or the tools and system prompt alone reach what is wanted."""
        self.head_chosen = True
        rules, keep_first = self.cache.rules, self.config.keep_first
        if keep_first is None or rules is None or rules.min_prefix <= 0:
            return
        start = leading_system_count(sent)
        if any(map(self.planner.is_summary, sent[:start])):  # a summary before the head changes at every cut
            return
        summarizes = self.planner.summarizes
        if not self.planner.form.later_system and summarizes:
            return  # a summary would follow the head: a system message the form takes only at the start
        budget = self.cache.budget
        fill = self.config.head_fill
        if fill is None:  # a summary of the middle needs the room a larger head would take
            fill = 0.0 if summarizes else _LONG_TURN_HEAD * keep_first * self.turn_length
        wanted = max(rules.min_prefix, math.ceil(fill * budget.max_input_tokens))
        total = budget.tools_tokens + sum(self.meter.each(sent[:start]))
        room = keep_first * budget.max_input_tokens
        waiting: set[str] = set()
        head = 0  # how many messages the head takes: the longest acceptable end found so far
        for end in range(start, len(sent) - 1):  # never the whole request: a cut must drop something after the head
            if total >= wanted and not waiting:
                break
            message = sent[end]
            tokens = self.meter.count(message)
            room -= tokens
            if room < 0:
                break
            if isinstance(message, AIMessage):
                waiting.update(call_id for call in message.tool_calls if (call_id := call.get("id")))
            elif isinstance(message, ToolMessage):
                waiting.discard(message.tool_call_id)
            elif waiting:
                break  # a call whose results come after another message
            total += tokens
            if not waiting and total >= rules.min_prefix:
                head = end + 1 - start
        self.head = tuple(sent[start : start + head])

    def head_kept(self, planned: Planned[Any], candidate: list[BaseMessage]) -> bool:
        """Whether the plan fits with the head in place (or there is no head) and still sends what the model call
        cannot do without (``must_send``): a head that leaves no room for the newest round goes instead of it."""
        head, sent = self.head, planned.sent
        if not head:
            return True
        start = leading_system_count(sent)
        if not (planned.plan.fits and head_length(sent, head, start) == len(head)):
            return False
        system = leading_system_count(candidate)
        return sends(candidate[system:], must_send(candidate[system:])[0], sent[start:])
