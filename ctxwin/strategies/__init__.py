"""Strategies that shrink a conversation to fit a budget, each a ``BaseStrategy`` registered by name
(``register_strategies``) so the planner and the CLI can name it; docs/planner.md shows how to write one.
Names are imported from their home modules when first read (PEP 562), so the plugins load without the strategies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers read (``X as X``: re-exported); at run time, _HOMES below
    from ctxwin.strategies._base import BaseStrategy as BaseStrategy
    from ctxwin.strategies._base import Budget as Budget
    from ctxwin.strategies._base import Change as Change
    from ctxwin.strategies._base import Counts as Counts
    from ctxwin.strategies._base import StepContext as StepContext
    from ctxwin.strategies._base import StepResult as StepResult
    from ctxwin.strategies._base import Strategy as Strategy
    from ctxwin.strategies._base import Summarizer as Summarizer
    from ctxwin.strategies._filter import FilterMessages as FilterMessages
    from ctxwin.strategies._ledger import Ledger as Ledger
    from ctxwin.strategies._ledger import LedgerEntry as LedgerEntry
    from ctxwin.strategies._ledger_block import LedgerReport as LedgerReport
    from ctxwin.strategies._lookup import StrategyInfo as StrategyInfo
    from ctxwin.strategies._lookup import get_strategy as get_strategy
    from ctxwin.strategies._lookup import get_strategy_factory as get_strategy_factory
    from ctxwin.strategies._lookup import list_strategies as list_strategies
    from ctxwin.strategies._pins import is_pinned as is_pinned
    from ctxwin.strategies._pins import pin as pin
    from ctxwin.strategies._provider_compaction import ProviderCompaction as ProviderCompaction
    from ctxwin.strategies._salience import extractive_summarizer as extractive_summarizer
    from ctxwin.strategies._summarize import Summarize as Summarize
    from ctxwin.strategies._trim import TrimToBudget as TrimToBudget
    from ctxwin.strategies._truncate import TruncateToolOutput as TruncateToolOutput

# Each public name's home module, where ``__getattr__`` imports it from.
_HOMES: dict[str, str] = {
    "BaseStrategy": "ctxwin.strategies._base",
    "Budget": "ctxwin.strategies._base",
    "Change": "ctxwin.strategies._base",
    "Counts": "ctxwin.strategies._base",
    "StepContext": "ctxwin.strategies._base",
    "StepResult": "ctxwin.strategies._base",
    "Strategy": "ctxwin.strategies._base",
    "Summarizer": "ctxwin.strategies._base",
    "FilterMessages": "ctxwin.strategies._filter",
    "Ledger": "ctxwin.strategies._ledger",
    "LedgerEntry": "ctxwin.strategies._ledger",
    "LedgerReport": "ctxwin.strategies._ledger_block",
    "StrategyInfo": "ctxwin.strategies._lookup",
    "get_strategy": "ctxwin.strategies._lookup",
    "get_strategy_factory": "ctxwin.strategies._lookup",
    "list_strategies": "ctxwin.strategies._lookup",
    "is_pinned": "ctxwin.strategies._pins",
    "pin": "ctxwin.strategies._pins",
    "ProviderCompaction": "ctxwin.strategies._provider_compaction",
    "extractive_summarizer": "ctxwin.strategies._salience",
    "Summarize": "ctxwin.strategies._summarize",
    "TrimToBudget": "ctxwin.strategies._trim",
    "TruncateToolOutput": "ctxwin.strategies._truncate",
}

__all__ = [
    "BaseStrategy",
    "Budget",
    "Change",
    "Counts",
    "FilterMessages",
    "Ledger",
    "LedgerEntry",
    "LedgerReport",
    "ProviderCompaction",
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
