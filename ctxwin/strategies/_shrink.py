"""Shrinking messages until the conversation fits, taking about what is needed, and leaving alone what a later step
drops anyway, so a plan keeps at least the recent turns a plain trim keeps verbatim (docs/planner.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.strategies._base import Counts, StepContext, last_turn, must_keep_with_partners, working_set_start
from ctxwin.strategies._walk import walk
from ctxwin.trim._tool_pairs import ToolPairs

# Rounds of cutting by degrees: the first cuts by the counts' estimate, the next ones take what the real cuts left
# over (a token or two where a marker joins the text).
_ROUNDS = 3


@dataclass
class Shrunk:
    """Replacements (index -> smaller copy) and, when a later step drops part of the conversation anyway, a note
    for the step's report saying how many messages at its far end were left alone."""

    replacements: dict[int, BaseMessage] = field(default_factory=dict)
    note: str | None = None


def shrink_until_fits(
    messages: Sequence[BaseMessage],
    wanted: Callable[[int], bool],
    shrink: Callable[[list[int], list[int | None]], list[BaseMessage | None]],
    context: StepContext,
    floor: Callable[[int], int] | None = None,
    floor_at_cut: Callable[[int], int] | None = None,
) -> Shrunk:
    """Shrink the messages ``wanted(i)`` picks until the messages fit the context's budget: oldest first (newest first
    when the later step keeps the oldest). ``shrink(indexes, targets)`` makes their smaller copies together (None
    where there is none), so a strategy can tokenize their pieces in one batch; ``targets`` are the counts to come
    down to (None: as small as it goes). ``floor(i)``, when given, is the count of message ``i`` shrunk as far as it
    goes (a cheap estimate): each message is then shrunk only by what is still needed. Without it a message is shrunk
    all the way or not at all. ``wanted`` is asked only about the messages the search reaches.

    ``floor_at_cut(i)``, when given, is a lower floor for the messages of the unit where the later step's cut
    falls (a tool call with its results, which that step keeps or drops whole): when that unit does not fit the room
    the newer messages leave, even shrunk to ``floor``, but fits shrunk to ``floor_at_cut`` (with its turn's user
    message, which the later step keeps with a turn's tail end), it is shrunk that far and kept, so that room is
    spent rather than left empty."""
    made: dict[int, BaseMessage | None] = {}  # shrunk all the way, by index: the search's copies are reused

    def whole(i: int) -> BaseMessage | None:
        if i not in made:
            made[i] = shrink([i], [None])[0]
        return made[i]

    keeps, counts, limit = context.later_keeps, context.counts, context.budget.messages_budget
    region, at_cut, note = later_region(messages, wanted, whole, context, floor, floor_at_cut)
    order = range(len(messages)) if region is None else region
    if keeps == "first":
        order = order[::-1]
    done = Shrunk()
    for _ in range(_ROUNDS if floor is not None else 1):
        current = [done.replacements.get(i, messages[i]) for i in (range(len(messages)) if region is None else region)]
        need = counts.total(current) - limit
        if need <= 0:
            break
        picked: list[int] = []
        targets: list[int | None] = []
        for i in order:
            if need <= 0:
                break
            if not wanted(i):
                continue
            now = counts.count(done.replacements.get(i, messages[i]))
            if floor is None:  # all or nothing: shrink it and see
                smaller = whole(i)
                if smaller is not None:
                    done.replacements[i] = smaller
                    need -= now - counts.count(smaller)
                continue
            spare = now - (floor_at_cut(i) if floor_at_cut is not None and i in at_cut else floor(i))
            if spare > 0:
                take = min(need, spare)
                need -= take
                picked.append(i)
                targets.append(now - take)
        if not picked:
            break
        for i, smaller in zip(picked, shrink(picked, targets), strict=True):
            if smaller is not None:
                done.replacements[i] = smaller
    done.note = note if done.replacements else None  # a step that did nothing has nothing to explain
    return done


def later_region(
    messages: Sequence[BaseMessage],
    wanted: Callable[[int], bool],
    whole: Callable[[int], BaseMessage | None],
    context: StepContext,
    floor: Callable[[int], int] | None = None,
    floor_at_cut: Callable[[int], int] | None = None,
    *,
    verbatim: bool = True,
) -> tuple[list[int] | None, range, str | None]:
    """The indexes a later step may still keep once the ``wanted`` messages are shrunk (``whole(i)``, or down to
    ``floor(i)``), None when it keeps them all or no later step drops by position; the unit at its cut (shrunk down
    to ``floor_at_cut``) and the note saying what was left to it. With ``verbatim`` the newest whole turns that fit
    count unshrunk (a step that shrinks oldest first leaves them); without, every wanted message counts shrunk (a
    step that shrinks all it may at once)."""
    keeps, counts, limit = context.later_keeps, context.counts, context.budget.messages_budget
    overhead = counts.overhead
    if not keeps or overhead is None or not messages:
        return None, range(0), None
    protected = must_keep_with_partners(messages, context.pinned)
    cut = _overflow(
        messages, wanted, whole, limit - overhead, counts, floor, floor_at_cut, keeps, protected, verbatim=verbatim
    )
    if cut is None:
        return None, range(0), None
    edge = messages[cut.edge] if 0 <= cut.edge < len(messages) else None
    if not verbatim and keeps == "last" and edge is not None and cut.edge not in protected \
            and counts.count(edge) > limit:
        # a message over the budget: the trim may keep older ones around its placeholder, so a step that must
        # change every message it keeps (clear_reasoning) looks at them too; one that shrinks for room leaves them
        # to the trim, and the newest (an agent's working set) whole
        return None, range(0), None
    reachable = range(cut.edge + 1, len(messages)) if keeps == "last" else range(cut.edge)
    region = sorted({*reachable, *protected, *cut.question})
    skipped = len(messages) - len(region)
    end, other = ("oldest", "newer") if keeps == "last" else ("newest", "older")
    note = (f"left the {skipped} {end} messages to a later step, which drops or summarises them: "
            f"the {other} ones alone overflow the budget")
    return region, cut.unit, note


