"""``trim``: the trim engine, keeping the most recent (or the oldest) messages that fit around what must stay.

What must stay (the leading system messages, pinned messages, the last user message, and the tool partners of any
of them) is set aside and its cost taken from the budget; the engine keeps the latest of the rest that fit, with
tool pairs whole. The kept history then starts at a user turn, so the model never sees a turn's second half.
``strategy="first"`` keeps the oldest of the rest instead (LangChain's ``strategy="first"``), ending the kept head
on an assistant message, so the model never sees a question whose answer was cut away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress
from typing import Literal

from ctxwin.messages import BaseMessage, HumanMessage, SystemMessage
from ctxwin.strategies.base import Budget, StepResult, dropped_between, must_keep_with_partners
from ctxwin.strategies.meter import Meter
from ctxwin.trim import trim_messages

_MAX_ROUNDS = 6  # re-trims for a counter that is not additive; each round tightens by the measured overshoot


@dataclass
class TrimToBudget:
    """Keep the latest (``strategy="last"``) or oldest (``"first"``) messages that fit beside the must-keep part."""

    name: str = field(default="trim")
    strategy: Literal["last", "first"] = "last"

    def __post_init__(self) -> None:
        if self.strategy not in ("last", "first"):
            raise ValueError(f"trim strategy must be 'last' or 'first', got {self.strategy!r}")

    @property
    def keeps(self) -> str:
        """The end of the conversation this step keeps (see ``Strategy``)."""
        return self.strategy

    def apply(self, messages: list[BaseMessage], budget: Budget, meter: Meter) -> StepResult:
        protected = sorted(must_keep_with_partners(messages, meter))
        fixed = [messages[i] for i in protected]
        rest: list[BaseMessage] = []  # the runs between protected messages, copied by slices
        for start, end in zip([-1, *protected], [*protected, len(messages)], strict=True):
            rest += messages[start + 1 : end]
        limit = budget.messages_budget - sum(meter.each(fixed))
        notes: list[str] = []
        out = fixed
        metered = meter.as_counter() if meter.is_additive(messages) else meter.counter
        end_on = "ai" if self.strategy == "first" else None
        for _ in range(_MAX_ROUNDS):
            kept_rest = (
                trim_messages(rest, max_tokens=limit, token_counter=metered, strategy=self.strategy, end_on=end_on)
                if limit > 0
                else []
            )
            kept_ids = set(map(id, fixed))
            kept_ids.update(map(id, kept_rest))
            out = list(compress(messages, map(kept_ids.__contains__, map(id, messages))))  # C loops: a long history
            if self.strategy == "last":
                out = _start_on_user_turn(out, protected_ids=set(map(id, fixed)))
            over = meter.total(out) - budget.messages_budget
            if over <= 0 or limit <= 0:
                break
            limit -= over
        if limit <= 0 and rest:
            notes.append("the must-keep messages alone use the whole budget")
        dropped = dropped_between(messages, out)
        notes.append(f"kept {len(out)} of {len(messages)} messages")
        return StepResult(out, notes, dropped=dropped)


def _start_on_user_turn(messages: list[BaseMessage], protected_ids: set[int]) -> list[BaseMessage]:
    """Drop unprotected messages between the system prefix and the first user message (a turn's tail end)."""
    first_user = next((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), None)
    if first_user is None:
        return messages
    return [
        m for i, m in enumerate(messages) if i >= first_user or id(m) in protected_ids or isinstance(m, SystemMessage)
    ]
