"""The planner's chain of strategies: what ``strategies=`` names, built once; any object with a ``name`` and an
``apply`` is adapted here so that the planner calls every step the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.messages import BaseMessage
from ctxwin.strategies import get_strategy
from ctxwin.strategies._base import BaseStrategy, Keeps, StepContext, StepKeeps, StepResult, Strategy, Summarizer
from ctxwin.strategies._compacted import DropCompacted
from ctxwin.strategies._filter import FilterMessages
from ctxwin.strategies._reasoning import ClearReasoning
from ctxwin.strategies._summarize import Summarize
from ctxwin.strategies._trim import TrimToBudget
from ctxwin.strategies._truncate import TruncateToolOutput


def default_chain(summarizer: Summarizer | None, keep_last: int | None) -> list[BaseStrategy]:
    """``drop_compacted`` (what a provider's compaction block stands for: the provider drops it too),
    ``clear_reasoning``, ``filter``, ``truncate_tool_output``, ``summarize`` (with a summarizer or keep_last, built
    with them), ``trim``."""
    summarize = summarizer is not None or keep_last is not None
    return [
        DropCompacted(),
        ClearReasoning(),
        FilterMessages(),
        TruncateToolOutput(),
        *([Summarize(summarizer=summarizer, keep_last_messages=keep_last)] if summarize else []),
        TrimToBudget(),
    ]


def build_chain(
    strategies: Sequence[Strategy | str] | str | None,
    summarizer: Summarizer | None = None,
    keep_last: int | None = None,
) -> list[BaseStrategy] | None:
    """``strategies`` as strategy objects (None when not given: the planner's default chain), a ``Summarize`` with
    ``summarizer`` and ``keep_last`` where it has none of its own; one name alone is a chain of one (``"trim"``,
    not the letters of it). ValueError/TypeError naming ``strategies[i]`` at fault."""
    if strategies is None:
        return None
    if isinstance(strategies, str):
        strategies = [strategies]
    try:
        items = list(strategies)
    except TypeError:
        raise InvalidTypeError(
            f"strategies must be a strategy name or a list of names and Strategy objects, got {strategies!r}"
        ) from None
    chain = [as_strategy(item, f"strategies[{i}]") for i, item in enumerate(items)]
    return [s.with_defaults(summarizer, keep_last) if isinstance(s, Summarize) else s for s in chain]


def as_strategy(item: object, where: str) -> BaseStrategy:
    """``item`` (a registered name, a BaseStrategy, or an object of the ``Strategy`` shape) as a BaseStrategy."""
    if isinstance(item, str):
        try:
            item = get_strategy(item)
        except ValueError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None
    if isinstance(item, BaseStrategy):
        return item
    name = getattr(item, "name", None)
    apply = getattr(item, "apply", None)
    if not isinstance(name, str) or not callable(apply):
        raise InvalidTypeError(
            f"{where} must be a registered name or a strategy (a BaseStrategy, or an object with a name and "
            f"apply(messages, context)), got {item!r}"
        )
    _check_apply(apply, where)
    return Adapted(item, name)


def _check_apply(apply: Any, where: str) -> None:
    """TypeError unless ``apply`` takes ``(messages, context)`` (an apply without a readable signature passes)."""
    try:
        signature = inspect.signature(apply)
    except (TypeError, ValueError):
        return
    required = [
        p for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if len(required) != 2:
        raise InvalidTypeError(f"{where}: apply must take (messages, context), got apply{signature}")


class Adapted(BaseStrategy):
    """A strategy object that is not a BaseStrategy, called as one; its ``keeps`` and ``aapply``, when it has them,
    are read here once."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner = inner
        self.name = name
        keeps = getattr(inner, "keeps", None)
        self._keeps: StepKeeps = keeps if keeps in ("last", "first", "all") else None
        aapply = getattr(inner, "aapply", None)
        self._aapply = aapply if callable(aapply) else None

    @property
    def keeps(self) -> StepKeeps:
        return self._keeps

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        return self._checked(self.inner.apply(messages, context))

    async def aapply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        if self._aapply is None:
            return self.apply(messages, context)
        return self._checked(await self._aapply(messages, context))

    def _checked(self, result: object) -> StepResult:
        if not isinstance(result, StepResult):
            raise InvalidTypeError(f"strategy {self.name!r}: apply must return a StepResult, got "
                                   f"{type(result).__name__}")
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
