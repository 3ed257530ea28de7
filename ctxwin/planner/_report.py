"""What a plan reports (``Plan``, ``StepReport``, ``BudgetExceeded``), lazily: a chat loop that only sends
``plan.messages`` never pays for naming or counting what was dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic

from typing_extensions import TypeVar

from ctxwin._errors import InvalidInputError
from ctxwin._plural import plural
from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.messages._request_forms.registry import get_form
from ctxwin.recall._inject import Recalled, is_recalled
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


class BudgetExceeded(InvalidInputError):
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

    ``messages`` are in the planner's ``output`` form (``output`` says which); ``system`` is the system prompt a
    form holds apart (Anthropic's top-level system, Responses' instructions; None when there is none, and where the
    system messages stay in ``messages``). ``request`` holds both as keyword arguments for the SDK call.

    Token figures are for the whole request (messages and tool definitions) as the planner's counter counts it;
    ``fits`` means ``tokens_after <= budget.max_input_tokens``. Message labels in the step reports are message
    ids, or ``#i`` (the position in the input) for messages without one. ``tokens_before`` and the steps' figures
    are counted when first read: a chat loop that only sends ``plan.messages`` never pays for them.
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
    request_model: str | None = field(default=None, kw_only=True)  # the ``model`` of ``request``
    # The given request's options its form sends as given (``context_management``: the provider's context editing
    # and compaction), in ``request``; None when it held none. Counts are of the request before the provider edits.
    request_options: dict[str, Any] | None = field(default=None, kw_only=True)
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
    # The counter estimates the provider's count (no public tokenizer, or an approximate counter): every figure is
    # an estimate, which the report says.
    estimated: bool = field(default=False, kw_only=True)
    # A session's plans: its history, against which ``left_out`` counts what the request does not carry.
    history: HistoryReport | None = field(default=None, kw_only=True, repr=False, compare=False)

    def __str__(self) -> str:
        return self.report()

    def report(self) -> str:
        """The plan in a few lines, as ``ctxwin fit`` prints it: the verdict with the tokens before and after and the
        budget, the steps that changed something, what was left out and recalled, the cache (a session's plan) and
        the warnings (``SECTIONS``)."""
        return "\n".join(line for section in SECTIONS for line in section(self))

    @property
    def left_out(self) -> int:
        """How many messages of the conversation the request does not carry verbatim: dropped, summarised or
        shortened by this plan's steps, or for a session's plan, of its whole history (by this request's cut or an
        earlier one)."""
        if self.history is not None:
            return self.history.left_out
        dropped, truncated, summarized = touched_names(self.steps)
        return len(dropped | truncated | summarized)

    @property
    def request(self) -> dict[str, Any]:
        """The whole request body, for ``client.chat.completions.create(**plan.request)`` (``"openai"``),
        ``client.responses.create(**plan.request)`` (``"responses"``) or ``client.messages.create(**plan.request)``
        (``"anthropic"``): the ``model`` (``request_model``, else the model's name), the messages (``input``), the
        system (Anthropic) or instructions (Responses, when the input had them), the tools in the provider's form
        with ``tool_choice``, and the reply limit (``max_completion_tokens`` / ``max_output_tokens`` /
        ``max_tokens``) from ``budget.reserve_output`` (the output's ``RequestForm``). For ``"messages"``:
        ``{"messages": ...}``. With ``cache_control``, its cache breakpoints: Anthropic's ``cache_control``
        (``ctxwin.messages.mark_cache_breakpoints``), OpenAI's ``prompt_cache_breakpoint`` with
        ``prompt_cache_options`` (``ctxwin.messages.mark_prompt_cache``); a session's ``prompt_cache_key``; the given
        request's ``context_management`` (Responses, Anthropic), ``compaction`` and ``betas`` (Anthropic's, for
        ``client.beta.messages.create``) as given (``request_options``)."""
        form = get_form(self.output)
        body = form.body(
            self.messages, model=self.request_model, system=self.system, tools=self.tools,
            tool_choice=self.tool_choice, max_output_tokens=self.reply_limit, options=self.request_options,
        )
        return form.mark_cache(body, self.cache_breakpoints, ttl=self.cache_ttl, key=self.cache_key)

    @property
    def reply_limit(self) -> int:
        """The request's reply limit: ``budget.reserve_output``; with none reserved, a form that requires one
        (Anthropic's ``max_tokens``) gets the room the request leaves in the input budget (at least 1, and at most
        what the SDK sends without streaming), the others none (0)."""
        reserve = self.budget.reserve_output
        form = get_form(self.output)
        if reserve or not form.requires_limit:
            return reserve
        room = max(1, self.budget.max_input_tokens - self.tokens_after)
        return min(room, form.nonstreaming_limit(self.model) or room)

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
            "left_out": self.left_out,
            "recalled": self.recalled.labels if self.recalled else [],
            "estimated": self.estimated,
            "ledger": self.ledger.as_dict() if self.ledger else None,
            "warnings": list(self.warnings),
        }


def touched_names(steps: list[StepReport]) -> tuple[set[str], set[str], set[str]]:
    """The messages the steps dropped, shortened (and did not drop) and summarised, each named once: a message a
    step shortened and a later one dropped is dropped."""
    dropped = {name for step in steps for name in step.dropped_ids}
    summarized = {name for step in steps for name in step.summarized_ids} - dropped
    truncated = {name for step in steps for name in step.truncated_ids} - dropped - summarized
    return dropped, truncated, summarized


class HistoryReport:
    """A session's history beside the request a plan sends: how many of its messages the request does not carry
    verbatim, counted when first read (a chat loop that only sends the request never pays for it)."""

    def __init__(self, messages: list[BaseMessage], sent: list[BaseMessage]) -> None:
        self.messages = len(messages)
        self._lists: tuple[list[BaseMessage], list[BaseMessage]] | None = (messages, sent)
        self._left_out: int | None = None

    @property
    def left_out(self) -> int:
        if self._left_out is None:
            assert self._lists is not None  # a pickled copy has the count
            messages, sent = self._lists
            carried = set(map(id, sent))
            self._left_out = sum(id(m) not in carried for m in messages)
            self._lists = None
        return self._left_out

    def __getstate__(self) -> dict[str, Any]:
        return {"messages": self.messages, "_lists": None, "_left_out": self.left_out}


def verbatim_turns(inputs: list[BaseMessage], fitted: list[BaseMessage]) -> int:
    """How many of the input's user turns, newest first, end ``fitted`` as the same objects (so verbatim), stopping
    at the first that does not; walks only the kept tail."""
    turns = 0
    sent = (m for m in reversed(fitted) if not is_recalled(m))  # a session's recall between cuts sits in the turn
    for original, kept in zip(reversed(inputs), sent, strict=False):
        if original is not kept:
            break
        turns += isinstance(original, HumanMessage)
    return turns


# The report as text (``Plan.report``): one section a function, each giving its lines (none when it has nothing to
# say), in the order ``SECTIONS`` lists; a new part of the report is one function and its place there.
_QUERY_SHOWN = 60  # characters of a recall query shown
_ENTRY_SHOWN = 80  # characters of a ledger entry shown
_ENTRIES_SHOWN = 10  # ledger entries shown per kind, the newest


def _verdict(plan: Plan) -> list[str]:
    verdict = "fits" if plan.fits else "DOES NOT FIT"
    estimate = ", estimated" if plan.estimated else ""
    line = (f"{verdict}: {plan.tokens_before:,} -> {plan.tokens_after:,} tokens{estimate}, "
            f"{100 * plan.budget_used:.0f}% of an input budget of {plan.budget.max_input_tokens:,}")
    lines = [f"{line} ({plan.model or 'no model'}, counter {plan.counter})"]
    if plan.estimated:
        margin = plan.budget.safety_margin
        lines.append(f"the figures are estimates: counter {plan.counter} estimates the provider's count"
                     + (f"; a safety margin of {margin:,} tokens allows for its error" if margin else ""))
    return lines


def _budget(plan: Plan) -> list[str]:
    budget = plan.budget
    parts = [f"context window {budget.context_window:,} - reply {budget.reserve_output:,}"]
    if budget.safety_margin:
        parts.append(f"safety margin {budget.safety_margin:,}")
    held = [f"{what} {tokens:,}" for what, tokens in (("tools", budget.tools_tokens),
                                                       ("system prompt", plan.system_tokens)) if tokens]
    return [f"budget: {' - '.join(parts)}" + (f"; of the input, {', '.join(held)}" if held else "")]


def _steps(plan: Plan) -> list[str]:
    done = []
    for step in plan.steps:
        if step.skipped:
            done.append(f"{step.name} skipped")
        elif step.tokens_before != step.tokens_after or any(step.touched.counts):
            done.append(f"{step.name} {step.tokens_before:,} -> {step.tokens_after:,}")
    return [f"steps: {', '.join(done)}"] if done else []


def _left_out(plan: Plan) -> list[str]:
    turns = f"{plural(plan.recent_turns_verbatim, 'recent turn')} verbatim"
    if plan.history is not None:
        history = plan.history
        if not history.left_out:
            return [f"kept the whole history ({plural(history.messages, 'message')}), {turns}"]
        return [f"left out of the history: {history.left_out:,} of {plural(history.messages, 'message')} (dropped, "
                f"summarised or shortened by this request's cut or an earlier one); {turns}"]
    dropped, truncated, summarized = touched_names(plan.steps)
    if not (dropped or truncated or summarized):
        return [f"kept every message, {turns}"]
    return [f"dropped {len(dropped):,}, shortened {len(truncated):,}, summarised {len(summarized):,} "
            f"{'message' if len(dropped | truncated | summarized) == 1 else 'messages'}; {turns}"]


def _recalled(plan: Plan) -> list[str]:
    recalled = plan.recalled
    if recalled is None:
        return []
    query = " ".join(recalled.query.split())
    query = query if len(query) <= _QUERY_SHOWN else query[: _QUERY_SHOWN - 1] + "…"
    return [f"recalled {plural(len(recalled.excerpts), 'excerpt')} ({recalled.tokens:,} tokens) from "
            f"{', '.join(recalled.labels)} for {query!r}"]


def _ledger(plan: Plan) -> list[str]:
    ledger = plan.ledger
    if ledger is None or not ledger.entries:
        return []
    carried, left = set(map(id, ledger.carried)), set(map(id, ledger.left_out))
    lines = [f"ledger: {plural(len(ledger.entries), 'entry', 'entries')} in force, {len(carried):,} carried in its "
             f"block ({ledger.tokens:,} tokens)" + (f", {len(left):,} left to recall" if left else "")
             + (f", {len(ledger.superseded):,} superseded" if ledger.superseded else "")]
    for kind, entries in ledger.by_kind().items():
        for entry in entries[-_ENTRIES_SHOWN:]:
            text = " ".join(entry.text.split())
            text = text if len(text) <= _ENTRY_SHOWN else text[: _ENTRY_SHOWN - 1] + "…"
            where = ("carried" if id(entry) in carried else "left to recall" if id(entry) in left
                     else "said in the request")
            lines.append(f"  {kind} from {entry.source} ({where}): {text}")
        if len(entries) > _ENTRIES_SHOWN:
            lines.append(f"  … and {plural(len(entries) - _ENTRIES_SHOWN, f'older {kind}')} (Plan.ledger lists all)")
    return lines


def _cache(plan: Plan) -> list[str]:
    cache = plan.cache
    if cache is None:
        return []
    how = "measured" if cache.measured else "estimated"
    cost = f", input cost ${cache.cost:,.4f}" if cache.cost is not None else ""
    return [f"session: {'a cut' if cache.cut else 'appended'}; {cache.shared_tokens:,} tokens shared with the "
            f"previous request, {cache.cached_tokens:,} read from the cache, {cache.written_tokens:,} written "
            f"({how}{cost})"]


def _warnings(plan: Plan) -> list[str]:
    return [f"warning: {w}" for w in plan.warnings]


SECTIONS: tuple[Callable[[Plan], list[str]], ...] = (
    _verdict, _budget, _steps, _left_out, _ledger, _recalled, _cache, _warnings,
)
