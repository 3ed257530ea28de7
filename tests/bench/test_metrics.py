"""The metrics on hand-built conversations where the right answer is obvious."""

from __future__ import annotations

from bench_support import turn

from ctxwin.cli._bench.metrics import (
    measure,
    messages_summarized,
    recent_turns_kept,
    system_kept,
    tool_pairs_intact,
    user_turns,
)
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.strategies._summarize import summary_message

SYSTEM = SystemMessage("be brief", id="sys")


def four_turns() -> list[BaseMessage]:
    return [SYSTEM, *turn(0), *turn(1, tool=True), *turn(2), *turn(3, tool=True)]


def test_user_turns_start_at_each_user_message() -> None:
    messages = [SYSTEM, AIMessage("hello"), *turn(0), *turn(1, tool=True)]
    assert user_turns(messages) == [(2, 4), (4, 8)]  # the greeting before the first question is in no turn


def test_everything_kept() -> None:
    original = four_turns()
    kept = measure(original, list(original))
    assert kept.recent_turns == 1.0 and kept.tool_pairs_intact and kept.system_kept and kept.summarized == 0


def test_the_last_two_of_four_turns() -> None:
    original = four_turns()
    assert recent_turns_kept(original, [SYSTEM, *turn(2), *turn(3, tool=True)]) == 0.5


def test_copies_count_as_verbatim_but_changes_do_not() -> None:
    original = four_turns()
    copies = [m.model_copy() for m in original]
    assert recent_turns_kept(original, copies) == 1.0
    changed = [*copies[:-1], AIMessage("answer 3, shortened", id="a3")]
    assert recent_turns_kept(original, changed) == 0.0


def test_counting_stops_at_the_first_turn_not_kept_whole() -> None:
    original = four_turns()
    # turn 2 lost its answer: turn 1 being there whole does not count, the run of recent turns ended at turn 2
    fitted = [SYSTEM, *turn(1, tool=True), HumanMessage("question 2", id="u2"), *turn(3, tool=True)]
    assert recent_turns_kept(original, fitted) == 0.25


def test_a_message_between_kept_turns_ends_the_run() -> None:
    original = four_turns()
    fitted = [SYSTEM, *turn(2), AIMessage("inserted"), *turn(3, tool=True)]
    assert recent_turns_kept(original, fitted) == 0.25


def test_no_user_message_means_nothing_to_measure() -> None:
    assert recent_turns_kept([SYSTEM, AIMessage("hi")], [SYSTEM]) is None


def test_orphan_tool_result_breaks_a_pair() -> None:
    original = four_turns()
    orphaned = [m for m in original if m.id != "c1"]
    assert not tool_pairs_intact(original, orphaned)


def test_call_without_its_result_breaks_a_pair() -> None:
    original = four_turns()
    assert not tool_pairs_intact(original, [m for m in original if m.id != "r3"])


def test_dropping_a_whole_pair_is_fine() -> None:
    original = four_turns()
    assert tool_pairs_intact(original, [m for m in original if m.id not in ("c1", "r1")])


def test_pairs_already_broken_in_the_original_do_not_count() -> None:
    pending = AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": "open"}], id="pending")
    stray = ToolMessage("late", tool_call_id="nobody", id="stray")
    original = [SYSTEM, *turn(0), stray, HumanMessage("go"), pending]
    assert tool_pairs_intact(original, list(original))
    assert tool_pairs_intact(original, [SYSTEM, HumanMessage("go"), pending])


def test_result_before_its_call_is_broken() -> None:
    call = AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": "x"}])
    result = ToolMessage("out", tool_call_id="x")
    assert not tool_pairs_intact([HumanMessage("q"), call, result], [HumanMessage("q"), result, call])


def test_system_kept() -> None:
    original = four_turns()
    assert system_kept(original, original[:1] + original[-2:])
    assert not system_kept(original, original[1:])
    assert not system_kept(original, [SystemMessage("be brief, really", id="sys"), *original[1:]])
    assert system_kept(original[1:], original[1:]) is None


def test_two_leading_system_messages_must_both_stay() -> None:
    original = [SYSTEM, SystemMessage("tools policy", id="sys2"), *turn(0)]
    assert not system_kept(original, [SYSTEM, *turn(0)])


def test_messages_summarized_counts_what_summaries_stand_for() -> None:
    original = four_turns()
    summary = summary_message("- user: question 0", original[1:7], count=6)
    assert messages_summarized(original, [SYSTEM, summary, *original[7:]]) == 6


def test_a_summary_already_in_the_original_is_not_counted_again() -> None:
    earlier = summary_message("- user: question 0", [], count=3)
    original = [SYSTEM, earlier, *turn(1), *turn(2)]
    extended = summary_message("- user: question 0\n- user: question 1", [earlier, *turn(1)], count=5)
    assert messages_summarized(original, [SYSTEM, extended, *turn(2)]) == 2
    assert messages_summarized(original, list(original)) == 0
