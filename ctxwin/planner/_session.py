"""``PlanSession``: a growing conversation planned turn by turn, keeping the provider's prompt cache.

Providers bill the prefix a request shares with a recent one at a fraction of the price. A planner that re-fits the
whole history on every request moves its cut a little each turn, so the bytes after the system prompt change and
the cache never hits. A cache-stable session (the default) keeps them still instead:

- between cuts it sends the previous request unchanged, byte for byte, plus what was appended;
- it cuts only when the next request would not fit, down to a low-water mark (``low_water`` of the input budget),
  so the next cut is several turns away and each cut's cache write pays for itself;
- a cut keeps a fixed head (``keep_first``, ``head_fill``) in front, byte for byte, so the request after a cut still
  reads the tools, system prompt and head from the cache;
- with ``tool_output_cap``, an agent's new tool outputs are shortened once, on arrival, so later requests resend
  the same bytes;
- budget safety is never traded: every request fits, tool pairs stay whole, the last user turn is kept.

``Plan.cache`` reports what a request shares with the previous one and its estimated cost; with a provider output
the request carries that provider's cache marks and lifetime (``ctxwin.planner._cache_marks``); ``observe(usage)``
takes the provider's reported usage. ``cache_stable=False`` plans every request with ``Planner.plan``.
docs/sessions.md is the guide; docs/sessions-measurements.md has the replays behind the defaults.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
import uuid
import warnings
from collections import deque
from collections.abc import Generator, Mapping
from typing import Any, Generic

from typing_extensions import Unpack

from ctxwin.counters._caching import CachingRules
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from ctxwin.messages._anthropic_cache import MAX_BREAKPOINTS
from ctxwin.messages._convert import is_langchain_message, is_request
from ctxwin.messages._forms import CallerForms, OpenAIDicts, give_back, read_for
from ctxwin.messages._placement import place_media
from ctxwin.messages._request_body import tools_as_sent
from ctxwin.planner._cache_marks import (
    TtlChoice,
    check_cache_control,
    checked_ttl,
    choose_ttl,
    payback_turns,
    takes_openai_marks,
)
from ctxwin.planner._config import DEFAULT_KEEP_FIRST as DEFAULT_KEEP_FIRST  # where the tests and docs met it
from ctxwin.planner._config import SESSION_OPTIONS, FitOptions
from ctxwin.planner._driving import adrive, drive
from ctxwin.planner._planning import Planned, Planning, SessionTurn
from ctxwin.planner._report import CacheReport, M, Plan, verbatim_turns
from ctxwin.planner._usage import Usage, read_usage
from ctxwin.recall._inject import (
    MAX_EXCERPTS,
    MIN_SCORE,
    Recalled,
    SessionRecall,
    before_newest_user,
    choose,
    find,
    recall_query,
)
from ctxwin.recall._store import Excerpt, RecallStore, message_excerpts
from ctxwin.recall._tool import RecallTool
from ctxwin.strategies._base import leading_system_count
from ctxwin.strategies._ledger import Ledger
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._pins import head_length, pinned_indexes
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
# An agent run: fewer than this share of the recent requests added a user message (the rest are tool rounds).
_AGENT_USER_SHARE = 0.5
# With long user turns and no summary (head_fill=None) the head a cut keeps is filled to this share of keep_first:
# every later cut reads it (the task and the first findings) from the cache instead of rewriting it. A summary of
# the middle needs that room instead.
_LONG_TURN_HEAD = 2 / 3
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


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


# A planner run a session's planning asks for: the messages, the caller's forms, and what the session asks of it.
_Run = tuple[list[BaseMessage], CallerForms | None, SessionTurn]


class PlanSession(Generic[M]):
    """A conversation that grows by appended messages, planned after each turn by one ``Planner``: what a chat
    product keeps beside its history. ``add_messages`` the turn's messages, then ``plan()``.

    ``cache_stable`` (default True): keep the provider's prompt cache (the module docstring says how); False: each
    plan is ``Planner.plan`` of all the messages added so far. ``low_water``: the share of the input budget a cut
    plans down to (0 < low_water <= 1; 1 re-fits to the budget at each cut; None, the default: chosen at each cut,
    ``DEFAULT_LOW_WATER`` with short user turns down to ``AGENT_LOW_WATER`` with long ones, see ``turn_length``).
    ``tool_output_cap``: in agent runs, a new tool output over this share of the input budget is cut to it on
    arrival, once (docs/sessions-measurements.md says when it pays). ``keep_first``: the most of the input budget
    the head a cut keeps may take (None: a cut keeps no head, it drops the oldest messages). ``head_fill``: the head
    reaches at least this share of the input budget with the tools and system prompt (None: up to two thirds of
    ``keep_first`` by ``turn_length`` at the first cut, 0 when the planner summarizes). ``cache_control``: mark
    cache breakpoints in ``Plan.request`` (None: with ``output="anthropic"``, and with ``"openai"``/``"responses"``
    for a model that takes OpenAI's marks). ``expected_gap``: the seconds expected between requests, which choose
    the cache lifetime (None: the median of the gaps measured between plans). ``cache_ttl``: one of the model's
    lifetimes for every write (None: chosen from the gap). ``cache_key``: the ``prompt_cache_key`` OpenAI requests
    carry (None: one made for the session, for models that route by it). The options are the planner's ``config``
    with those given here instead (``FitConfig`` documents them).

    A turn costs what changed: the session keeps the token counts of the messages it was given and the indexes of
    the pinned ones, so a plan tokenizes only the new messages. The messages given are taken as they are: mutating
    one afterwards is not noticed (start a new session, or use ``Planner.plan``, which notices).
    """

    # The meter also holds the counts of the copies past plans made (shortened tool outputs, summaries); past twice
    # the conversation's length it forgets those no longer sent.
    _RETAIN_FACTOR = 2
    _RETAIN_SLACK = 64

    def __init__(self, planner: Planning[M], *, history: Any = None, **options: Unpack[FitOptions]) -> None:
        others = sorted(set(options) - SESSION_OPTIONS)
        if others:
            raise TypeError(f"{others[0]!r} is an option of the planner, not of a session: give it to the Planner; "
                            f"a session takes {', '.join(sorted(SESSION_OPTIONS))}")
        self.config = config = planner.config.replace(**options)
        self.planner = planner
        self.cache_stable = config.cache_stable
        self.low_water = _float(config.low_water)
        rules = planner.caching
        self.cache_control = config.cache_control
        if self.cache_control is None:
            self.cache_control = planner.output == "anthropic" or (
                planner.output in ("openai", "responses") and takes_openai_marks(rules))
        check_cache_control(self.cache_control, planner.output, rules, planner.model)
        self.expected_gap = config.expected_gap
        self.cache_ttl = checked_ttl(config.cache_ttl, rules)
        routed = planner.output in ("openai", "responses") and rules is not None and rules.cache_key
        self.cache_key = config.cache_key or (f"ctxwin-{uuid.uuid4().hex}" if routed else None)
        self.tool_output_cap = _float(config.tool_output_cap) if config.cache_stable else None
        self.keep_first = _float(config.keep_first) if config.cache_stable else None
        self.head_fill = _float(config.head_fill)
        self._head_chosen = False  # the first cut chooses the head (maybe none); later cuts keep it
        self._head: tuple[BaseMessage, ...] = ()  # what every cut keeps after the system prompt (``head``)
        self.rules: CachingRules | None = planner.caching
        self._budget = planner.budget  # the budget plans fit: corrected by observe()
        self._messages: list[BaseMessage] = []
        self._view: list[BaseMessage] = []  # what plans are made of: the messages, new tool outputs capped
        self._pinned: list[int] = []
        self._meter = Meter(planner.counter, tools_as_sent(planner.output, planner.tools))
        # The caller's objects (LangChain messages; OpenAI dicts for output="openai"), while every turn gave that
        # one form: plans give them back (docs/interop.md). A turn in another form makes the session a mix.
        self._forms: CallerForms | None = None
        self._mixed = False
        self._sent: list[BaseMessage] | None = None  # the ctxwin messages of the last request
        self._covered = 0  # how many of the added messages the last request stands for
        self._sent_out = 0  # how many messages (in the output form) the last request had
        self._growth: deque[int] = deque(maxlen=_MEAN_TURNS)
        self._asked: deque[bool] = deque(maxlen=_MEAN_TURNS)  # whether each of those requests added a user message
        self._last: Plan[M] | None = None
        self._ratio = 0.0  # the largest measured ratio of the provider's input tokens to the counted ones
        self.recall_store = RecallStore()
        self._recall = SessionRecall(self._messages, self._view, self.recall_store)
        self._ledger = Ledger()
        self.history = history
        if history is not None:
            if not callable(getattr(history, "add_messages", None)) or not hasattr(history, "messages"):
                raise TypeError(f"history must be a chat history (with messages and add_messages, as "
                                f"ctxwin.history's are), got {type(history).__name__}")
            stored = list(history.messages)
            if stored:
                self._add(stored)
        self._planned_at: float | None = None
        self._gaps: deque[float] = deque(maxlen=_GAP_TURNS)  # seconds between the recent plans
        self._ttl = choose_ttl(rules, self.expected_gap, self.cache_ttl)
        # The prefixes (message counts of the last request) it marks for the cache (or would, with cache_control):
        # what a biller reads as written.
        self.cache_prefixes: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def messages(self) -> list[Any]:
        """A copy of the messages added so far: the caller's LangChain messages if every turn gave LangChain
        messages, else ctxwin messages."""
        forms = self._caller_forms()
        if forms is None or isinstance(forms, OpenAIDicts):
            return list(self._messages)
        return forms.back_all(self._messages)

    @property
    def ledger(self) -> Ledger:
        """What the conversation told, read up to its newest message: each cut's block is made of it; steer it with
        ``add``, ``pin``, ``edit`` and ``drop`` (``ctxwin.strategies.Ledger``)."""
        return self._ledger.read(self._messages)

    @property
    def counted(self) -> int:
        """How many messages the session holds token counts of (its own, and copies its last plans made)."""
        return self._meter.held

    @property
    def head(self) -> list[BaseMessage]:
        """The messages every cut keeps right after the system prompt, as first sent (``keep_first``): chosen at
        the first cut, empty before it, when no head was kept or when a cut had to do without it."""
        return list(self._head)

    @property
    def max_input_tokens(self) -> int:
        """The input budget plans fit, in the counter's tokens (``observe`` corrects it for an estimating counter)."""
        return self._budget.max_input_tokens

    def add_messages(self, messages: Any) -> None:
        """Append ``messages`` (any shape ``convert_to_messages`` accepts, one message too) to the conversation (and
        to its ``history``, when it has one).
        A ``RemoveMessage`` is refused (ValueError): a session only appends, which is what keeps its requests'
        prefix cached; plan an edited history with a new session or ``Planner.plan``."""
        items = self._add(messages)
        if self.history is not None and items:
            self.history.add_messages(items)

    def _add(self, messages: Any) -> list[BaseMessage]:
        start = len(self._messages)
        if is_langchain_message(messages) or (isinstance(messages, Mapping) and not is_request(messages)):
            messages = [messages]
        items, forms = read_for(messages, self.planner.output)
        removal = next((m for m in items if isinstance(m, RemoveMessage)), None)
        if removal is not None:
            raise ValueError(
                f"PlanSession.add_messages: RemoveMessage(id={removal.id!r}) removes a message, and a session only "
                "appends (its requests keep their prefix for the cache): apply the removal to the history "
                "(ctxwin.history's add_messages reducer) and plan it with a new session or Planner.plan"
            )
        self._messages += items
        share = self.tool_output_cap if self.agent_run else None
        cap = None if share is None else max(1, math.floor(share * self._budget.max_input_tokens))
        self._view += items if cap is None else self.planner.cap_tool_outputs(items, cap, self._meter)
        self._pinned += pinned_indexes(self._messages, start)
        if forms is None or (self._forms is None and start) or (self._forms and type(forms) is not type(self._forms)):
            self._mixed = True
        elif self._forms is None:
            self._forms = forms
        else:
            self._forms.add(items, messages)
        return items

    def recall(self, query: str, *, limit: int = MAX_EXCERPTS, min_score: float = MIN_SCORE) -> list[Excerpt]:
        """The excerpts of what the last request left out (the session's whole history, less what it sent as it
        was) relevant to ``query``, best first: what ``recall_tool`` answers."""
        return self._recall.search(query, self._sent or [], limit=limit, min_score=min_score)

    def recalled_message(self, handle: str) -> list[Excerpt]:
        """The whole of one message of the history, in excerpts: ``handle`` is a tool call id (its result), a
        message id or ``#position`` (what a masked tool output names)."""
        self._recall.search("", self._sent or [], limit=0, min_score=1.0)  # indexes what left
        found = self.recall_store.message(handle)
        if not found and handle.startswith("#") and handle[1:].isdigit() and int(handle[1:]) < len(self._messages):
            return message_excerpts(self._messages[int(handle[1:])], int(handle[1:]))
        return found

    @property
    def recall_tool(self) -> RecallTool:
        """A search tool over what this session's requests left out, for an agent (OpenAI, Anthropic and LangChain
        forms, and the handler that answers a call: ``ctxwin.recall._tool``)."""
        return RecallTool(self.recall, self.recalled_message)

    def _caller_forms(self) -> CallerForms | None:
        return None if self._mixed else self._forms

    def _candidate(self) -> tuple[list[BaseMessage], bool]:
        """What the next request starts from, and whether it is the last request plus what was appended."""
        if not self.cache_stable or self._sent is None:
            return list(self._view), False
        return self._sent + self._view[self._covered :], True

    def _turn(self, target: int | None = None, *, whole: bool = False, recall: bool = True,
              recalled: Recalled | None = None) -> SessionTurn:
        """What a planner run is asked: ``target``, the head, the pins of the messages when they are every message
        added so far (``whole``: the session knows them from what was appended), where recall searches (the
        session's store at a cut, nothing between cuts; with ``cache_stable=False`` what it plans, as
        ``Planner.plan`` does) and what the session recalled itself."""
        source: SessionRecall | bool = (self._recall if self.cache_stable else True) if recall else False
        pinned = list(self._pinned) if whole else None
        told = self.ledger if recall else False  # (between cuts the block stays as sent)
        return SessionTurn(target, self._head, pinned, source, recalled, told)

    def _forget(self, keep: list[BaseMessage]) -> None:
        if self._meter.held > self._RETAIN_FACTOR * len(self._messages) + self._RETAIN_SLACK:
            self._meter.retain([*self._view, *keep])

    def _target(self) -> int:
        """The input tokens a cut plans down to: the low-water mark, lower when the room it leaves would not hold
        the largest recent growth times the requests a cache write takes to pay for itself, or, when the cut reads
        nothing from the cache, ``_TURNS_BETWEEN_CUTS`` requests of the mean recent growth (at most
        ``_MAX_HEADROOM`` of the budget)."""
        budget = self._budget.max_input_tokens
        headroom = (1 - self.cut_low_water) * budget
        if self._growth:
            wanted = payback_turns(self.rules, self._ttl) if self._writes else 1
            room: float = wanted * max(list(self._growth)[-_GROWTH_TURNS:])
            if not self._cut_reads_cache():
                room = max(room, _TURNS_BETWEEN_CUTS * sum(self._growth) / len(self._growth))
            headroom = max(headroom, min(room, _MAX_HEADROOM * budget))
        return math.floor(budget - headroom)

    def _cut_reads_cache(self) -> bool:
        """Whether a cut's request reads a prefix from the cache: a head is kept, or the tools and system prompt
        alone reach the model's minimum cacheable prefix."""
        if self._head:
            return True
        rules, sent = self.rules, self._sent or []
        if rules is None or rules.min_prefix <= 0:
            return False
        system = sum(self._meter.each(sent[: leading_system_count(sent)]))
        return self._budget.tools_tokens + system >= rules.min_prefix

    @property
    def agent_run(self) -> bool:
        """Whether most of the recent requests were tool rounds, not user messages: an agent run, whose new tool
        outputs are capped (``tool_output_cap``)."""
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
        share = sum(self._growth) / users / self._budget.max_input_tokens
        return min(1.0, max(0.0, (share - _SHORT_TURN) / (_LONG_TURN - _SHORT_TURN)))

    @property
    def cut_low_water(self) -> float:
        """The low-water mark the next cut plans down to: ``low_water``, or when it is None from
        ``DEFAULT_LOW_WATER`` (short user turns) down to ``AGENT_LOW_WATER`` (long ones) by ``turn_length``."""
        if self.low_water is not None:
            return self.low_water
        return DEFAULT_LOW_WATER - (DEFAULT_LOW_WATER - AGENT_LOW_WATER) * self.turn_length

    def _tokens(self, messages: list[BaseMessage]) -> int:
        """The request tokens of ``messages`` (with the tools), from the cached counts when the counter adds up."""
        if messages and self._meter.overhead is not None:
            return self._meter.total(messages) + self._budget.tools_tokens
        return self._meter.exact(messages)

    def _appended_fits(self, candidate: list[BaseMessage]) -> bool:
        """Whether the previous request plus what was appended fits as it is sent: with media where the output's
        API takes it (``place_media``, the plan's first step), so a request that appends is exactly that."""
        candidate = place_media(candidate, self.planner.output).messages
        budget = self._budget
        if candidate and self._meter.overhead is not None:
            return within(self._meter, candidate, budget.max_input_tokens - budget.tools_tokens)
        return self._meter.exact(candidate) <= budget.max_input_tokens

    def _time(self) -> None:
        """Note when this plan is made, and choose the cache lifetime from the gaps between plans."""
        now = time.monotonic()
        if self._planned_at is not None:
            self._gaps.append(now - self._planned_at)
        self._planned_at = now
        gap = self.expected_gap if self.expected_gap is not None else (
            statistics.median(self._gaps) if self._gaps else None)
        self._ttl = choose_ttl(self.rules, gap, self.cache_ttl)

    @property
    def ttl(self) -> TtlChoice:
        """The cache lifetime the next request's writes ask for (``ctxwin.planner._cache_marks``)."""
        return self._ttl

    @property
    def _writes(self) -> bool:
        """Whether the session's requests are written to the cache at a write price: the provider bills writes, and
        the request marks what is written (with markers) or the provider writes it anyway (automatic caching)."""
        rules = self.rules
        if rules is None or not rules.bills_writes:
            return False
        return self._ttl.writes if (self.cache_control or rules.mode == "explicit") else True

    def plan(self) -> Plan[M]:
        """The plan for the next request: the last request plus what was appended when that fits, else a cut (see
        the module docstring); with ``cache_stable=False``, ``Planner.plan`` of every message added so far."""
        return drive(self._planning(), self._run)

    async def aplan(self) -> Plan[M]:
        """``plan`` for async code (see ``Planner.aplan``)."""
        return await adrive(self._planning(), self._arun)

    def _planning(self) -> Generator[_Run, Planned[M], Plan[M]]:
        """``plan``, once for sync and async (``driving``): yields each planner run it needs, is sent what it
        planned. A cut runs the chain once, again when that fails: to the budget when the low-water mark is below
        what must stay, without the head when the head leaves too little room, from every message when what the
        last cut made leaves too little."""
        self._time()
        candidate, appended = self._candidate()
        forms = self._caller_forms()
        if not self.cache_stable:
            return self._finish((yield candidate, forms, self._turn(whole=True)), cut=True)
        late = self._late_recall(candidate) if appended and self._appended_fits(candidate) else None
        if late is not None:  # what was sent stays, the recall of the last cut too; a late one is appended
            return self._finish((yield late[0], forms, self._turn(recall=False, recalled=late[1])), cut=False)
        if appended and not self._head_chosen:
            self._choose_head()
        planned = yield candidate, forms, self._turn(self._target(), whole=not appended)
        if not planned.plan.fits:  # the low-water mark is below what must stay: fit to the budget
            planned = yield candidate, forms, self._turn()
        if not self._head_kept(planned):  # the head leaves too little room: cut without it, from now on
            self._head = ()
            planned = yield candidate, forms, self._turn(self._target())
            if not planned.plan.fits:
                planned = yield candidate, forms, self._turn()
        if not planned.plan.fits and appended:  # what the last cut made (its summary) leaves too little: start afresh
            planned = yield list(self._view), forms, self._turn(whole=True)
        return self._finish(planned, cut=True)

    def _run(self, run: _Run) -> Planned[M]:
        """The planner's run on ``messages`` with this session's meter and budget."""
        messages, forms, turn = run
        return self.planner.plan_run(messages, self._meter, forms, budget=self._budget, turn=turn)

    async def _arun(self, run: _Run) -> Planned[M]:
        messages, forms, turn = run
        return await self.planner.aplan_run(messages, self._meter, forms, budget=self._budget, turn=turn)

    def _late_recall(self, candidate: list[BaseMessage]) -> tuple[list[BaseMessage], Recalled | None] | None:
        """Between cuts: ``candidate``, with a recall message right before a new user message that relates to
        what was left out (within ``recall_share`` of the budget and the room the request leaves), and what it
        recalls; None when the recall found needs more room than is left (a cut makes it)."""
        share = self.config.recall_share
        new = self._view[self._covered :]
        if not share or not any(isinstance(m, HumanMessage) for m in new):
            return candidate, None
        query = recall_query(candidate)
        excerpts = find(self._recall, candidate, limit=MAX_EXCERPTS, min_score=MIN_SCORE)
        if not excerpts:
            return candidate, None
        budget = self._budget
        free = budget.max_input_tokens - self._tokens(candidate)
        chosen = choose(query, excerpts, min(math.floor(share * budget.max_input_tokens), free), self._meter.count)
        if chosen is None:
            return None
        message, kept, tokens = chosen
        with_recall = before_newest_user(candidate, message)
        if self._tokens(with_recall) > budget.max_input_tokens:
            return None
        return with_recall, Recalled(query, kept, tokens)

    def _choose_head(self) -> None:
        """At the first cut, the head later cuts keep: the first messages after the system prompt of the last
        request, as few as make the tools, system prompt and head reach the model's minimum cacheable prefix and
        ``head_fill`` of the input budget (or as many as ``keep_first`` of it holds), ending where no tool call
        waits for its results; none when no such head within ``keep_first`` reaches the minimum, the model caches
        nothing, or the tools and system prompt alone reach what is wanted."""
        self._head_chosen = True
        rules, sent = self.rules, self._sent or []
        if self.keep_first is None or rules is None or rules.min_prefix <= 0:
            return
        start = leading_system_count(sent)
        if any(map(self.planner.is_summary, sent[:start])):  # a summary before the head changes at every cut
            return
        summarizes = self.planner.summarizes
        if self.planner.output == "anthropic" and summarizes:
            return  # a summary would follow the head: a system message Anthropic takes only at the start
        budget = self._budget
        fill = self.head_fill
        if fill is None:  # a summary of the middle needs the room a larger head would take
            fill = 0.0 if summarizes else _LONG_TURN_HEAD * self.keep_first * self.turn_length
        wanted = max(rules.min_prefix, math.ceil(fill * budget.max_input_tokens))
        total = budget.tools_tokens + sum(self._meter.each(sent[:start]))
        room = self.keep_first * budget.max_input_tokens
        waiting: set[str] = set()
        head = 0  # how many messages the head takes: the longest acceptable end found so far
        for end in range(start, len(sent) - 1):  # never the whole request: a cut must drop something after the head
            if total >= wanted and not waiting:
                break
            message = sent[end]
            tokens = self._meter.count(message)
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
        self._head = tuple(sent[start : start + head])

    def _head_kept(self, planned: Planned[M]) -> bool:
        """Whether the plan fits with the head in place (or there is no head)."""
        head, sent = self._head, planned.sent
        if not head:
            return True
        start = leading_system_count(sent)
        return planned.plan.fits and head_length(sent, head, start) == len(head)

    def _end_of(self, plan: Plan[M], prefix: list[BaseMessage]) -> int | None:
        """The index in ``plan.messages`` (the output's form) of the last message ``prefix`` becomes, when the plan
        starts with it unchanged; None otherwise (or for an empty prefix). Converts only ``prefix``."""
        if not prefix:
            return None
        ends = give_back(prefix, self.planner.output, None)[0]
        end = len(ends) - 1
        return end if 0 <= end < len(plan.messages) and plan.messages[end] == ends[-1] else None

    def _marked_prefixes(self, sent: list[BaseMessage], shared: int) -> tuple[int, ...]:
        """The lengths (in messages) of the prefixes the request marks for the cache: the system prompt, the head,
        the previous request when this one starts with all of it (what it reads), and the whole request (what
        the next one reads); at most the provider's breakpoints (Anthropic marks its tools apart: one fewer with
        tools; the earliest but the system prompt go first); none when no lifetime outlasts the gap."""
        rules = self.rules
        if not self._ttl.writes or not sent:
            return ()
        start = leading_system_count(sent)
        head = self._head
        ends = {len(sent)}
        if head and head_length(sent, head, start) == len(head):
            ends.add(start + len(head))
        if self._sent is not None and 0 < shared == len(self._sent):
            ends.add(shared)
        # A model without rules (a planner given a counter) is marked as Anthropic allows, where it is marked at all.
        limit = rules.max_breakpoints if rules is not None else MAX_BREAKPOINTS
        explicit = rules.mode == "explicit" if rules is not None else self.planner.output == "anthropic"
        room = max(limit, 1) - (explicit and bool(self._budget.tools_tokens))
        if start:
            room -= 1
        later = sorted(end for end in ends if end > start)[-max(room, 1):]
        return (start, *later) if start else tuple(later)

    def _breakpoints(self, plan: Plan[M], sent: list[BaseMessage], shared: int) -> tuple[int, ...] | None:
        """``cache_prefixes`` as indexes in ``plan.messages`` (Anthropic marks its system prompt apart). None
        (Anthropic) or none (OpenAI: explicit mode, nothing written) when no lifetime outlasts the gap."""
        anthropic = self.planner.output == "anthropic"
        if not self.cache_prefixes:
            return None if anthropic else ()
        start = leading_system_count(sent)
        marks: list[int] = []
        for length in self.cache_prefixes:
            if length == len(sent):
                marks.append(-1)
            elif length == shared == len(self._sent or ()) and 0 < self._sent_out < len(plan.messages):
                marks.append(self._sent_out - 1)  # the previous request, as sent: no conversion needed
            elif not (anthropic and length == start):
                index = self._end_of(plan, sent[:length])
                if index is not None and index < len(plan.messages) - 1:
                    marks.append(index)
        return tuple(dict.fromkeys(marks))

    def _finish(self, planned: Planned[M], *, cut: bool) -> Plan[M]:
        """The session's plan: the planner's, with what it shares with the previous request and the cache marks (a
        new ``Plan``: the planner's is final as returned); then remember its request as the previous one."""
        plan, sent = planned.plan, planned.sent
        previous = self._sent
        shared = 0
        if previous is not None:
            while shared < min(len(previous), len(sent)) and previous[shared] is sent[shared]:
                shared += 1
        meter = self._meter
        if previous is not None:  # what this request added (the first one's history is no turn's growth)
            added = self._view[self._covered :]
            self._growth.append(sum(meter.each(added)))
            self._asked.append(any(isinstance(m, HumanMessage) for m in added))
        shared_tokens = (self._budget.tools_tokens + sum(meter.each(sent[:shared]))) if previous else 0
        self.cache_prefixes = self._marked_prefixes(sent, shared)
        marks = self.cache_control and bool(plan.messages)
        plan = dataclasses.replace(
            plan,
            cache=self._cache_report(min(shared_tokens, plan.tokens_after), plan.tokens_after, cut),
            recent_turns_verbatim=verbatim_turns(self._messages, sent),
            cache_breakpoints=self._breakpoints(plan, sent, shared) if marks else plan.cache_breakpoints,
            cache_ttl=self._ttl.sent if marks else plan.cache_ttl,
            cache_key=self.cache_key,
        )
        # A request that appended and had to repair a tool pair among what it appended (a call whose results came
        # after a user message) is not the base of the next one: the next request appends to the previous base
        # again, so the results, once they come, are sent with their call.
        if cut or not planned.repaired_pairs:
            self._sent, self._covered, self._sent_out = sent, len(self._messages), len(plan.messages)
        self._last = plan
        self._forget(sent)
        return plan

    def _cache_report(self, shared: int, tokens: int, cut: bool) -> CacheReport:
        """The request's estimated reads and writes: a request that marks reads its prefix and writes the rest (at
        the lifetime chosen); one that cannot mark caches nothing with explicit caching; automatic caching reads,
        and writes at the write price where the provider bills writes."""
        rules = self.rules
        if rules is None:
            return CacheReport(shared, 0, 0, None, cut)
        marks = self.cache_control and self._ttl.writes
        caches = marks if (self.cache_control or rules.mode == "explicit") else True
        cached = rules.cached_tokens(shared) if caches else 0
        written = tokens - cached if caches and rules.bills_writes and tokens >= rules.min_prefix else 0
        cost = rules.cost(tokens, cached, written, written_long=written if self._ttl.long else 0)
        return CacheReport(shared, cached, written, cost, cut)

    def observe(self, usage: Any) -> Usage:
        """Take the provider's reported usage of the last planned request (an OpenAI, Anthropic or Gemini usage
        object or dict, or a LangChain ``usage_metadata``): the last plan's ``cache`` figures become the measured
        ones (the cost as billed: reads, writes and the lifetime written), and the budget later plans fit is
        corrected by the measured ratio of the provider's input tokens to the counted ones (the largest seen, plus
        ``OBSERVE_MARGIN``): an estimating counter's over-count gives room back, an under-count (of any counter)
        takes it. A ratio outside ``PLAUSIBLE_RATIOS`` (a usage of another request) is reported by a
        RuntimeWarning and corrects nothing. ValueError before any plan, or for usage it cannot read."""
        last = self._last
        if last is None:
            raise ValueError("observe(usage) reports on the last planned request: call plan() first")
        measured = read_usage(usage)
        rules = self.rules
        cost = rules.cost(measured.input_tokens, measured.cached_tokens, measured.cache_write_tokens,
                          written_long=measured.cache_write_long_tokens) if rules else None
        previous = last.cache
        last.cache = CacheReport(
            previous.shared_tokens if previous else 0, measured.cached_tokens, measured.cache_write_tokens, cost,
            previous.cut if previous else True, measured=True,
        )
        if last.tokens_after > 0 and measured.input_tokens > 0:
            ratio = measured.input_tokens / last.tokens_after
            low, high = PLAUSIBLE_RATIOS
            if low <= ratio <= high:
                self._ratio = max(self._ratio, ratio)
                self._correct()
            else:
                warnings.warn(
                    f"observe: the provider counted {measured.input_tokens:,} input tokens for a request of "
                    f"{last.tokens_after:,} counted ({ratio:.3g}x, outside {low}-{high}x): taken as the usage of "
                    "another request; the budget is left as it was",
                    RuntimeWarning, stacklevel=2,
                )
        return measured

    def _correct(self) -> None:
        """Fit later plans to the budget in counted tokens that the measured ratio keeps within the real one."""
        planner, budget = self.planner, self.planner.budget
        bound = self._ratio * (1 + OBSERVE_MARGIN)
        counter = planner.counter
        estimating = bool(counter.max_relative_error) or counter.estimating is True
        if self._ratio <= 1 and not estimating:  # an exact counter is tightened only when the provider counted more
            self._budget = budget
            return
        real = budget.context_window - budget.reserve_output  # the provider's limit, in its tokens
        limit = math.floor(real / bound)
        # The budget in counted tokens: the provider's limit over the measured ratio, which bounds the counter's error.
        self._budget = dataclasses.replace(budget, context_window=limit + budget.reserve_output, safety_margin=0)
