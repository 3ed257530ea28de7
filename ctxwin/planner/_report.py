"""What a plan reports: the fitted conversation (``Plan``), what each step did (``StepReport``), the token figures
counted when first read (``Figures``), the messages a step touched named when first read (``Touched``, ``Labels``),
and the error ``strict`` raises (``BudgetExceeded``).

The report is lazy: a chat loop that only sends ``plan.messages`` never pays for naming or counting what was dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic

from typing_extensions import TypeVar

from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.messages._anthropic_cache import mark_cache_breakpoints
from ctxwin.messages._openai_cache import mark_prompt_cache
from ctxwin.messages._request_body import nonstreaming_limit, request_body
from ctxwin.recall._inject import Recalled
from ctxwin.strategies._base import Budget, Change, ChangeKind, StepResult
from ctxwin.strategies._ledger_block import LedgerReport


class Labels:
    """How reports name messages: the id, else ``#i`` (the position in the input); a copy a step made (a shortened
    message, a ``Change``'s ``copy``) is named like the input message it replaced. Positions are looked up only
    when a message without an id is named."""

    def __init__(self, inputs: list[BaseMessage]) -> None:
        self._inputs = inputs
        self._positions: dict[int, int] | None = None
        self._copies: dict[int, BaseMessage] = {}  # id(copy) -> the message it replaced
        self._held: list[list[Change]] = []  # the copies, so that no id is reused

    def name(self, message: BaseMessage) -> str:
        original = self._copies.get(id(message))
        if original is not None:
            return self.name(original)
        if message.id:
            return message.id
        if self._positions is None:
            self._positions = {id(m): i for i, m in enumerate(self._inputs)}
        position = self._positions.get(id(message))
        return f"#{position}" if position is not None else "?"

    def names(self, messages: list[BaseMessage]) -> list[str]:
        if self._copies:
            return [self.name(m) for m in messages]
        return [m.id or self.name(m) for m in messages]  # most messages: their id, read once

    def copies_of(self, result: StepResult) -> None:
        """Name the copies a step made like the messages they replaced."""
        copied = [change for change in result.changes if change.copies is not None]
        if copied:
            self._held.append(copied)
            for change in copied:
                assert change.copies is not None  # as filtered
                self._copies.update(zip(map(id, change.copies), change.messages, strict=True))


class BudgetExceeded(ValueError):
    """``strict=True`` and what must be kept does not fit; the figures are attributes and in the message."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.tokens = plan.tokens_after
        self.limit = plan.budget.max_input_tokens
        super().__init__(
            f"conversation needs {plan.tokens_after} tokens but the budget allows {plan.budget.max_input_tokens} "
            f"(context window {plan.budget.context_window} - reserved output {plan.budget.reserve_output} - "
            f"safety margin {plan.budget.safety_margin}; tool definitions use {plan.budget.tools_tokens}); "
            + "; ".join(plan.warnings)
        )


class Figures:
    """The request tokens of each message list a plan went through (the input, then the list after each step),
    each counted when first read and then remembered; a pickled or copied plan carries them all, counted."""

    def __init__(self, count: Callable[[list[BaseMessage]], int], lists: list[list[BaseMessage]]) -> None:
        self._count: Callable[[list[BaseMessage]], int] | None = count
        self._lists = lists
        self._values: dict[int, int] = {}

    def __getitem__(self, index: int) -> int:
        value = self._values.get(index)
        if value is None:
            assert self._count is not None  # only a pickled copy lacks it, and it has every value
            value = self._values[index] = self._count(self._lists[index])
        return value

    def __len__(self) -> int:
        return len(self._lists) if self._count is not None else len(self._values)

    def counted(self, index: int) -> int | None:
        """The figure if it was already counted, else None (what a trace reports without counting more)."""
        return self._values.get(index)

    def known(self, index: int, value: int) -> None:
        self._values[index] = value

    def __getstate__(self) -> dict[str, Any]:
        return {"_count": None, "_lists": [], "_values": {i: self[i] for i in range(len(self))}}


