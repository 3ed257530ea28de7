"""Strategies that shrink a conversation to fit a budget: filter, truncate tool output, summarize, trim.

Each is a small class with a ``name`` and ``apply(messages, budget, meter) -> StepResult``; they are registered by
name through the ``register_strategies`` hook (``ctxwin.strategies.builtin_plugin``) so the planner and the CLI can
name them; ``get_strategy(name, **options)`` builds one by name.
"""

from ctxwin.strategies.base import Budget, StepResult, Strategy, is_pinned, pin
from ctxwin.strategies.extractive import extractive_summarizer
from ctxwin.strategies.filter import FilterMessages
from ctxwin.strategies.lookup import StrategyInfo, get_strategy, get_strategy_factory, list_strategies
from ctxwin.strategies.summarize import Summarize, Summarizer
from ctxwin.strategies.trim import TrimToBudget
from ctxwin.strategies.truncate import TruncateToolOutput

__all__ = [
    "Budget",
    "FilterMessages",
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
