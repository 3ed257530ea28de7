"""Strategies that shrink a conversation to fit a budget: filter, truncate tool output, summarize, trim.

Each is a ``BaseStrategy`` built with its options, with a ``name`` and ``apply(messages, context) -> StepResult``
(the context is a ``StepContext``: the budget and the plan's ``Counts``; the result lists its ``Change`` records).
They are registered by name through the ``register_strategies`` hook so the planner and the CLI can name them.
``get_strategy(name, **options)`` builds one by name; ``docs/planner.md`` shows how to write one.

Importing this package imports none of its modules: each name is imported from its home module when first read
(PEP 562, as ``ctxwin`` does), so the plugins load ``builtin_plugin`` without the strategies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers read (``X as X``: re-exported); at run time, _HOMES below
    from ctxwin.strategies.base import BaseStrategy as BaseStrategy
    from ctxwin.strategies.base import Budget as Budget
    from ctxwin.strategies.base import Change as Change
    from ctxwin.strategies.base import Counts as Counts
    from ctxwin.strategies.base import StepContext as StepContext
    from ctxwin.strategies.base import StepResult as StepResult
    from ctxwin.strategies.base import Strategy as Strategy
    from ctxwin.strategies.base import Summarizer as Summarizer
    from ctxwin.strategies.filter import FilterMessages as FilterMessages
    from ctxwin.strategies.lookup import StrategyInfo as StrategyInfo
    from ctxwin.strategies.lookup import get_strategy as get_strategy
    from ctxwin.strategies.lookup import get_strategy_factory as get_strategy_factory
    from ctxwin.strategies.lookup import list_strategies as list_strategies
    from ctxwin.strategies.pins import is_pinned as is_pinned
    from ctxwin.strategies.pins import pin as pin
    from ctxwin.strategies.salience import extractive_summarizer as extractive_summarizer
    from ctxwin.strategies.summarize import Summarize as Summarize
    from ctxwin.strategies.trim import TrimToBudget as TrimToBudget
    from ctxwin.strategies.truncate import TruncateToolOutput as TruncateToolOutput

# Each public name's home module, where ``__getattr__`` imports it from.
_HOMES: dict[str, str] = {
    "BaseStrategy": "ctxwin.strategies.base",
    "Budget": "ctxwin.strategies.base",
    "Change": "ctxwin.strategies.base",
    "Counts": "ctxwin.strategies.base",
    "StepContext": "ctxwin.strategies.base",
    "StepResult": "ctxwin.strategies.base",
    "Strategy": "ctxwin.strategies.base",
    "Summarizer": "ctxwin.strategies.base",
    "FilterMessages": "ctxwin.strategies.filter",
    "StrategyInfo": "ctxwin.strategies.lookup",
    "get_strategy": "ctxwin.strategies.lookup",
    "get_strategy_factory": "ctxwin.strategies.lookup",
    "list_strategies": "ctxwin.strategies.lookup",
    "is_pinned": "ctxwin.strategies.pins",
    "pin": "ctxwin.strategies.pins",
    "extractive_summarizer": "ctxwin.strategies.salience",
    "Summarize": "ctxwin.strategies.summarize",
    "TrimToBudget": "ctxwin.strategies.trim",
    "TruncateToolOutput": "ctxwin.strategies.truncate",
}

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

if not TYPE_CHECKING:  # hidden from type checkers, which then still report a misspelt name

    def __getattr__(name: str) -> Any:
        """A public name, imported from its home module when first read (then kept here: this runs once a name)."""
        if name not in _HOMES:
            raise AttributeError(f"module 'ctxwin.strategies' has no attribute {name!r}")
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