class Touched:
    """The messages one step dropped, shortened and summarised (its ``StepResult.changes``), named (id or
    ``#index``) when first read: a step that drops thousands of messages spends nothing on their names unless the
    report is read."""

    KINDS: tuple[ChangeKind, ChangeKind, ChangeKind] = ("dropped", "truncated", "summarized")  # not "replaced"

    def __init__(self, labels: Labels, result: StepResult) -> None:
        self._labels: Labels | None = labels
        self._result: StepResult | None = result
        self._ids: tuple[list[str], list[str], list[str]] | None = None

    @property
    def ids(self) -> tuple[list[str], list[str], list[str]]:
        if self._ids is None:
            assert self._labels is not None and self._result is not None  # a pickled copy has the ids
            dropped, truncated, summarized = (self._labels.names(self._result.touched(k)) for k in self.KINDS)
            self._ids = (dropped, truncated, summarized)
        return self._ids

    @property
    def counts(self) -> tuple[int, int, int]:
        """How many messages were dropped, shortened and summarised, without naming them."""
        if self._ids is not None:
            dropped, truncated, summarized = map(len, self._ids)
        else:
            assert self._result is not None
            changes = self._result.changes
            dropped, truncated, summarized = (
                sum(len(c.messages) for c in changes if c.kind == kind) for kind in self.KINDS
            )
        return dropped, truncated, summarized

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Touched) and self.ids == other.ids

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:
        return {"_labels": None, "_result": None, "_ids": self.ids}


@dataclass(frozen=True)
class StepReport:
    """What one strategy did: request tokens before and after, and the messages it touched (id or ``#index``)."""

    name: str
    notes: list[str] = field(default_factory=list)
    skipped: bool = False
    touched: Touched = field(kw_only=True, repr=False)
    figures: Figures = field(kw_only=True, repr=False, compare=False)
    index: int = field(kw_only=True, repr=False, compare=False)  # this step's input list in ``figures``

    @property
    def dropped_ids(self) -> list[str]:
        return self.touched.ids[0]

    @property
    def truncated_ids(self) -> list[str]:
        return self.touched.ids[1]

    @property
    def summarized_ids(self) -> list[str]:
        return self.touched.ids[2]

    @property
    def tokens_before(self) -> int:
        return self.figures[self.index]

    @property
    def tokens_after(self) -> int:
        return self.figures[self.index + 1]

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data, token figures included."""
        return {
            "name": self.name,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "dropped_ids": list(self.dropped_ids),
            "truncated_ids": list(self.truncated_ids),
            "summarized_ids": list(self.summarized_ids),
            "notes": list(self.notes),
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class CacheReport:
    """What a session's plan shares with the request before it, and what that is estimated to cost.

    ``shared_tokens``: the request's prefix identical to the previous request's (tool definitions and leading
    messages), by the planner's counter; ``cached_tokens`` the part the provider's rules read from the cache (none
    below its minimum prefix, then in its steps), ``written_tokens`` the part written at the cache-write price
    (explicit caching), ``cost`` the estimated input cost in USD when the model's prices are known. ``cut``: this
    request re-planned the conversation (down to the low-water mark) instead of appending to the previous one.
    After ``PlanSession.observe`` the figures are the provider's (``measured``)."""

    shared_tokens: int
    cached_tokens: int
    written_tokens: int
    cost: float | None
    cut: bool
    measured: bool = False


M = TypeVar("M", default=Any)  # what Plan.messages holds: see Planner's ``output``


