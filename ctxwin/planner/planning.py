"""``Planning``: what a ``PlanSession`` needs of its planner (``Planner`` has it), so that the session's module does
not import the planner's, which builds sessions."""

from __future__ import annotations

from typing import Any, Protocol

from ctxwin.counters.base import TokenCounter
from ctxwin.counters.caching import CachingRules
from ctxwin.messages import BaseMessage
from ctxwin.messages.forms import CallerForms, Output
from ctxwin.planner.config import FitConfig
from ctxwin.planner.report import M, Plan
from ctxwin.recall.inject import RecallSource
from ctxwin.strategies.base import BaseStrategy, Budget
from ctxwin.strategies.meter import Meter


class Planning(Protocol[M]):
    """A planner as a session uses it: its configuration (the session's options start from it), its budget,
    counter, tools, output form, the model's caching rules, its strategies, and ``plan_run`` (a plan with the
    session's meter and budget, and the messages it sends)."""

    config: FitConfig
    budget: Budget
    counter: TokenCounter
    tools: list[dict[str, Any]] | None
    output: Output
    caching: CachingRules | None
    model: str | None
    strategies: list[BaseStrategy]

    def plan_run(
        self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None, *,
        budget: Budget | None = None, target: int | None = None, recall: RecallSource | bool = True,
    ) -> tuple[Plan[M], list[BaseMessage]]: ...

    async def aplan_run(
        self, messages: list[BaseMessage], meter: Meter, forms: CallerForms | None = None, *,
        budget: Budget | None = None, target: int | None = None, recall: RecallSource | bool = True,
    ) -> tuple[Plan[M], list[BaseMessage]]: ...
