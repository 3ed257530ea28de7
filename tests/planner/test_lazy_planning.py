"""A plan tokenizes what its decisions need: far over budget it leaves the dropped history unread until a report
figure is asked for, and shrinking steps skip what a later trim drops. The results and figures stay exact."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters._families.tiktoken_counter import TiktokenCounter
from ctxwin.messages import BaseMessage, HumanMessage, ToolMessage
from ctxwin.planner import FitConfig, Planner
from ctxwin.strategies._base import StepContext, StepResult, Strategy
from ctxwin.strategies._filter import FilterMessages
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._pins import pin, pinned_indexes
from ctxwin.strategies._trim import TrimToBudget
from ctxwin.strategies._truncate import TruncateToolOutput
from ctxwin.strategies._walk import within
from ctxwin.trim import trim_counted, trim_messages

from .test_planner import assert_tool_pairs_intact, conversation


class RecordingCounter(TiktokenCounter):
    """The real o200k counter, remembering the texts it tokenized."""

    def __init__(self) -> None:
        super().__init__("o200k_base")
        self.seen: list[str] = []

    @property
    def texts(self) -> int:
        return len(self.seen)

    def count_text(self, text: str) -> int:
        self.seen.append(text)
        return super().count_text(text)

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        self.seen += texts
        return super().count_texts(texts)


@dataclass
class Opaque:
    """A strategy that does not say which messages it keeps, as a third-party plugin may not."""

    inner: Strategy
    name: str = "opaque"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        return self.inner.apply(messages, context)


def test_dropped_history_is_tokenized_only_when_a_figure_is_read() -> None:
    messages = conversation(3, turns=400, big_tool=300)
    counter = RecordingCounter()
    plan = Planner(counter=counter, context_window=2000, reserve_output=0).plan(messages)
    assert plan.fits
    before_reading = counter.texts
    assert before_reading < len(messages) / 4, "deciding what to keep read most of the conversation"
    exact = TiktokenCounter("o200k_base").count_messages(messages)
    assert plan.tokens_before == exact
    assert counter.texts > before_reading
    assert plan.steps[0].tokens_before == exact
    assert plan.steps[-1].tokens_after == plan.tokens_after
    dropped = {label for step in plan.steps for label in step.dropped_ids}
    assert dropped == {m.id for m in messages} - {m.id for m in plan.messages}


def test_pickled_and_copied_plans_carry_their_figures() -> None:
    messages = conversation(4, turns=60)
    plan = Planner(counter=TiktokenCounter("o200k_base"), context_window=1500, reserve_output=0).plan(messages)
    for other in (pickle.loads(pickle.dumps(plan)), copy.deepcopy(plan)):
        assert other.tokens_before == plan.tokens_before
        assert [s.as_dict() for s in other.steps] == [s.as_dict() for s in plan.steps]
        assert other.summary() == plan.summary()


def test_step_report_as_dict_has_the_figures() -> None:
    plan = Planner(counter=TiktokenCounter("o200k_base"), context_window=900, reserve_output=0).plan(
        conversation(5)
    )
    report = plan.steps[-1].as_dict()
    assert report["name"] == plan.steps[-1].name
    assert report["tokens_after"] == plan.tokens_after
    assert set(report) == {
        "name", "tokens_before", "tokens_after", "dropped_ids", "truncated_ids", "summarized_ids", "notes", "skipped"
    }


@pytest.mark.parametrize("keeps", ["last", "first"])
def test_truncation_skips_outputs_the_trim_drops(keeps: str) -> None:
    messages = conversation(6, turns=200, big_tool=900)
    trim = TrimToBudget(strategy=keeps)  # type: ignore[arg-type]
    chain: list[Strategy] = [TruncateToolOutput(max_tokens=100), trim]
    counter = TiktokenCounter("o200k_base")
    lazy = Planner(counter=counter, context_window=3000, reserve_output=0, strategies=chain).plan(messages)
    full = Planner(
        counter=counter, context_window=3000, reserve_output=0, strategies=[chain[0], Opaque(trim)]
    ).plan(messages)
    assert lazy.fits and full.fits
    skipped, truncated = lazy.steps[0], full.steps[0]
    assert len(skipped.truncated_ids) < len(truncated.truncated_ids)
    assert not skipped.truncated_ids or any("later step" in note for note in skipped.notes)
    left_alone = set(truncated.truncated_ids) - set(skipped.truncated_ids)  # dropped by the trim, or kept verbatim
    originals = {m.id: m for m in messages}
    assert all(m is originals[m.id] for m in lazy.messages if m.id in left_alone)
    if keeps == "last":  # the newest turns stay verbatim, as a plain trim keeps them
        plain = Planner(counter=counter, context_window=3000, reserve_output=0, strategies=[trim]).plan(messages)
        assert lazy.recent_turns_verbatim >= plain.recent_turns_verbatim > 0


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    window=st.integers(400, 6000),
    turns=st.integers(1, 60),
    max_tokens=st.integers(20, 400),
    keeps=st.sampled_from(["last", "first"]),
)
def test_skipping_what_a_later_trim_drops_keeps_plans_valid_and_recent_turns_verbatim(
    seed: int, window: int, turns: int, max_tokens: int, keeps: str
) -> None:
    messages = conversation(seed, turns=turns, big_tool=600)
    trim = TrimToBudget(strategy=keeps)  # type: ignore[arg-type]
    shrinkers: list[Strategy] = [FilterMessages(), TruncateToolOutput(max_tokens=max_tokens)]
    counter = TiktokenCounter("o200k_base")
    # Recall off: what it brings back depends on what each chain left out (truncated outputs are recallable), and
    # the room it takes is recent turns; the property is about skipping work, not about recall.
    config = FitConfig(counter=counter, context_window=window, reserve_output=0, recall_share=0.0)
    lazy = Planner(strategies=[*shrinkers, trim], config=config)
    plain = Planner(strategies=[trim], config=config).plan(messages)
    a = lazy.plan(messages)
    assert a.fits or not plain.fits
    assert counter.count_messages(a.messages) == a.tokens_after
    assert_tool_pairs_intact(messages, a.messages)
    assert [s.tokens_before for s in a.steps[1:]] == [s.tokens_after for s in a.steps[:-1]]
    artifacts = {m.id: m.artifact for m in a.messages if isinstance(m, ToolMessage) and m.artifact is not None}
    originals = {m.id: m.content for m in messages}
    assert all(originals[i] == full_value for i, full_value in artifacts.items())
    if keeps == "last":
        assert a.recent_turns_verbatim >= plain.recent_turns_verbatim


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 300), min_size=0, max_size=80),
    limit=st.integers(-5, 6000),
)
def test_within_agrees_with_the_total(sizes: list[int], limit: int) -> None:
    from ctxwin.messages import HumanMessage

    messages: list[BaseMessage] = [HumanMessage("word " * size) for size in sizes]
    counter = TiktokenCounter("o200k_base")
    assert within(Meter(counter), messages, limit) == (Meter(counter).total(messages) <= limit)


def test_the_trim_step_tokenizes_nothing_past_the_counts_the_plan_already_holds() -> None:
    messages = conversation(7, turns=120, big_tool=300)
    meter = Meter(RecordingCounter())
    meter.each(messages[-41:])  # what the plan's fits check counted: just past the cut
    limit = meter.total(messages[-40:])
    assert isinstance(meter.counter, RecordingCounter)
    before = meter.counter.texts
    kept = trim_counted(messages, max_tokens=limit, each=meter.each, overhead=meter.overhead or 0, known=meter.known)
    tokenized = set(meter.counter.seen[before:])
    assert not tokenized & {m.text for m in messages[:-41]}, "the engine tokenized messages beyond the cut"
    expected = trim_messages(messages, max_tokens=limit, token_counter=TiktokenCounter("o200k_base"))
    assert [m.id for m in kept] == [m.id for m in expected]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_meters_pinned_indexes_follow_every_list_a_step_makes(data: st.DataObject) -> None:
    size = data.draw(st.integers(0, 30))
    messages: list[BaseMessage] = [
        pin(HumanMessage(f"m{i}")) if data.draw(st.booleans()) else HumanMessage(f"m{i}") for i in range(size)
    ]
    meter = Meter(TiktokenCounter("o200k_base"))
    for _ in range(4):  # each list made from the last: copies at some places, pinned or not, or a new length
        assert meter.pinned(messages) == pinned_indexes(messages)
        if data.draw(st.booleans()) or not messages:
            messages = [*messages, HumanMessage("new")] if data.draw(st.booleans()) else messages[1:]
        else:
            places = data.draw(st.sets(st.integers(0, len(messages) - 1)))
            messages = [
                (pin(m) if data.draw(st.booleans()) else m.model_copy()) if i in places else m
                for i, m in enumerate(messages)
            ]


def test_a_shrinking_step_with_nothing_to_shrink_has_no_note() -> None:
    messages = conversation(8, turns=300)  # no content blocks: the filter has nothing to slim
    plan = Planner(counter=TiktokenCounter("o200k_base"), context_window=2000, reserve_output=0).plan(messages)
    filter_step = next(step for step in plan.steps if step.name == "filter")
    assert filter_step.notes == [] and filter_step.truncated_ids == []
