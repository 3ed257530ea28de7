"""Named strategy chains for ``ctxwin bench``: ``+``-joined steps run in order by one planner; ``fit`` is the planner's
default chain (docs/bench.md, "Chains").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ctxwin._errors import InvalidInputError
from ctxwin.strategies import get_strategy, list_strategies
from ctxwin.strategies._base import Strategy
from ctxwin.strategies._trim import TrimToBudget
from ctxwin.strategies._truncate import TruncateToolOutput

FIT = "fit"
DEFAULT_CHAINS = "last,first,summarize+trim,truncate-tools+trim,fit"

# The bench's names that are not registered strategy names; each builds a fresh strategy (the step report names
# the trim variant by its chain name). ``summarize`` is the registered one, whose default summarizer is the offline
# extractive one.
_ALIASES: dict[str, Callable[[], Strategy]] = {
    "last": lambda: TrimToBudget(name="last", strategy="last"),
    "first": lambda: TrimToBudget(name="first", strategy="first"),
    "truncate-tools": TruncateToolOutput,
}


def step_names() -> list[str]:
    """Every name a chain step may use."""
    registered = [info.name for info in list_strategies()]
    return [*_ALIASES, FIT, *(name for name in registered if name not in _ALIASES)]


@dataclass(frozen=True)
class Chain:
    """A named chain of steps, e.g. ``Chain("summarize+trim", ("summarize", "trim"))``."""

    name: str
    steps: tuple[str, ...]

    def strategies(self) -> list[Strategy] | None:
        """Fresh strategy objects for one planner; None for ``fit`` (the planner then uses its default chain)."""
        if self.steps == (FIT,):
            return None
        built: list[Strategy] = []
        for step in self.steps:
            make = _ALIASES.get(step)
            built.append(make() if make is not None else get_strategy(step))
        return built


def _chain(text: str) -> Chain:
    steps = tuple(step.strip() for step in text.split("+"))
    if any(not step for step in steps):
        raise InvalidInputError(f"chain {text!r} has an empty step; join step names with '+', e.g. summarize+trim")
    valid = step_names()
    unknown = [step for step in steps if step not in valid]
    if unknown:
        raise InvalidInputError(f"unknown strategy {unknown[0]!r} in chain {text!r}; valid names: {', '.join(valid)}")
    if FIT in steps and len(steps) > 1:
        raise InvalidInputError(f"chain {text!r}: 'fit' is ctxwin.fit's whole default chain and cannot be combined")
    chain = Chain("+".join(steps), steps)
    try:
        chain.strategies()  # a plugin's strategy that cannot be built without options fails here, by name
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"chain {text!r}: a step cannot be built with default options: {exc}") from None
    return chain


def parse_chains(text: str) -> list[Chain]:
    """Comma-separated chains; ValueError naming the bad chain or step and listing the valid step names."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise InvalidInputError(f"strategies {text!r} has an empty chain; separate chains with commas, e.g. last,fit")
    chains = [_chain(item) for item in items]
    names = [c.name for c in chains]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InvalidInputError(f"strategies {text!r} list {', '.join(repeated)} more than once")
    return chains
