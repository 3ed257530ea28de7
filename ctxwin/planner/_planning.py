"""``Planning``: what a ``PlanSession`` needs of its planner, so that the session's module does not import the
planner's; ``SessionTurn``, what a session asks of one planner run; ``Planned``, what a run gives back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol

from ctxwin.counters._base import TokenCounter
from ctxwin.counters._caching import CachingRules
from ctxwin.messages import BaseMessage
from ctxwin.messages._forms import CallerForms, Output
from ctxwin.messages._request_forms.form import RequestForm
from ctxwin.planner._config import FitConfig
from ctxwin.planner._report import M, Plan
from ctxwin.recall._inject import Recalled, RecallSource
from ctxwin.strategies._base import Budget
from ctxwin.strategies._ledger import Ledger
from ctxwin.strategies._meter import Meter


@dataclass(frozen=True)
class SessionTurn:
    """What a session asks of one planner run, beside the messages (``Planner.plan_run``). ``target``: the steps
    fit the messages to that many input tokens when fewer (a cut to the low-water mark); ``fits`` still means the
    budget. ``head``: the fixed head every cut keeps right after the system messages, counted as pinned (a summary
    goes after it). ``pinned``: the pinned indexes of the messages when the session knows them (what it appended),
    so no step scans the history for pins. ``recall``: where query-aware recall searches (a session's store,
    nothing, or, True, the messages planned). ``recalled``: what the session itself recalled into the messages,
    which the plan reports. ``ledger``: what the conversation told (a session's ledger, read up to its newest
    message; True: read from the messages planned; False: the request keeps the block it has)."""

    target: int | None = None
    head: tuple[BaseMessage, ...] = ()
    pinned: list[int] | None = None
    recall: RecallSource | bool = True
    recalled: Recalled | None = None
    ledger: Ledger | bool = True


ONE_OFF = SessionTurn()  # a plan outside a session: to the budget, no head, recall over what it plans


@dataclass(frozen=True)
class Planned(Generic[M]):
    """A planner run's result: the plan, the ctxwin messages it sends (``plan.messages`` before conversion to the
    output's form), and whether a broken tool pair had to be repaired in them (a call whose results had not come,
    or results without their call)."""

    plan: Plan[M]
    sent: list[BaseMessage]
    repaired_pairs: bool


class Planning(Protocol[M]):
    """A planner as a session uses it: its configuration (the session's options start from it), its budget,
    counter, tools, output form, the model's caching rules, whether its chain summarizes and whether it shortens tool
    outputs, ``plan_run`` (a plan with the session's meter, budget and turn), and the two facts of its steps a
    session asks: which messages are the summaries it writes, and each new tool output shortened to a cap (on
    arrival, once)."""

    config: FitConfig
    budget: Budget
    counter: TokenCounter
    tools: list[dict[str, Any]] | None
    output: Output
    form: RequestForm
    caching: CachingRules | None
    model: str | None

    @property
    def summarizes(self) -> bool: ...

    @property
    def truncates(self) -> bool: ...

    def is_summary(self, message: BaseMessage) -> bool: ...

    def cap_tool_outputs(self, messages: Sequence[BaseMessage], max_tokens: int, meter: Meter) -> list[BaseMessage]: ...

    def plan_run(
        self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None, *,
        budget: Budget | None = None, turn: SessionTurn = ...,
    ) -> Planned[M]: ...

    async def aplan_run(
        self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None, *,
        budget: Budget | None = None, turn: SessionTurn = ...,
    ) -> Planned[M]: ...