@dataclass
class Plan(Generic[M]):
    """The fitted conversation and how it was fitted.

    ``messages`` are in the planner's ``output`` form (``output`` says which); for ``output="anthropic"`` the leading
    system messages are ``system``, the request's top-level system (None when there is none, and for the other
    forms, whose system messages stay in ``messages``). ``request`` holds both as keyword arguments for the SDK call.

    Token figures are for the whole request (messages and tool definitions) as the planner's counter counts it;
    ``fits`` means ``tokens_after <= budget.max_input_tokens``. Message labels in the step reports are message
    ids, or ``#i`` (the position in the input) for messages without one. ``tokens_before`` and the steps' figures
    are counted when first read (see the module docstring).
    """

    messages: list[M]
    fits: bool
    budget: Budget
    tokens_after: int
    steps: list[StepReport]
    warnings: list[str]
    counter: str
    model: str | None = None
    system_tokens: int = 0  # of the leading system messages (summary included), for budget displays
    # Counting from the newest, the input's user turns (a user message and what follows it up to the next one) that
    # end the fitted conversation verbatim, stopping at the first that does not.
    recent_turns_verbatim: int = 0
    figures: Figures = field(kw_only=True, repr=False, compare=False)
    system: Any = field(default=None, kw_only=True)
    output: str = field(default="messages", kw_only=True)
    tools: list[dict[str, Any]] | None = field(default=None, kw_only=True)  # OpenAI function tools, as counted
    tool_choice: Any = field(default=None, kw_only=True)
    # A session's plans: what is shared with the previous request (None for a one-off plan).
    cache: CacheReport | None = field(default=None, kw_only=True)
    # With cache_control: the message indexes ``request`` marks (Anthropic: tools and system are marked too; OpenAI:
    # an empty tuple still sends explicit mode, so nothing is written), the lifetime asked for (None: the
    # provider's default) and the session's prompt_cache_key (OpenAI).
    cache_breakpoints: tuple[int, ...] | None = field(default=None, kw_only=True)
    cache_ttl: str | None = field(default=None, kw_only=True)
    cache_key: str | None = field(default=None, kw_only=True)
    # What query-aware recall brought back into the request (the ``recall`` step), for which query; None when
    # nothing was (nothing left out, or nothing left out relates to the newest user message).
    recalled: Recalled | None = field(default=None, kw_only=True)
    # What the conversation told (``ctxwin.strategies._ledger_block``): every entry in force with its source, and
    # what the request carries in its ledger block; None when the ledger is off or the plan left nothing out.
    ledger: LedgerReport | None = field(default=None, kw_only=True)

    @property
    def request(self) -> dict[str, Any]:
        """The whole request body, for ``client.chat.completions.create(model=..., **plan.request)`` (``"openai"``),
        ``client.responses.create`` (``"responses"``) or ``client.messages.create`` (``"anthropic"``): the
        messages (``input``), the system (Anthropic) or instructions (Responses, when the input had them), the
        tools in the provider's form with ``tool_choice``, and the reply limit (``max_completion_tokens`` /
        ``max_output_tokens`` / ``max_tokens``) from ``budget.reserve_output`` (see
        ``ctxwin.messages._request_body``). For ``"messages"``: ``{"messages": ...}``. With ``cache_control``, its
        cache breakpoints: Anthropic's ``cache_control`` (``ctxwin.messages._anthropic_cache``), OpenAI's
        ``prompt_cache_breakpoint`` with ``prompt_cache_options`` (``ctxwin.messages._openai_cache``); a session's
        ``prompt_cache_key``."""
        body = request_body(
            self.output, self.messages, system=self.system, tools=self.tools, tool_choice=self.tool_choice,
            max_output_tokens=self.reply_limit,
        )
        if self.output == "anthropic":
            if self.cache_breakpoints is not None and self.messages:
                return mark_cache_breakpoints(body, self.cache_breakpoints, ttl=self.cache_ttl)
        elif self.output in ("openai", "responses") and (self.cache_breakpoints is not None or self.cache_key):
            marks = self.cache_breakpoints if self.messages else None
            return mark_prompt_cache(body, marks, ttl=self.cache_ttl, key=self.cache_key)
        return body

    @property
    def reply_limit(self) -> int:
        """The request's reply limit: ``budget.reserve_output``; with none reserved, Anthropic's required
        ``max_tokens`` is the room the request leaves in the input budget (at least 1, and at most what Anthropic's
        SDK sends without streaming), and the other APIs' is left out (0)."""
        reserve = self.budget.reserve_output
        if reserve or self.output != "anthropic":
            return reserve
        room = max(1, self.budget.max_input_tokens - self.tokens_after)
        return min(room, nonstreaming_limit(self.output, self.model) or room)

    @property
    def tokens_before(self) -> int:
        return self.figures[0]

    @property
    def budget_used(self) -> float:
        """``tokens_after / budget.max_input_tokens``: the share of the input budget the request uses (over 1 only
        when it does not fit). Low while the input was over budget means a step removed more than it had to."""
        limit = self.budget.max_input_tokens
        return self.tokens_after / limit if limit else float(self.tokens_after > 0)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready digest (for JSONL outputs and dataset jobs)."""
        return {
            "fits": self.fits,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "budget": self.budget.max_input_tokens,
            "budget_used": round(self.budget_used, 4),
            "recent_turns_verbatim": self.recent_turns_verbatim,
            "dropped": sum(len(s.dropped_ids) for s in self.steps),
            "truncated": sum(len(s.truncated_ids) for s in self.steps),
            "summarized": sum(len(s.summarized_ids) for s in self.steps),
            "recalled": self.recalled.labels if self.recalled else [],
            "ledger": self.ledger.as_dict() if self.ledger else None,
            "warnings": list(self.warnings),
        }


def verbatim_turns(inputs: list[BaseMessage], fitted: list[BaseMessage]) -> int:
    """How many of the input's user turns, newest first, end ``fitted`` as the same objects (so verbatim), stopping
    at the first that does not; walks only the kept tail."""
    turns = 0
    for original, kept in zip(reversed(inputs), reversed(fitted), strict=False):
        if original is not kept:
            break
        turns += isinstance(original, HumanMessage)
    return turns
