"""The planner's chain of strategies: what ``strategies=`` names, built into ``BaseStrategy`` objects once.

A name is looked up in the registry (``register_strategies`` hook) and built with no options: a step reads the
planner's options from its ``StepContext``. An object that is a ``BaseStrategy`` is used as it is; any other object
with a ``name`` and an ``apply(messages, context)`` is adapted here, once, as is the old three-parameter
``apply(messages, budget, meter)`` (with a DeprecationWarning), so that the planner calls every step the same way.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Sequence
from typing import Any

from ctxwin.messages import BaseMessage
from ctxwin.strategies import get_strategy
from ctxwin.strategies.base import BaseStrategy, Keeps, StepContext, StepKeeps, StepResult, Strategy
from ctxwin.strategies.filter import FilterMessages
from ctxwin.strategies.summarize import Summarize
from ctxwin.strategies.trim import TrimToBudget
from ctxwin.strategies.truncate import TruncateToolOutput


def default_chain(summarize: bool) -> list[BaseStrategy]:
    """``filter``, ``truncate_tool_output``, ``summarize`` (with a planner summarizer or keep_last), ``trim``."""
    return [FilterMessages(), TruncateToolOutput(), *([Summarize()] if summarize else []), TrimToBudget()]


def build_chain(strategies: Sequence[Strategy | str] | str | None) -> list[BaseStrategy] | None:
    """``strategies`` as strategy objects (None when not given: the planner's default chain); one name alone is a
    chain of one (``"trim"``, not the letters of it). ValueError/TypeError naming ``strategies[i]`` at fault."""
    if strategies is None:
        return None
    if isinstance(strategies, str):
        strategies = [strategies]
    try:
        items = list(strategies)
    except TypeError:
        raise TypeError(
            f"strategies must be a strategy name or a list of names and Strategy objects, got {strategies!r}"
        ) from None
    return [as_strategy(item, f"strategies[{i}]") for i, item in enumerate(items)]


def as_strategy(item: object, where: str) -> BaseStrategy:
    """``item`` (a registered name, a BaseStrategy, or an object of the ``Strategy`` shape) as a BaseStrategy."""
    if isinstance(item, str):
        try:
            item = get_strategy(item)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    if isinstance(item, BaseStrategy):
        return item
    name = getattr(item, "name", None)
    apply = getattr(item, "apply", None)
    if not isinstance(name, str) or not callable(apply):
        raise TypeError(
            f"{where} must be a registered name or a strategy (a BaseStrategy, or an object with a name and "
            f"apply(messages, context)), got {item!r}"
        )
    return Adapted(item, name, _legacy(apply, where))


def _legacy(apply: Any, where: str) -> bool:
    """Whether ``apply`` takes the old ``(messages, budget, meter)``; TypeError when it takes neither form."""
    try:
        parameters = [
            p for p in inspect.signature(apply).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
    except (TypeError, ValueError):  # no signature to read: take it for the current form
        return False
    if len(parameters) == 3:
        warnings.warn(
            f"{where}: apply(messages, budget, meter) is deprecated; take apply(messages, context) and read "
            "context.budget and context.meter (see docs/planner.md, 'Writing a strategy')",
            DeprecationWarning,
            stacklevel=_outside_ctxwin(),
        )
        return True
    if len(parameters) != 2:
        raise TypeError(f"{where}: apply must take (messages, context), got apply{inspect.signature(apply)}")
    return False


def _outside_ctxwin() -> int:
    """The ``stacklevel`` of the first caller outside ctxwin (``fit``, ``Planner``, ``fit_many`` ... call here), so
    a warning points at the user's line."""
    frame, level = inspect.currentframe(), 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("ctxwin."):
        frame, level = frame.f_back, level + 1
    return level - 1


class Adapted(BaseStrategy):
    """A strategy object that is not a BaseStrategy, called as one; its ``keeps`` and ``aapply``, when it has them,
    are read here once."""

    def __init__(self, inner: Any, name: str, legacy: bool) -> None:
        self.inner = inner
        self.name = name
        self._legacy = legacy
        keeps = getattr(inner, "keeps", None)
        self._keeps: StepKeeps = keeps if keeps in ("last", "first", "all") else None
        aapply = getattr(inner, "aapply", None)
        self._aapply = aapply if callable(aapply) else None

    @property
    def keeps(self) -> StepKeeps:
        return self._keeps

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        if self._legacy:
            return self._checked(self.inner.apply(messages, context.budget, context.meter))
        return self._checked(self.inner.apply(messages, context))

    async def aapply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        if self._aapply is None:
            return self.apply(messages, context)
        if self._legacy:
            return self._checked(await self._aapply(messages, context.budget, context.meter))
        return self._checked(await self._aapply(messages, context))

    def _checked(self, result: object) -> StepResult:
        if not isinstance(result, StepResult):
            raise TypeError(f"strategy {self.name!r}: apply must return a StepResult, got {type(result).__name__}")
        return result


def later_keeps(chain: Sequence[BaseStrategy]) -> list[Keeps | None]:
    """For each step, which end of the conversation the first later step that drops by position keeps ("last",
    "first"), passing over the steps that keep "all"; None if no later step says."""
    out: list[Keeps | None] = []
    keeps: Keeps | None = None
    for strategy in reversed(chain):
        out.append(keeps)
        if strategy.keeps != "all":
            keeps = strategy.keeps
    return out[::-1]
