"""Running chains x budgets over conversations: time each plan, recount the result, aggregate the metrics; each run gets
its own counter copy and an untimed first plan so none profits from another (docs/bench.md, "Fairness").
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxwin.batch._conversation import Conversation
from ctxwin.batch._progress import Progress
from ctxwin.cli._bench.chains import Chain
from ctxwin.cli._bench.metrics import Kept, measure
from ctxwin.cli._bench.retention import Facts, Probe, Retained, retained, told_kept
from ctxwin.counters import get_model
from ctxwin.counters._base import TokenCounter
from ctxwin.planner import FitConfig, Plan, Planner
from ctxwin.strategies._base import Strategy


@dataclass
class BenchResult:
    """One chain at one budget, over every conversation that could be planned.

    Fractions are over the conversations that have something to measure (user turns, a system prompt), None if none.
    """

    strategy: str
    budget: int
    conversations: int = 0
    seconds: float = 0.0  # total planning time
    tokens_used: int = 0  # the largest recounted request
    tokens_total: int = 0  # the recounted requests summed, for the mean
    over_budget: int = 0  # conversations whose recounted request is over the budget
    over_budget_unflagged: int = 0  # ... of which the plan said it fits: a ctxwin bug
    intact_conversations: int = 0  # conversations with every tool pair intact
    messages_summarized: int = 0
    recent_turns: list[float] = field(default_factory=list)  # per conversation with user turns
    budget_shares: list[float] = field(default_factory=list)  # tokens used / budget, per conversation over budget
    systems_kept: list[bool] = field(default_factory=list)  # per conversation with a system prompt
    first_warning: str | None = None  # the planner's warning for the first conversation over budget
    facts_shares: list[float] = field(default_factory=list)  # weighted share of facts kept, per conversation with some
    user_facts_shares: list[float] = field(default_factory=list)  # ... of the user's facts
    probes: int = 0
    probes_answerable: int = 0  # probes whose strings are all in the fitted request
    told: dict[str, list[int]] = field(default_factory=dict)  # typed probes: kind -> [kept, total]
    stale_sent: int = 0  # typed probes with a corrected value in the fitted request

    def add(self, seconds: float, tokens: int, plan: Plan, kept: Kept, input_tokens: int, retained: Retained) -> None:
        self.conversations += 1
        if retained.facts.share is not None:
            self.facts_shares.append(retained.facts.share)
        if retained.facts.user_share is not None:
            self.user_facts_shares.append(retained.facts.user_share)
        self.probes += len(retained.probes)
        self.probes_answerable += sum(retained.probes)
        self.stale_sent += retained.stale
        if input_tokens > self.budget:
            self.budget_shares.append(tokens / self.budget)
        self.seconds += seconds
        self.tokens_used = max(self.tokens_used, tokens)
        self.tokens_total += tokens
        if tokens > self.budget:
            self.over_budget += 1
            self.over_budget_unflagged += int(plan.fits)
            if self.first_warning is None and plan.warnings:
                self.first_warning = plan.warnings[-1]
        self.intact_conversations += int(kept.tool_pairs_intact)
        self.messages_summarized += kept.summarized
        if kept.recent_turns is not None:
            self.recent_turns.append(kept.recent_turns)
        if kept.system_kept is not None:
            self.systems_kept.append(kept.system_kept)

    @property
    def seconds_per_conversation(self) -> float | None:
        """The mean: total planning time over the number of conversations."""
        return self.seconds / self.conversations if self.conversations else None

    @property
    def mean_tokens_used(self) -> float | None:
        return self.tokens_total / self.conversations if self.conversations else None

    @property
    def recent_turns_kept(self) -> float | None:
        return _mean(self.recent_turns)

    @property
    def facts_kept(self) -> float | None:
        """The mean over the conversations of the weighted share of their facts kept (see ``retention``)."""
        return _mean(self.facts_shares)

    @property
    def user_facts_kept(self) -> float | None:
        return _mean(self.user_facts_shares)

    @property
    def probes_kept(self) -> float | None:
        """The share of all probes whose strings are all in the fitted request; None without probes."""
        return self.probes_answerable / self.probes if self.probes else None

    @property
    def told_kept(self) -> float | None:
        """The least share kept of a kind of what the conversation told (typed probes); None without them."""
        return min((kept / total for kept, total in self.told.values()), default=None)

    @property
    def budget_used(self) -> float | None:
        """The mean share of the budget the fitted requests use, over the conversations whose input was over it:
        low means the chain removed more than it had to (a plan that fits can always use the budget it has)."""
        return _mean(self.budget_shares)

    @property
    def budget_used_min(self) -> float | None:
        """The least share of the budget used by a conversation whose input was over it."""
        return min(self.budget_shares, default=None)

    @property
    def tool_pairs_intact(self) -> float | None:
        return self.intact_conversations / self.conversations if self.conversations else None

    @property
    def system_kept(self) -> float | None:
        return _mean(self.systems_kept)

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` row."""
        return {
            "strategy": self.strategy,
            "budget": self.budget,
            "conversations": self.conversations,
            "seconds_per_conversation": self.seconds_per_conversation,
            "tokens_used": self.tokens_used,
            "budget_used": self.budget_used,
            "budget_used_min": self.budget_used_min,
            "recent_turns_kept": self.recent_turns_kept,
            "facts_kept": self.facts_kept,
            "user_facts_kept": self.user_facts_kept,
            "probes": self.probes,
            "probes_kept": self.probes_kept,
            "told_kept": {kind: kept / total for kind, (kept, total) in self.told.items()},
            "stale_sent": self.stale_sent,
            "tool_pairs_intact": self.tool_pairs_intact,
            "system_kept": self.system_kept,
            "messages_summarized": self.messages_summarized,
            "mean_tokens_used": self.mean_tokens_used,
            "over_budget": self.over_budget,
            "over_budget_unflagged": self.over_budget_unflagged,
        }


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass
class _Run:
    result: BenchResult
    planner: Planner