@dataclass
class _Cut:
    """Where the later step's cut falls: the messages up to ``edge`` (from ``edge`` on, for ``"first"``) are left to
    it, except ``question``; ``unit`` may be shrunk down to ``floor_at_cut``."""

    edge: int
    unit: range = range(0)
    question: tuple[int, ...] = ()


def _overflow(
    messages: Sequence[BaseMessage],
    wanted: Callable[[int], bool],
    whole: Callable[[int], BaseMessage | None],
    limit: int,
    counts: Counts,
    floor: Callable[[int], int] | None,
    floor_at_cut: Callable[[int], int] | None,
    keeps: str,
    protected: set[int],
    *,
    verbatim: bool = True,
) -> _Cut | None:
    """Where the later step's cut will fall: walking from the kept end beside the ``protected`` messages, the
    newest whole user turns that fit count whole (``"last"``: what a plain trim keeps verbatim), the older messages
    each as shrunk; the index where that first overflows ``limit`` (the messages' own counts: the request overhead
    is taken out), None if it never does, moved past the unit there when ``floor_at_cut`` makes that unit fit (see
    ``_fill_at_cut``)."""
    room = limit - sum(counts.each([messages[i] for i in sorted(protected)]))
    newest_first = keeps == "last"
    whole_from = _verbatim_start(messages, counts, room, protected) if newest_first and verbatim else len(messages)
    if newest_first and floor_at_cut is not None and whole_from == len(messages):
        whole_turn = _last_turn_cut(messages, wanted, counts, floor_at_cut, protected, room)
        if whole_turn is not None:
            return whole_turn
    used = 0
    counted: dict[int, int] = {}  # what each walked message counted as
    for i, count in walk(counts, messages, room, newest_first=newest_first):
        if i in protected:
            continue
        if i < whole_from and wanted(i):
            if floor is not None:
                count = min(count, floor(i))
            else:
                smaller = whole(i)
                count = counts.count(smaller) if smaller is not None else count
        used += count
        counted[i] = count
        if used > room:
            if newest_first and floor_at_cut is not None:
                return _fill_at_cut(
                    messages, wanted, counts, floor_at_cut, protected, i, room - used, counted, whole_from
                )
            return _Cut(i)
    return None


def _fill_at_cut(
    messages: Sequence[BaseMessage],
    wanted: Callable[[int], bool],
    counts: Counts,
    floor_at_cut: Callable[[int], int],
    protected: set[int],
    edge: int,
    free: int,
    counted: dict[int, int],
    verbatim: int,
) -> _Cut:
    """The cut at ``edge`` (``free``, negative, the room left after counting it), or, when the unit around it (the
    messages between the clean cut points either side, which the later step keeps or drops together: a tool call
    and its results) fits with its outputs shrunk to ``floor_at_cut`` and with the user message that opens its turn,
    the cut just before that unit, keeping both."""
    pairs = ToolPairs(messages, suffix_only=True)
    lo, hi = edge, edge + 1
    while lo > 0 and pairs.straddling(lo):
        lo -= 1
    while hi < verbatim and pairs.straddling(hi):
        hi += 1
    if not (0 < lo < hi <= verbatim) or pairs.straddling(hi):
        return _Cut(edge)
    unit = range(lo, hi)
    if any(isinstance(messages[i], HumanMessage) for i in unit):
        return _Cut(edge)  # a user message between a call and its result: the later step starts a turn there
    question = next((q for q in range(lo - 1, -1, -1) if isinstance(messages[q], HumanMessage)), None)
    if question is None:
        return _Cut(edge)  # the later step drops a turn's tail end without its question
    least = [floor_at_cut(i) if wanted(i) else counts.count(messages[i]) for i in unit if i not in protected]
    free += sum(counted.get(i, 0) for i in unit) - sum(least)
    if question not in protected:
        free -= counts.count(messages[question])
    if free < 0:
        return _Cut(edge)
    return _Cut(lo - 1, unit, (question,))


def _last_turn_cut(
    messages: Sequence[BaseMessage],
    wanted: Callable[[int], bool],
    counts: Counts,
    floor_at_cut: Callable[[int], int],
    protected: set[int],
    room: float,
) -> _Cut | None:
    """The last turn is the unit at the cut when it does not fit whole as it is but does with its outputs shrunk to
    ``floor_at_cut``: the later step then keeps it whole (shrunk as little as needed) instead of dropping its older
    part. None when there is no user turn or it does not fit even so."""
    turn = last_turn(messages)
    if not turn:
        return None
    least = sum(floor_at_cut(i) if wanted(i) else counts.count(messages[i]) for i in turn if i not in protected)
    if least > room:
        return None
    first = min(turn)
    return _Cut(first - 1, range(first, len(messages)))


def _verbatim_start(messages: Sequence[BaseMessage], counts: Counts, room: float, protected: set[int]) -> int:
    """Where the newest whole user turns that fit in ``room`` (beside the protected messages) start, or the newest
    tool rounds holding the agent's working set (``working_set_start``) when those fit and reach further: an agent
    left to work makes one user turn of many rounds, which never fits whole, and its newest outputs are what it
    works from."""
    used, start = 0, len(messages)
    rounds = working_set_start(messages)
    for i, count in walk(counts, messages, room):
        if i not in protected:
            used += count
        if used > room:
            break
        if isinstance(messages[i], HumanMessage) or i == rounds:
            start = i
    return start
