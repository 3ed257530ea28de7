"""Strategies that shrink a conversation to fit a budget: filter, truncate tool output, summarize, trim.

Each is a ``BaseStrategy`` built with its options, with a ``name`` and ``apply(messages, context) -> StepResult``
(the context is a ``StepContext``: the budget and the plan's ``Counts``; the result lists its ``Change`` records).
They are registered by name through the ``register_strategies`` hook so the planner and the CLI can name them.
``get_strategy(name, **options)`` builds one by name; ``docs/planner.md`` shows how to write one.
"""

from ctxwin.strategies.base import (
    BaseStrategy,
    Budget,
    Change,
    Counts,
    StepContext,
    StepResult,
    Strategy,
    Summarizer,
)
from ctxwin.strategies.filter import FilterMessages
from ctxwin.strategies.lookup import StrategyInfo, get_strategy, get_strategy_factory, list_strategies
from ctxwin.strategies.pins import is_pinned, pin
from ctxwin.strategies.salience import extractive_summarizer
from ctxwin.strategies.summarize import Summarize
from ctxwin.strategies.trim import TrimToBudget
from ctxwin.strategies.truncate import TruncateToolOutput

__all__ = [
    "BaseStrategy",
    "Budget",
    "Change",
    "Counts",
    "FilterMessages",
    "StepContext",
    "StepResult",
    "Strategy",
    "StrategyInfo",
    "Summarize",
    "Summarizer",
    "TrimToBudget",
    "TruncateToolOutput",
    "extractive_summarizer",
    "get_strategy",
    "get_strategy_factory",
    "is_pinned",
    "list_strategies",
    "pin",
]