def _for_conversation(planner: Planner, conversation: Conversation) -> Planner:
    """The planner, with the conversation's own tool definitions when it carries them (as ``ctxwin fit``)."""
    return planner.with_tools(conversation.tools) if conversation.tools else planner


def bench_planner(
    config: FitConfig | None, model: str | None, counter: TokenCounter, *, window: int, reserve: int, tools: Any,
    strategies: Sequence[Strategy] | None = None,
) -> Planner:
    """A planner of ``config``'s options (the defaults without one) for a window of ``window`` tokens, on its own
    shallow copy of ``counter``; for the model when the window is within the model's (a bench's budget may be
    larger: then its counter alone)."""
    if model is not None and window > get_model(model).context_window:
        model = None
    return Planner(config=FitConfig.of(
        config, model=model, strategies=strategies, context_window=window, reserve_output=reserve, tools=tools,
        counter=copy.copy(counter),
    ))


def _planner(chain: Chain, budget: int, model: str | None, counter: TokenCounter, tools: Any,
             config: FitConfig | None) -> Planner:
    # reserve 0: the budget is the input budget
    return bench_planner(config, model, counter, window=budget, reserve=0, tools=tools, strategies=chain.strategies())


def run_bench(
    conversations: Sequence[Conversation],
    chains: Sequence[Chain],
    budgets: Sequence[int],
    *,
    counter: TokenCounter,
    model: str | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    progress: Progress,
    probes: Mapping[int | None, Sequence[Probe]] | None = None,
    config: FitConfig | None = None,
) -> list[BenchResult]:
    """Plan every conversation with every chain at every budget; results grouped by budget, chains in order.
    ``config``: the planners' other options (a summarizer, keep_last, recall_share...).

    ``probes`` (``retention.read_probes``) are checked against the fitted requests of the conversation on their line
    (key None: every conversation).

    A conversation the planner rejects (``ValueError``/``TypeError``, e.g. malformed tool definitions) is reported
    through ``progress`` and left out of every row, so all rows measure the same conversations; ``progress`` steps
    once per conversation.
    """
    runs = [
        _Run(BenchResult(chain.name, budget), _planner(chain, budget, model, counter, tools, config))
        for budget in budgets
        for chain in chains
    ]
    for chain in chains if conversations else ():  # the untimed warm-up, with planners of its own
        warm = _for_conversation(_planner(chain, budgets[0], model, counter, tools, config), conversations[0])
        with contextlib.suppress(ValueError, TypeError):  # the timed loop reports a conversation's errors
            warm.plan(conversations[0].messages)
    for conversation in conversations:
        try:
            asked = [*(probes or {}).get(None, ()), *(probes or {}).get(conversation.line or 1, ())]
            _plan_all(runs, conversation, counter, asked)
        except (ValueError, TypeError) as exc:
            where = f"{conversation.source}{f':{conversation.line}' if conversation.line else ''}"
            progress.error(f"error: {where}: {exc}")
        progress.step()
    return [run.result for run in runs]


def _plan_all(runs: Sequence[_Run], conversation: Conversation, counter: TokenCounter, probes: Sequence[Probe]) -> None:
    """Plan one conversation with every run; results are added only once all of them succeeded.

    Runs often return the very same list (a conversation under budget comes back unchanged; ``fit`` and
    ``truncate-tools+trim`` usually agree), so a recount is remembered by the identities of the fitted messages
    (every run sends the same tool definitions with one conversation).
    """
    outcomes: list[tuple[float, int, Plan, Kept, int, Retained]] = []
    facts = Facts.of(conversation.messages)
    recounts: dict[tuple[int, ...], int] = {}
    tools = _for_conversation(runs[0].planner, conversation).tools if runs else None
    input_tokens = counter.count_messages(conversation.messages, tools=tools)  # every run sends the same tools
    for run in runs:
        planner = _for_conversation(run.planner, conversation)
        start = time.perf_counter()
        plan = planner.plan(conversation.messages)
        seconds = time.perf_counter() - start
        key = tuple(map(id, plan.messages))  # the plans in ``outcomes`` keep these objects alive
        if key not in recounts:
            recounts[key] = counter.count_messages(plan.messages, tools=planner.tools)
        kept = measure(conversation.messages, plan.messages)
        outcomes.append((seconds, recounts[key], plan, kept, input_tokens, retained(facts, probes, plan.messages)))
    for run, outcome in zip(runs, outcomes, strict=True):
        run.result.add(*outcome)
        told_kept(probes, outcome[5].probes, run.result.told)
