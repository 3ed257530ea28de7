"""``trim``: the trim engine, keeping the most recent (or oldest) messages that fit around what must stay, starting the
kept history at a user turn so the model never sees an answer without its question.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ctxwin._errors import InvalidInputError
from ctxwin._plural import plural
from ctxwin.messages import AIMessage, BaseMessage, SystemMessage
from ctxwin.strategies._base import (
    BaseStrategy,
    Change,
    Counts,
    StepContext,
    StepKeeps,
    StepResult,
    is_user_turn,
    last_turn,
    must_keep_with_partners,
    without,
)
from ctxwin.strategies._oversize import oversize_at_cut, oversize_note
from ctxwin.strategies._walk import within
from ctxwin.trim import trim_counted
from ctxwin.trim._tool_pairs import ToolPairs

_MAX_ROUNDS = 6  # re-trims for a counter that is not additive; each round tightens by the measured overshoot


@dataclass
class TrimToBudget(BaseStrategy):
    """Keep the latest (``strategy="last"``) or oldest (``"first"``) messages that fit beside the must-keep part."""

    name: str = field(default="trim")
    strategy: Literal["last", "first"] = "last"

    def __post_init__(self) -> None:
        if self.strategy not in ("last", "first"):
            raise InvalidInputError(f"trim strategy must be 'last' or 'first', got {self.strategy!r}")

    @property
    def keeps(self) -> StepKeeps:
        """The end of the conversation this step keeps (see ``BaseStrategy``)."""
        return self.strategy

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        budget, counts = context.budget, context.counts
        original = messages
        protected_set = must_keep_with_partners(messages, context.pinned)
        turn = last_turn(messages)
        whole = sorted(protected_set | turn)
        if within(counts, [messages[i] for i in whole], budget.messages_budget):  # counts only until over
            protected_set = set(whole)  # the last turn stays whole when it fits beside what must stay
        protected = sorted(protected_set)
        fixed = [messages[i] for i in protected]
        limit = budget.messages_budget - sum(counts.each(fixed))
        rest = without(messages, protected)
        notes: list[str] = []
        replaced: list[int] = []
        warnings: list[str] = []
        kept = protected
        overhead = counts.overhead  # None: the counter is not additive, the engine counts whole lists
        each, count_list = (counts.each, None) if overhead is not None else (None, counts.total)
        end_on = "ai" if self.strategy == "first" else None

        def engine(room: int) -> list[int]:
            kept_rest = (
                trim_counted(rest, max_tokens=room, each=each, overhead=overhead or 0, known=counts.known,
                             count_list=count_list, strategy=self.strategy, end_on=end_on)
                if room > 0
                else []
            )
            return sorted([*protected, *_positions(kept_rest, rest, protected, from_end=self.strategy == "last")])

        for _ in range(_MAX_ROUNDS):
            kept = engine(limit)
            if self.strategy == "last":
                # a message larger than the budget stops the kept part before it: its placeholder lets the trim go
                # on with the older messages
                while (swapped := oversize_at_cut(messages, kept, protected_set, budget.messages_budget, limit,
                                                  counts)) is not None:
                    messages, index = swapped
                    replaced.append(index)
                    rest = without(messages, protected)
                    kept = engine(limit)
                whole_turns = _start_on_user_turn(messages, kept, protected_set)
                if whole_turns != kept:  # a turn's tail end: keep it with its question, or drop it
                    kept = _with_question(messages, kept, whole_turns, protected_set, limit, counts, engine)
            over = counts.total([messages[i] for i in kept]) - budget.messages_budget
            if over <= 0 or limit <= 0:
                break
            limit -= over
        if limit <= 0 and rest:
            notes.append("the must-keep messages alone use the whole budget")
        lost = len(turn.difference(kept))
        if lost:
            warnings.append(
                f"the last turn (the last user message and what follows it, {len(turn)} messages) does not fit the "
                f"budget beside what must stay: {lost} of its messages were dropped"
            )
        notes.append(f"kept {len(kept):,} of {plural(len(messages), 'message')}")
        changes = [Change("dropped", without(messages, kept))]
        if replaced:
            changes.insert(0, Change("replaced", [original[i] for i in replaced], [messages[i] for i in replaced]))
            notes.insert(0, oversize_note(original, replaced))
        return StepResult([messages[i] for i in kept], notes, changes, warnings=warnings)


def _positions(found: list[BaseMessage], rest: list[BaseMessage], protected: list[int], from_end: bool) -> list[int]:
    """The indexes in the whole list of ``found``, messages of ``rest`` (the list less the ``protected`` indexes),
    matched by identity from the end the engine keeps: only the kept part of ``rest`` is looked at."""
    before = [index - k for k, index in enumerate(protected)]  # messages of rest before each protected one
    order = iter(range(len(rest) - 1, -1, -1) if from_end else range(len(rest)))
    positions = []
    for message in reversed(found) if from_end else found:
        r = next((r for r in order if rest[r] is message), None)
        if r is None:
            raise RuntimeError("the trim engine returned a message that is not in its input")
        positions.append(r + bisect_right(before, r))
    return positions


def _with_question(
    messages: list[BaseMessage],
    kept: list[int],
    whole_turns: list[int],
    protected: set[int],
    limit: int,
    counts: Counts,
    engine: Callable[[int], list[int]],
) -> list[int]:
    """The kept messages when the oldest kept turn is only a tail end: that tail with the user message that opens
    its turn (the engine run again with room for it), so the budget is spent on the latest part of the turn and
    the model still sees what it answers; ``whole_turns`` (the tail dropped) when there is no such message or no
    room for it and a tail."""
    first_gone = min(set(kept) - set(whole_turns))
    question = next((i for i in range(first_gone - 1, -1, -1) if is_user_turn(messages[i])), None)
    if question is None or question in protected:
        return whole_turns
    fuller = _start_on_user_turn(messages, sorted({*engine(limit - counts.count(messages[question])), question}),
                                 protected)
    next_turn = next((i for i in whole_turns if i > question and i not in protected), len(messages))
    if not any(question < i < next_turn and i not in protected for i in fuller):
        return whole_turns
    return fuller


def _start_on_user_turn(messages: list[BaseMessage], kept: list[int], protected: set[int]) -> list[int]:
    """Drop unprotected messages between the system prefix and the first kept user message (a turn's tail end), and
    the kept results of the calls so dropped (a user message may sit between a call and its result)."""
    first_user = next((k for k, i in enumerate(kept) if is_user_turn(messages[i])), None)
    if first_user is None:
        return kept
    gone = {i for i in kept[:first_user] if i not in protected and not isinstance(messages[i], SystemMessage)}
    if any(isinstance(messages[i], AIMessage) for i in gone):
        pairs = ToolPairs([messages[i] for i in kept])
        gone.update(kept[r] for r, c in pairs.call_of.items() if kept[c] in gone and kept[r] not in protected)
    return [i for i in kept if i not in gone]
