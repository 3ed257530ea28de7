"""``ctxwin bench --session``: replay conversations turn by turn through chat-loop policies (``sliding``,
``langchain``, ``refit``, ``session``) and bill every request, each checked and timed (docs/sessions.md).
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ctxwin._errors import InvalidInputError
from ctxwin.batch._conversation import Conversation
from ctxwin.batch._progress import Progress
from ctxwin.cli._bench.billing import Bill, Biller
from ctxwin.cli._bench.metrics import recent_turns_verbatim, tool_pairs_intact
from ctxwin.cli._bench.retention import Probe, probes_kept, stale_sent, told_kept
from ctxwin.cli._bench.runner import bench_planner
from ctxwin.counters._base import TokenCounter
from ctxwin.counters._caching import CachingRules
from ctxwin.messages import BaseMessage, HumanMessage, ToolMessage, convert_to_messages, convert_to_openai_messages
from ctxwin.planner import FitConfig, Planner
from ctxwin.strategies._meter import Meter
from ctxwin.trim import trim_messages

DEFAULT_SESSION_CHAINS = "sliding,refit,session"
POLICIES = ("sliding", "langchain", "refit", "session")


class Policy(Protocol):
    """What a chat loop does with its history: take the turn's messages, then give the request to send, and the
    lengths of the prefixes that request marks for the cache (none: its last message, the usual pattern)."""

    def add(self, messages: list[BaseMessage]) -> None: ...

    def request(self) -> list[BaseMessage]: ...

    def marks(self) -> tuple[int, ...]: ...


def request_points(messages: Sequence[BaseMessage]) -> list[int]:
    """Where a chat loop sends a request: the length of the history after each user message and after each run of
    tool results (the assistant's messages are the replies, appended before the next request)."""
    points = []
    for i, message in enumerate(messages):
        following = messages[i + 1] if i + 1 < len(messages) else None
        if isinstance(message, HumanMessage) or (isinstance(message, ToolMessage)
                                                  and not isinstance(following, ToolMessage)):
            points.append(i + 1)
    return points


class _Sliding:
    def __init__(self, planner: Planner) -> None:
        self.counter = planner.counter
        self.limit = planner.budget.messages_budget
        self.history: list[BaseMessage] = []

    def add(self, messages: list[BaseMessage]) -> None:
        self.history += messages

    def request(self) -> list[BaseMessage]:
        return trim_messages(self.history, max_tokens=self.limit, token_counter=self.counter, strategy="last",
                             include_system=True, start_on="human")

    def marks(self) -> tuple[int, ...]:
        return ()


class _LangChain(_Sliding):
    """langchain_core's ``trim_messages`` on LangChain messages; the kept ones are mapped back to the replay's."""

    def __init__(self, planner: Planner) -> None:
        super().__init__(planner)
        try:
            from langchain_core.messages import BaseMessage as LangChainMessage
            from langchain_core.messages import convert_to_messages as lc_convert
            from langchain_core.messages import trim_messages as lc_trim
        except ImportError as exc:
            raise InvalidInputError("the 'langchain' policy needs langchain-core: pip install langchain-core") from exc
        self._convert, self._trim = lc_convert, lc_trim
        # per-message counts leave out the request's reply priming: the budget is lowered by it, as a user would
        probe = HumanMessage("x")
        self.limit -= self.counter.count_messages([probe]) - self.counter.count_message(probe)
        self.lc_history: list[Any] = []
        self.originals: dict[int, BaseMessage] = {}
        counter = self.counter

        def count(message: Any) -> int:  # a per-message counter, as LangChain users write one
            return counter.count_message(convert_to_messages([message])[0])

        # langchain_core takes a callable annotated with its BaseMessage for a per-message counter
        count.__annotations__ = {"message": LangChainMessage, "return": int}
        self.count = count

    def add(self, messages: list[BaseMessage]) -> None:
        converted = self._convert(convert_to_openai_messages(messages))
        self.originals.update(zip(map(id, converted), messages, strict=True))
        self.lc_history += converted

    def request(self) -> list[BaseMessage]:
        kept = self._trim(self.lc_history, max_tokens=self.limit, token_counter=self.count, strategy="last",
                          include_system=True, start_on="human")
        return [self.originals.get(id(m)) or convert_to_messages([m])[0] for m in kept]


class _Session:
    def __init__(self, planner: Planner, **options: Any) -> None:
        self.session = planner.session(**options)

    def add(self, messages: list[BaseMessage]) -> None:
        self.session.add_messages(messages)

    def request(self) -> list[BaseMessage]:
        return list(self.session.plan().messages)

    def marks(self) -> tuple[int, ...]:
        return self.session.cache_prefixes


def make_policy(chain: str, planner: Planner) -> Policy:
    """The policy named ``chain`` for ``planner``'s budget; ValueError naming the valid ones."""
    name, _, option = chain.partition("@")
    if name == "session" and option:
        try:
            low_water = float(option)
        except ValueError:
            raise InvalidInputError(
                f"chain {chain!r}: the low-water mark after '@' must be a number, e.g. session@0.6"
            ) from None
        return _Session(planner, low_water=low_water)
    if option or name not in POLICIES:
        raise InvalidInputError(f"unknown session policy {chain!r}; valid: {', '.join(POLICIES)} (session@0.6: a "
                                f"low-water "
                                "mark)")
    if name == "sliding":
        return _Sliding(planner)
    if name == "langchain":
        return _LangChain(planner)
    return _Session(planner, cache_stable=name == "session")


def parse_session_chains(text: str) -> list[str]:
    """Comma-separated policy names, each checked (``session@0.6`` too); ValueError naming the bad one."""
    chains = [item.strip() for item in text.split(",")]
    if not all(chains):
        raise InvalidInputError(f"session policies {text!r} have an empty item; e.g. sliding,refit,session")
    repeated = sorted({c for c in chains if chains.count(c) > 1})
    if repeated:
        raise InvalidInputError(f"session policies {text!r} list {', '.join(repeated)} more than once")
    probe = Planner(counter="approximate", context_window=1000, reserve_output=0)
    for chain in chains:
        make_policy(chain, probe)
    return chains


@dataclass
class SessionResult:
    """One policy over the replayed conversations: every request's bill and checks, and the cost curves."""

    chain: str
    budget: int
    rules: CachingRules
    conversations: int = 0
    bills: list[Bill] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    verbatim: list[int] = field(default_factory=list)  # recent user turns sent verbatim, per request
    over_budget: int = 0
    broken_pairs: int = 0
    missing_last_user: int = 0
    curves: list[list[float]] = field(default_factory=list)  # per conversation: billed tokens so far, per request
    answered: list[bool] = field(default_factory=list)  # per probe: its strings all in the conversation's last request
    # typed probes: kind -> [kept in every request from where it was said on, total]; corrected values sent last
    told: dict[str, list[int]] = field(default_factory=dict)
    stale_sent: int = 0

    @property
    def requests(self) -> int:
        return len(self.bills)

    @property
    def hit_rate(self) -> float | None:
        return sum(b.hit for b in self.bills) / len(self.bills) if self.bills else None

    @property
    def billed_tokens(self) -> float:
        return sum(b.billed for b in self.bills)

    @property
    def cost(self) -> float | None:
        costs = [b.cost for b in self.bills]
        return None if not costs or None in costs else sum(c for c in costs if c is not None)

    @property
    def mean_tokens(self) -> float | None:
        return sum(b.tokens for b in self.bills) / len(self.bills) if self.bills else None

    @property
    def min_tokens(self) -> int | None:
        return min((b.tokens for b in self.bills), default=None)

    @property
    def recent_turns(self) -> float | None:
        return sum(self.verbatim) / len(self.verbatim) if self.verbatim else None

    @property
    def recall(self) -> float | None:
        """The share of the probes (late questions) whose strings are all in their conversation's last request."""
        return sum(self.answered) / len(self.answered) if self.answered else None

    @property
    def seconds_per_turn(self) -> float | None:
        return sum(self.seconds) / len(self.seconds) if self.seconds else None

    def as_json(self) -> dict[str, Any]:
        return {
            "strategy": self.chain,
            "budget": self.budget,
            "conversations": self.conversations,
            "requests": self.requests,
            "cache_hit_rate": self.hit_rate,
            "billed_input_tokens": self.billed_tokens,
            "estimated_cost_usd": self.cost,
            "mean_tokens_sent": self.mean_tokens,
            "min_tokens_sent": self.min_tokens,
            "recent_turns_verbatim": self.recent_turns,
            "seconds_per_turn": self.seconds_per_turn,
            "over_budget": self.over_budget,
            "broken_tool_pairs": self.broken_pairs,
            "missing_last_user_message": self.missing_last_user,
            "probes": len(self.answered),
            "recall": self.recall,
            "told_kept": {kind: kept / total for kind, (kept, total) in self.told.items()},
            "stale_sent": self.stale_sent,
        }

    @property
    def told_kept(self) -> float | None:
        """The least share of a kind of what the conversation told (typed probes) kept in every request (so across
        every cut) from where it was said on; None without typed probes."""
        return min((kept / total for kept, total in self.told.values()), default=None)


def replay(
    conversation: Sequence[BaseMessage],
    policy: Policy,
    biller: Biller,
    result: SessionResult,
    recount: Callable[[list[BaseMessage]], int],
    probes: Sequence[Probe] = (),
) -> None:
    """Replay one conversation through ``policy``, adding each request's figures to ``result``, and whether its
    last request answers each of ``probes`` (questions its last user message asks)."""
    messages = list(conversation)
    done, last_user, curve, total = 0, None, [], 0.0
    sent: list[BaseMessage] = []
    limit = result.budget
    typed = [p for p in probes if p.kind]
    held = [True] * len(typed)
    for end in request_points(messages):
        turn = messages[done:end]
        last_user = next((m for m in reversed(turn) if isinstance(m, HumanMessage)), last_user)
        start = time.perf_counter()
        policy.add(turn)
        sent = policy.request()
        result.seconds.append(time.perf_counter() - start)
        done = end
        bill = biller.bill(sent, recount(sent), policy.marks())
        result.bills.append(bill)
        total += bill.billed
        curve.append(total)
        original = messages[:end]
        result.verbatim.append(recent_turns_verbatim(original, sent))
        result.over_budget += bill.tokens > limit
        result.broken_pairs += not tool_pairs_intact(original, sent)
        result.missing_last_user += last_user is not None and not any(m is last_user or m == last_user for m in sent)
        if typed:
            said = [k for k, p in enumerate(typed) if held[k] and p.at < end]
            for k, kept in zip(said, probes_kept([typed[k] for k in said], sent), strict=True):
                held[k] = kept
    result.curves.append(curve)
    result.answered += probes_kept(probes, sent) if probes else []
    told_kept(typed, held, result.told)
    result.stale_sent += stale_sent(probes, sent)
    result.conversations += 1


def _recount(counter: TokenCounter, tools: Sequence[dict[str, Any]] | None) -> Callable[[list[BaseMessage]], int]:
    return lambda sent: counter.count_messages(sent, tools=tools)


def replay_policy(
    conversation: Sequence[BaseMessage],
    policy: Callable[[Planner], Policy],
    result: SessionResult,
    *,
    counter: TokenCounter,
    model: str | None = None,
    reserve_output: int = 0,
    tools: Sequence[dict[str, Any]] | None = None,
    probes: Sequence[Probe] = (),
    config: FitConfig | None = None,
) -> None:
    """``replay`` of one conversation through the policy ``policy`` makes for a planner of ``result``'s budget
    (``config``'s options with ``context_window=budget + reserve_output`` and a shallow copy of ``counter``),
    billed by ``result``'s rules and recounted by another copy."""
    planner = bench_planner(config, model, counter, window=result.budget + reserve_output, reserve=reserve_output,
                            tools=tools)
    planner.caching = result.rules  # sessions size their cuts by the prices they are billed at
    measuring = copy.copy(counter)
    biller = Biller(result.rules, Meter(measuring, tools), planner.budget.tools_tokens)
    replay(conversation, policy(planner), biller, result, _recount(measuring, tools), probes)


def run_session_bench(
    conversations: Sequence[Conversation],
    chains: Sequence[str],
    *,
    budget: int,
    counter: TokenCounter,
    rules: CachingRules,
    model: str | None = None,
    reserve_output: int = 0,
    tools: Sequence[dict[str, Any]] | None = None,
    progress: Progress | None = None,
    probes: dict[int | None, list[Probe]] | None = None,
    config: FitConfig | None = None,
) -> list[SessionResult]:
    """Replay every conversation through every policy at ``budget`` input tokens (``Planner(model,
    context_window=budget + reserve_output, reserve_output=...)``), billed by ``rules``; one result per chain.
    ``probes`` (``read_probes``: by conversation line, None for every conversation) are checked against each
    conversation's last request (``SessionResult.recall``).

    Each policy gets its own planner with its own shallow copy of the counter; the bench recounts with another. A
    conversation a planner rejects (ValueError/TypeError) is reported through ``progress`` and left out."""
    results = [SessionResult(chain, budget, rules) for chain in chains]
    for conversation in conversations:
        wanted = conversation.tools or tools
        asked = [*(probes or {}).get(conversation.line or 1, []), *(probes or {}).get(None, [])]
        try:
            for result in results:
                replay_policy(conversation.messages, functools.partial(make_policy, result.chain), result,
                              counter=counter, model=model, reserve_output=reserve_output, tools=wanted,
                              probes=asked, config=config)
        except (ValueError, TypeError) as exc:
            if progress is None:
                raise
            where = f"{conversation.source}{f':{conversation.line}' if conversation.line else ''}"
            progress.error(f"error: {where}: {exc}")
        if progress is not None:
            progress.step()
    return results
