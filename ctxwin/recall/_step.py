"""``RecallStep``: query-aware recall inside a plan, run by the planner after its chain: where it searches, what it
would bring back, the room it makes for that and where its message goes; the planner only calls it."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any, Protocol

from ctxwin import _tracing as tracing
from ctxwin._plural import plural
from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.recall._inject import (
    INPUT_CHARS,
    MAX_EXCERPTS,
    MIN_SCORE,
    InputRecall,
    Recalled,
    RecallSource,
    choose,
    find,
    input_reach,
    is_recalled,
    placed,
    recall_query,
    without_recalled,
)
from ctxwin.recall._store import Excerpt
from ctxwin.strategies._base import BaseStrategy, Budget, StepContext, StepResult, last_user_index
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._pins import flagged_indexes, is_pinned
from ctxwin.strategies._trim import TrimToBudget

RECALL_STEP = "recall"
RECALL_ROOM_STEP = "recall_room"


class PlanRun(Protocol):
    """The plan recall runs in (the planner's): its meter, its messages so far (``current``) and what its steps
    did (``results``); recording a step; whether messages fit a budget, the tokens of the request they make, and a
    step's context for a budget, all as the plan counts them."""

    meter: Meter
    results: list[StepResult]
    recalled: Recalled | None

    @property
    def current(self) -> list[BaseMessage]: ...

    def record(self, name: str, result: StepResult, span: Any = None) -> None: ...

    def fits(self, messages: list[BaseMessage], budget: Budget) -> bool: ...

    def tokens(self, messages: list[BaseMessage]) -> int: ...

    def context(self, budget: Budget) -> StepContext: ...


class RecallStep:
    """Recall within ``share`` of a plan's budget (0: none) for a planner whose chain is ``chain``: the room for
    the excerpts is made by the chain's steps that do not summarise (a summarizer is called once a plan), ending
    with a trim that keeps the end the chain's last dropping step keeps."""

    def __init__(self, share: float, chain: Sequence[BaseStrategy]) -> None:
        self.share = share
        keeps = [s.keeps for s in chain if s.keeps in ("first", "last")]
        trim = TrimToBudget(strategy="first" if keeps[-1:] == ["first"] else "last")
        self._shrinking = [*(s for s in chain if not s.summarizes), trim]

    def source(
        self, messages: list[BaseMessage], meter: Meter, recall: RecallSource | bool, session: bool,
        budget: Budget | None = None,
    ) -> tuple[list[BaseMessage], RecallSource | None]:
        """The messages to plan (without an earlier recall message: a new one replaces it) and where recall
        searches (``recall``: a session's source, True for ``messages`` themselves, reaching back as far as
        ``budget`` (``input_reach``), False for nowhere); None when recall is off. A one-off plan (not a
        ``session``'s, which knows its pins) finds the recall messages and the pins in one read of the history, and
        gives the pins to the meter."""
        if not self.share or recall is False:
            return messages, None
        if session:
            messages = without_recalled(messages)
        else:
            flagged = flagged_indexes(messages)
            if any(is_recalled(messages[i]) for i in flagged):
                messages = [m for m in messages if not is_recalled(m)]
            else:
                meter.follow(messages, [i for i in flagged if is_pinned(messages[i])])
        if recall is not True:
            return messages, recall
        return messages, InputRecall(messages, INPUT_CHARS if budget is None else input_reach(budget.max_input_tokens))

    def search(
        self, run: PlanRun, source: RecallSource | None, goal: Budget, stale: Collection[str] = ()
    ) -> tuple[Recalled, list[Excerpt]] | None:
        """What recall would bring back (and the relevant excerpts it chose from), when a step left something out
        and the query relates to it; None else. No excerpt holding a ``stale`` value (one the conversation
        corrected) is brought back beside its correction."""
        if source is None or not any(c.kind != "replaced" for step in run.results for c in step.changes):
            return None
        query = recall_query(run.current)
        if not query:
            return None
        excerpts = find(source, run.current, limit=MAX_EXCERPTS, min_score=MIN_SCORE)
        if stale:
            excerpts = [e for e in excerpts if not any(value in e.text for value in stale)]
        room = math.floor(self.share * goal.max_input_tokens)
        chosen = choose(query, excerpts, room, run.meter.count) if excerpts else None
        return None if chosen is None else (Recalled(query, chosen[1], chosen[2]), excerpts)

    def apply(
        self, run: PlanRun, source: RecallSource | None, goal: Budget, budget: Budget, stale: Collection[str] = ()
    ) -> None:
        """Query-aware recall after the steps: when they left something out that the query relates to, a trim
        makes the room the excerpts take (``recall_room``: the oldest kept messages go, as the last trim would have
        taken them; not when that would cost the current turn), then the recall message of the excerpts still left
        out, within that room, is placed where the kept conversation starts (``placed``). Where what must stay
        fills ``goal`` (a session's cut aims below its ``budget``: its summary and current turn can take all of
        that) and the request ends with the user's new message, the room left under ``budget`` is used, never over
        it: that request is the one whose answer needs what was dropped. A cut inside a tool round keeps its mark,
        which spaces the cuts (and so the cache writes) of an agent run."""
        searched = self.search(run, source, goal, stale)
        if searched is None:
            return
        found, excerpts = searched
        room = found.tokens
        lowered = goal.aiming_at(goal.max_input_tokens - found.tokens)
        if not run.fits(run.current, lowered):
            made = self._make_room(run, lowered)
            if made is not None and _keeps_last_turn(run.current, made.messages):
                with tracing.span(f"ctxwin.step {RECALL_ROOM_STEP}") as span:
                    run.record(RECALL_ROOM_STEP, made, span)  # what it freed beyond the room asked for, recall may fill
                free = goal.max_input_tokens - run.tokens(run.current)
                room = max(room, min(free, math.floor(self.share * goal.max_input_tokens)))
            else:  # the room would cost the current turn: recall in the room left
                room = goal.max_input_tokens - run.tokens(run.current)
        asked = bool(run.current) and isinstance(run.current[-1], HumanMessage)
        if room < found.tokens and goal.max_input_tokens < budget.max_input_tokens and asked:
            left = budget.max_input_tokens - run.tokens(run.current)
            room = max(room, min(left, math.floor(self.share * budget.max_input_tokens)))
        chosen = choose(found.query, excerpts, room, run.meter.count) if room > 0 else None  # the trim only drops more
        if chosen is None:
            return
        message, kept, tokens = chosen
        messages = placed(run.current, message, run.meter.head)
        if not run.fits(messages, budget):
            return
        record_recall(run, messages, Recalled(found.query, kept, tokens))

    def _make_room(self, run: PlanRun, lowered: Budget) -> StepResult | None:
        """The plan's messages fitted to ``lowered`` by the shrinking steps: tool outputs are shortened before turns
        are dropped, as the plan did; one result, its changes those of every step that ran (None when none changed
        anything)."""
        messages = current = run.current
        changes, notes = [], []
        for strategy in self._shrinking:
            if run.fits(current, lowered):
                break
            result = strategy.apply(current, run.context(lowered))
            if result.messages is not current:
                current = result.messages
                changes += result.changes
                notes += [f"{strategy.name}: {note}" for note in result.notes]
        return None if current is messages else StepResult(current, notes=notes, changes=changes)


def record_recall(run: PlanRun, messages: list[BaseMessage], recalled: Recalled) -> None:
    """The recall step: ``messages`` carry ``recalled``'s excerpts."""
    run.recalled = recalled
    # The query is the user's text: ``Plan.recalled`` holds it; notes (and so traces) carry no message content.
    note = (f"recalled {plural(len(recalled.excerpts), 'excerpt')} of {', '.join(recalled.labels)} "
            f"({recalled.tokens} tokens) for the newest query")
    with tracing.span(f"ctxwin.step {RECALL_STEP}") as span:
        run.record(RECALL_STEP, StepResult(messages, notes=[note]), span)


def without_newest_recall(messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` less the newest recall message (a session's between cuts; the last cut's stays)."""
    for index in range(len(messages) - 1, -1, -1):
        if is_recalled(messages[index]):
            return [*messages[:index], *messages[index + 1 :]]
    return messages


def _keeps_last_turn(messages: list[BaseMessage], trimmed: list[BaseMessage]) -> bool:
    """Whether ``trimmed`` still holds the last user message of ``messages`` and all that follows it."""
    start = last_user_index(messages)
    if start is None:
        return True
    kept = set(map(id, trimmed))
    return all(id(m) in kept for m in messages[start:])
