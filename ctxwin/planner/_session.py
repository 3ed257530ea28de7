"""``PlanSession``: a growing conversation planned turn by turn, keeping the provider's prompt cache; its cuts, cache
marks and recall are ``CutPolicy``'s, ``CachePolicy``'s and ``SessionRecall``'s. docs/sessions.md is the guide.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Mapping
from typing import Any, Generic

from typing_extensions import Unpack

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.messages import BaseMessage, RemoveMessage
from ctxwin.messages._convert import is_langchain_message, is_request
from ctxwin.messages._forms import CallerForms, OpenAIDicts
from ctxwin.planner._cache_marks import TtlChoice
from ctxwin.planner._cache_policy import CachePolicy
from ctxwin.planner._config import SESSION_OPTIONS, FitOptions
from ctxwin.planner._cut_policy import CutPolicy
from ctxwin.planner._driving import adrive, drive
from ctxwin.planner._planning import Planned, Planning, SessionTurn
from ctxwin.planner._report import HistoryReport, M, Plan, verbatim_turns
from ctxwin.planner._usage import Usage, cleared_tokens
from ctxwin.recall._inject import MAX_EXCERPTS, MIN_SCORE, Recalled
from ctxwin.recall._session import SessionRecall
from ctxwin.recall._store import Excerpt, RecallStore
from ctxwin.recall._tool import RecallTool
from ctxwin.strategies._ledger import Ledger
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._pins import pinned_indexes

# A planner run a session's planning asks for: the messages, the caller's forms, and what the session asks of it.
_Run = tuple[list[BaseMessage], CallerForms | None, SessionTurn]


class PlanSession(Generic[M]):
    """A conversation that grows by appended messages, planned after each turn by one ``Planner``: what a chat
    product keeps beside its history. ``add_messages`` the turn's messages, then ``plan()``.

    Its options (``config``) are the planner's ``config`` with those given here instead: ``cache_stable``,
    ``low_water``, ``tool_output_cap``, ``keep_first``, ``head_fill`` (how and when it cuts), ``cache_control``,
    ``expected_gap``, ``cache_ttl``, ``cache_key`` (how it marks the cache); ``FitConfig`` documents them and
    docs/sessions.md says how they work together. ``cache_stable=False`` plans each request with ``Planner.plan``
    of every message added so far. ``history``: a chat history (``ctxwin.history``) it starts from and appends to.

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
            raise InvalidTypeError(f"{others[0]!r} is an option of the planner, not of a session: give it to the "
                                   f"Planner; "
                                   f"a session takes {', '.join(sorted(SESSION_OPTIONS))}")
        self.config = config = planner.config.replace(**options)
        self.planner = planner
        self._meter = Meter(planner.counter, planner.form.tools_as_sent(planner.tools))
        self._cache = CachePolicy(planner, config, self._meter)
        self._cut = CutPolicy(planner, config, self._cache, self._meter)
        self._messages: list[BaseMessage] = []
        self._view: list[BaseMessage] = []  # what plans are made of: the messages, new tool outputs capped
        self._pinned: list[int] = []
        # The caller's objects (LangChain messages; OpenAI dicts for chat completions), while every turn gave that
        # one form: plans give them back (docs/interop.md). A turn in another form makes the session a mix.
        self._forms: CallerForms | None = None
        self._mixed = False
        self._sent: list[BaseMessage] | None = None  # the ctxwin messages of the last request
        self._covered = 0  # how many of the added messages the last request stands for
        self._sent_out = 0  # how many messages (in the output form) the last request had
        self._last: Plan[M] | None = None
        self._last_sent: list[BaseMessage] | None = None  # the ctxwin messages of the last plan's request
        self._recall = SessionRecall(self._messages, self._view)
        self._ledger = Ledger()
        self.history = history
        if history is not None:
            if not callable(getattr(history, "add_messages", None)) or not hasattr(history, "messages"):
                raise InvalidTypeError(f"history must be a chat history (with messages and add_messages, as "
                                       f"ctxwin.history's are), got {type(history).__name__}")
            stored = list(history.messages)
            if stored:
                self._add(stored)

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
        return list(self._cut.head)

    @property
    def max_input_tokens(self) -> int:
        """The input budget plans fit, in the counter's tokens (``observe`` corrects it for an estimating counter)."""
        return self._cache.budget.max_input_tokens

    @property
    def agent_run(self) -> bool:
        """Whether most of the recent requests were tool rounds, not user messages: an agent run, whose new tool
        outputs are capped (``tool_output_cap``)."""
        return self._cut.agent_run

    @property
    def turn_length(self) -> float:
        """How long the recent user turns are against the input budget, from 0 (chats) to 1 (long turns, or an agent
        left to work): ``CutPolicy.turn_length``."""
        return self._cut.turn_length

    @property
    def cut_low_water(self) -> float:
        """The low-water mark the next cut plans down to (``low_water``, or chosen by ``turn_length``)."""
        return self._cut.low_water

    @property
    def ttl(self) -> TtlChoice:
        """The cache lifetime the next request's writes ask for (``ctxwin.planner._cache_marks``)."""
        return self._cache.ttl

    @property
    def cache_prefixes(self) -> tuple[int, ...]:
        """The prefixes (message counts of the last request) it marks for the cache (or would, with
        ``cache_control``): what a biller reads as written."""
        return self._cache.prefixes

    @property
    def recall_store(self) -> RecallStore:
        """The store of what the session's requests left out, indexed as it leaves (docs/recall.md)."""
        return self._recall.store

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
        items, forms = self.planner.form.read(messages)
        removal = next((m for m in items if isinstance(m, RemoveMessage)), None)
        if removal is not None:
            raise InvalidInputError(
                f"PlanSession.add_messages: RemoveMessage(id={removal.id!r}) removes a message, and a session only "
                "appends (its requests keep their prefix for the cache): apply the removal to the history "
                "(ctxwin.history's add_messages reducer) and plan it with a new session or Planner.plan"
            )
        self._messages += items
        self._view += self._cut.arrived(items)
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
        return self._recall.recall(query, limit=limit, min_score=min_score)

    def recalled_message(self, handle: str) -> list[Excerpt]:
        """The whole of one message of the history, in excerpts: ``handle`` is a tool call id (its result), a
        message id or ``#position`` (what a masked tool output names)."""
        return self._recall.recalled_message(handle)

    @property
    def recall_tool(self) -> RecallTool:
        """A search tool over what this session's requests left out, for an agent (OpenAI, Anthropic and LangChain
        forms, and the handler that answers a call: ``ctxwin.recall._tool``)."""
        return self._recall.tool

    def _caller_forms(self) -> CallerForms | None:
        return None if self._mixed else self._forms

    def _candidate(self) -> tuple[list[BaseMessage], bool]:
        """What the next request starts from, and whether it is the last request plus what was appended."""
        if not self.config.cache_stable or self._sent is None:
            return list(self._view), False
        return self._sent + self._view[self._covered :], True

    def _turn(self, target: int | None = None, *, whole: bool = False, recall: bool = True,
              recalled: Recalled | None = None) -> SessionTurn:
        """What a planner run is asked: ``target``, the head, the pins of the messages when they are every message
        added so far (``whole``: the session knows them from what was appended), where recall searches (the
        session's store at a cut, nothing between cuts; with ``cache_stable=False`` what it plans, as
        ``Planner.plan`` does) and what the session recalled itself."""
        source: SessionRecall | bool = (self._recall if self.config.cache_stable else True) if recall else False
        pinned = list(self._pinned) if whole else None
        told = self.ledger if recall else False  # (between cuts the block stays as sent)
        return SessionTurn(target, self._cut.head, pinned, source, recalled, told)

    def _tokens(self, messages: list[BaseMessage]) -> int:
        """The request tokens of ``messages`` (with the tools), from the cached counts when the counter adds up."""
        if messages and self._meter.overhead is not None:
            return self._meter.total(messages) + self._cache.budget.tools_tokens
        return self._meter.exact(messages)

    def plan(self) -> Plan[M]:
        """The plan for the next request: the last request plus what was appended when that fits, else a cut
        (``CutPolicy``); with ``cache_stable=False``, ``Planner.plan`` of every message added so far."""
        return drive(self._planning(), self._run)

    async def aplan(self) -> Plan[M]:
        """``plan`` for async code (see ``Planner.aplan``)."""
        return await adrive(self._planning(), self._arun)

    def _planning(self) -> Generator[_Run, Planned[M], Plan[M]]:
        """``plan``, once for sync and async (``driving``): yields each planner run it needs, is sent what it
        planned. Between cuts the request appends (with a late recall when the new user message relates to what
        was left out); a cut is the cut policy's runs."""
        self._cache.note_plan()
        candidate, appended = self._candidate()
        forms = self._caller_forms()
        if not self.config.cache_stable:
            return self._finish((yield candidate, forms, self._turn(whole=True)), cut=True)
        late = None
        if appended and self._cut.appended_fits(candidate):
            late = self._recall.between_cuts(candidate, self._view[self._covered :], self.config.recall_share,
                                             self.max_input_tokens, self._tokens, self._meter.count)
        if late is not None:  # what was sent stays, the recall of the last cut too; a late one is appended
            return self._finish((yield late[0], forms, self._turn(recall=False, recalled=late[1])), cut=False)
        planned = yield from self._cut.cut(
            candidate, appended, self._view, self._sent or [],
            lambda messages, target, whole: (messages, forms, self._turn(target, whole=whole)),
        )
        return self._finish(planned, cut=True)

    def _run(self, run: _Run) -> Planned[M]:
        """The planner's run on ``messages`` with this session's meter and budget."""
        messages, forms, turn = run
        return self.planner.plan_run(messages, self._meter, forms, budget=self._cache.budget, turn=turn)

    async def _arun(self, run: _Run) -> Planned[M]:
        messages, forms, turn = run
        return await self.planner.aplan_run(messages, self._meter, forms, budget=self._cache.budget, turn=turn)

    def _finish(self, planned: Planned[M], *, cut: bool) -> Plan[M]:
        """The session's plan: the planner's, with what it shares with the previous request and the cache marks (a
        new ``Plan``: the planner's is final as returned); then remember its request as the previous one."""
        plan, sent = planned.plan, planned.sent
        if self._sent is not None:  # what this request added (the first one's history is no turn's growth)
            self._cut.note(self._view[self._covered :])
        cache = self._cache.plan_fields(plan, sent, self._sent, self._sent_out, self._cut.head, cut)
        plan = dataclasses.replace(plan, recent_turns_verbatim=verbatim_turns(self._messages, sent),
                                   history=HistoryReport(self._messages[:], sent), **cache)
        # A request that appended and had to repair a tool pair among what it appended (a call whose results came
        # after a user message) is not the base of the next one: the next request appends to the previous base
        # again, so the results, once they come, are sent with their call.
        if cut or not planned.repaired_pairs:
            self._sent, self._covered, self._sent_out = sent, len(self._messages), len(plan.messages)
            self._recall.note_request(sent)
        self._last, self._last_sent = plan, sent
        if self._meter.held > self._RETAIN_FACTOR * len(self._messages) + self._RETAIN_SLACK:
            self._meter.retain([*self._view, *sent])  # forget the counts of copies no longer sent
        return plan

    def observe(self, usage: Any, *, context_management: Any = None) -> Usage:
        """Take the provider's reported usage of the last planned request (an OpenAI, Anthropic or Gemini usage
        object or dict, or a LangChain ``usage_metadata``): the last plan's ``cache`` figures become the measured
        ones (the cost as billed: reads, writes and the lifetime written), and the budget later plans fit is
        corrected by the measured ratio of the provider's input tokens to the counted ones (the largest seen, plus
        ``OBSERVE_MARGIN``): an estimating counter's over-count gives room back, an under-count (of any counter)
        takes it. A ratio outside ``PLAUSIBLE_RATIOS`` (a usage of another request) is reported by a
        RuntimeWarning and corrects nothing. A request holding a provider's compaction item not measured before
        counts that item by this usage instead (an opaque item's size says little of its tokens): from then on it
        counts the provider's input tokens less the rest of the request. ``context_management``: the reply's
        (Anthropic's context editing), whose cleared input tokens are added back, since ctxwin counted the request
        before the provider edited it. ValueError before any plan, or for usage it cannot read."""
        return self._cache.observe(usage, self._last, self._last_sent, cleared_tokens(context_management))
