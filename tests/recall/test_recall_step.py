"""The recall step on its own, in a plan run of its own (``PlanRun``): where it searches and what it plans from,
that it brings back what a step left out when the newest question relates to it (after the system prompt, within
its share), that it makes the room for it by dropping the oldest kept turns but never the current turn, and that
it adds nothing when no step left anything out."""

from __future__ import annotations

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from ctxwin.recall import is_recalled
from ctxwin.recall._inject import InputRecall, recall_message
from ctxwin.recall._session import SessionRecall
from ctxwin.recall._step import RECALL_ROOM_STEP, RECALL_STEP, RecallStep
from ctxwin.recall._store import message_excerpts
from ctxwin.strategies._base import Budget, Change, StepContext, StepResult
from ctxwin.strategies._meter import Meter
from ctxwin.strategies._pins import pin
from ctxwin.strategies._trim import TrimToBudget

GPT4O = get_counter("gpt-4o")
FACT = "The Lyon warehouse lease runs until March 2031 at 4,250 EUR a month."


class Run:
    """A plan in progress, as the planner keeps one: its lists of messages, the steps' results, counted by a meter."""

    def __init__(self, messages: list[BaseMessage], results: list[StepResult]) -> None:
        self.meter = Meter(GPT4O)
        self.lists = [messages]
        self.results = results
        self.recalled = None
        self.steps: list[str] = []

    @property
    def current(self) -> list[BaseMessage]:
        return self.lists[-1]

    def record(self, name: str, result: StepResult, span: object = None) -> None:
        self.steps.append(name)
        self.results.append(result)
        self.lists.append(result.messages)

    def fits(self, messages: list[BaseMessage], budget: Budget) -> bool:
        return self.tokens(messages) <= budget.max_input_tokens

    def tokens(self, messages: list[BaseMessage]) -> int:
        return self.meter.exact(messages)

    def context(self, budget: Budget) -> StepContext:
        return StepContext(budget, self.meter, pinned=self.meter.pinned, head=self.meter.head)


def history(turns: int = 8) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("You help with facilities."), HumanMessage(FACT), AIMessage("Noted.")]
    for n in range(turns):
        out += [HumanMessage(f"Status {n}: " + "the nightly export finished " * 10), AIMessage(f"Fine {n}.")]
    return [*out, HumanMessage("When does the Lyon warehouse lease end?")]


def dropped(messages: list[BaseMessage], kept_from: int) -> tuple[list[BaseMessage], StepResult]:
    """What a trim keeping ``messages[kept_from:]`` (and the system prompt) reports."""
    kept = [messages[0], *messages[kept_from:]]
    return kept, StepResult(kept, changes=[Change("dropped", messages[1:kept_from])])


def test_the_source_is_the_input_or_the_sessions_and_an_old_recall_is_replaced() -> None:
    old = recall_message("earlier", message_excerpts(HumanMessage("older words"), 0))
    messages = [SystemMessage("Rules."), pin(HumanMessage("Keep this.")), old, HumanMessage("Now?")]
    step = RecallStep(0.1, [TrimToBudget()])
    planned, source = step.source(messages, Meter(GPT4O), True, session=False)
    assert old not in planned and len(planned) == 3 and isinstance(source, InputRecall)
    meter = Meter(GPT4O)
    planned, source = step.source(messages[:2] + messages[3:], meter, True, session=False)
    assert meter.pinned(planned) == [1]  # the pins found in the same read are given to the meter
    session = SessionRecall(messages, messages)
    assert step.source(messages, Meter(GPT4O), session, session=True) == ([*messages[:2], messages[3]], session)
    assert step.source(messages, Meter(GPT4O), False, session=True) == (messages, None)
    assert RecallStep(0, [TrimToBudget()]).source(messages, Meter(GPT4O), True, session=False) == (messages, None)


def test_what_a_step_left_out_comes_back_after_the_system_prompt() -> None:
    messages = history()
    kept, trimmed = dropped(messages, 5)
    run = Run(kept, [trimmed])
    budget = Budget(4_000, 0)
    step = RecallStep(0.1, [TrimToBudget()])
    step.apply(run, InputRecall(messages), budget, budget)
    assert run.steps == [RECALL_STEP] and is_recalled(run.current[1]) and FACT in run.current[1].text
    assert run.current[2:] == kept[1:] and run.recalled is not None and run.recalled.labels == ["#1"]
    assert run.recalled.tokens == GPT4O.count_message(run.current[1]) <= 0.1 * budget.max_input_tokens


def test_nothing_comes_back_when_no_step_left_anything_out() -> None:
    messages = history()
    run = Run(messages, [StepResult(messages)])
    budget = Budget(4_000, 0)
    RecallStep(0.1, [TrimToBudget()]).apply(run, InputRecall(messages), budget, budget)
    assert run.steps == [] and run.recalled is None


def test_the_room_is_made_from_the_oldest_kept_turns_never_the_current_one() -> None:
    messages = history()
    kept, trimmed = dropped(messages, 5)
    budget = Budget(GPT4O.count_messages(kept) + 10, 0)  # full: the recall needs room
    run = Run(kept, [trimmed])
    RecallStep(0.2, [TrimToBudget()]).apply(run, InputRecall(messages), budget, budget)
    assert run.steps == [RECALL_ROOM_STEP, RECALL_STEP]
    assert is_recalled(run.current[1]) and run.current[-1] is messages[-1] and len(run.current) < len(kept) + 1
    assert GPT4O.count_messages(run.current) <= budget.max_input_tokens
    question_only = [messages[0], messages[-1]]  # nothing older to drop: recall in the room left, or not at all
    tight = Budget(GPT4O.count_messages(question_only) + 5, 0)
    run = Run(question_only, [StepResult(question_only, changes=[Change("dropped", messages[1:-1])])])
    RecallStep(0.2, [TrimToBudget()]).apply(run, InputRecall(messages), tight, tight)
    assert run.steps == [] and run.current == question_only
