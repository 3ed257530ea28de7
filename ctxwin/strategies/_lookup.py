"""Looking up the strategies that plugins register, by the names the planner and the CLI accept."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin._plugins import Registrations, unknown_name
from ctxwin.strategies._base import Strategy


@dataclass(frozen=True)
class StrategyInfo:
    """A registered strategy factory and the plugin that registered it."""

    name: str
    factory: Callable[..., Any]
    plugin: str


def _strategy_info(plugin: str, name: str, factory: Callable[..., Any]) -> tuple[Iterable[str], StrategyInfo]:
    """Validates ``register(name, factory)`` from a ``register_strategies`` hook."""
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"strategy name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise InvalidTypeError(f"strategy {name!r}: factory must be callable, got {type(factory).__name__}")
    return (name,), StrategyInfo(name, factory, plugin)


_STRATEGIES = Registrations("register_strategies", _strategy_info, "strategy")


def get_strategy_factory(name: str) -> Callable[..., Any]:
    """The factory a plugin registered for a strategy name; ValueError with close matches if unknown."""
    strategies = _STRATEGIES.by_name()
    info = strategies.get(name)
    if info is None:
        raise unknown_name("strategy", name, strategies, "`ctxwin strategies` lists")
    return info.factory


def get_strategy(name: str, **options: Any) -> Strategy:
    """A new strategy: the factory registered for ``name`` called with ``options`` (TypeError naming a bad one)."""
    factory = get_strategy_factory(name)
    try:
        strategy: Strategy = factory(**options)
    except TypeError as exc:
        raise InvalidTypeError(f"strategy {name!r}: {exc}") from exc
    return strategy


def list_strategies() -> list[StrategyInfo]:
    return sorted(_STRATEGIES.by_name().values(), key=lambda info: info.name)
