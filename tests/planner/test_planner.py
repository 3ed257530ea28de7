"""The planner end to end, with the real o200k tokenizer: fits, keeps what must stay, reports every token."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_messages
from ctxwin.planner import BudgetExceeded, Planner, fit
from ctxwin.recall import is_recalled
from ctxwin.strategies._ledger import is_ledger
from ctxwin.strategies._pins import is_pinned, pin
from ctxwin.strategies._summarize import is_summary

COUNTER = "tiktoken:o200k_base"
WORDS = ["alpha", "beta", "gamma", "delta", "数据", "模型", "上下文", "窗口", "json", '{"k":', "[1,", "2]}", "def"]
WORDS += ["f(x):", "return", "x"]


def conversation(
    seed: int, turns: int = 30, tool_every: int = 3, big_tool: int = 400, rounds: int = 1
) -> list[BaseMessage]:
    """A chat with tool turns every ``tool_every`` turns, each of 1 to ``rounds`` tool rounds (an agent's)."""
    rng = random.Random(seed)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    out: list[BaseMessage] = [SystemMessage("You are helpful. " + text(20), id="sys")]
    for t in range(turns):
        out.append(HumanMessage(text(rng.randint(5, 40)), id=f"u{t}"))
        for r in range((rng.randint(1, rounds) if rounds > 1 else 1) if t % tool_every == 0 else 0):
            tag = f"{t}" if r == 0 else f"{t}r{r}"
            calls = [
                {"name": "search", "args": {"q": text(3)}, "id": f"call{tag}_{k}"} for k in range(rng.randint(1, 2))
            ]
            out.append(AIMessage("", tool_calls=calls, id=f"a{tag}"))
            out.extend(
                ToolMessage(text(rng.randint(big_tool // 2, big_tool)), tool_call_id=c["id"], id=f"r{c['id']}")
                for c in calls
            )
        out.append(AIMessage(text(rng.randint(5, 60)), id=f"b{t}"))
    return out


def assert_tool_pairs_intact(before: list[BaseMessage], after: list[BaseMessage]) -> None:
    answered = {m.tool_call_id for m in before if isinstance(m, ToolMessage)}
    called: set[str] = set()
    for message in after:
        if isinstance(message, AIMessage):
            called.update(c["id"] for c in message.tool_calls if c["id"])
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in called, f"orphan tool result {message.tool_call_id}"
    present = {m.tool_call_id for m in after if isinstance(m, ToolMessage)}
    for message in after:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                assert call["id"] not in answered or call["id"] in present, f"call {call['id']} lost its result"


@pytest.mark.parametrize("window", [800, 2000, 6000])
def test_plan_fits_by_the_exact_counter_and_keeps_what_must_stay(window: int) -> None:
    messages = conversation(1)
    messages[5] = pin(messages[5])
    plan = fit(messages, counter=COUNTER, context_window=window, reserve_output=100, model=None)
    counter = get_counter(COUNTER)
    assert plan.fits
    assert counter.count_messages(plan.messages) == plan.tokens_after <= window - 100
    assert plan.messages[0] == messages[0]
    assert any(m.id == messages[5].id and is_pinned(m) for m in plan.messages)
    last_user = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
    assert last_user in plan.messages
    assert_tool_pairs_intact(messages, plan.messages)


def test_every_removed_token_is_reported() -> None:
    messages = conversation(2, big_tool=1500)
    plan = fit(messages, counter=COUNTER, context_window=3000, reserve_output=200, model=None)
    assert plan.steps, "the conversation was over budget, so some step must have run"
    assert plan.steps[0].tokens_before == plan.tokens_before
    for earlier, later in zip(plan.steps, plan.steps[1:], strict=False):
        assert earlier.tokens_after == later.tokens_before
    assert plan.steps[-1].tokens_after == plan.tokens_after
    dropped = {label for step in plan.steps for label in step.dropped_ids}
    kept = {m.id for m in plan.messages}
    assert dropped == {m.id for m in messages} - kept
    truncated = {label for step in plan.steps for label in step.truncated_ids}
    assert all(label.startswith("rcall") for label in truncated)


def test_truncated_tool_output_keeps_the_full_value_in_artifact() -> None:
    messages = conversation(3, turns=6, big_tool=3000)
    plan = fit(
        messages,
        counter=COUNTER,
        context_window=4000,
        reserve_output=0,
        model=None,
        strategies=["truncate_tool_output"],
    )
    shortened = [m for m in plan.messages if isinstance(m, ToolMessage) and m.artifact is not None]
    assert shortened
    originals = {m.id: m for m in messages}
    counter = get_counter(COUNTER)
    for message in shortened:
        original = originals[message.id]
        assert message.artifact == original.content
        assert "tokens of tool output cut by ctxwin" in message.text
        cut = int(message.text.split("[… ")[1].split(" tokens")[0])
        assert cut > 0
        assert counter.count_text(message.text) < counter.count_text(original.text)
        head = message.text.split("\n[…")[0]
        assert original.text.startswith(head)


def test_failing_summarizer_never_becomes_the_summary() -> None:
    secret = "SECRET-ERROR-TEXT"

    def broken(_: list[BaseMessage]) -> str:
        raise RuntimeError(secret)

    messages = conversation(4)
    plan = fit(messages, counter=COUNTER, context_window=1500, reserve_output=0, model=None, summarizer=broken)
    summarize = next(s for s in plan.steps if s.name == "summarize")
    assert summarize.skipped and not summarize.summarized_ids
    assert any("summarizer raised RuntimeError" in w for w in plan.warnings)
    assert all(secret not in m.text for m in plan.messages)
    assert plan.fits  # trim still did its job

    empty = fit(messages, counter=COUNTER, context_window=1500, reserve_output=0, model=None, summarizer=lambda _: "  ")
    assert any("returned no text" in w for w in empty.warnings)
    assert not any(is_summary(m) for m in empty.messages)


def test_summary_records_ids_and_is_extended_incrementally() -> None:
    seen: list[list[BaseMessage]] = []

    def recording(messages: list[BaseMessage]) -> str:
        seen.append(messages)
        return f"summary of {len(messages)} messages"

    messages = conversation(5)
    planner = Planner(counter=COUNTER, context_window=2500, reserve_output=0, summarizer=recording, keep_last=6)
    first = planner.plan(messages)
    [summary] = [m for m in first.messages if is_summary(m)]
    replaced = summary.response_metadata["ctxwin_summary"]["summarized_ids"]
    assert replaced and set(replaced).isdisjoint({m.id for m in first.messages})
    assert first.messages[0].id == "sys" and summary in first.messages[1:3]  # (after the ledger's block, if any)
    step = next(s for s in first.steps if s.name == "summarize")
    assert sorted(step.summarized_ids) == sorted(replaced)

    grown = [*first.messages, *conversation(6, turns=8)[1:]]
    calls = len(seen)
    second = planner.plan(grown)
    # one call for the cut, given only the newly cut messages; the earlier summary is the new one's prefix
    assert len(seen) == calls + 1 and not any(is_summary(m) for m in seen[-1])
    assert {m.id for m in seen[-1]} <= {m.id for m in grown[2:]}
    [new_summary] = [m for m in second.messages if is_summary(m)]
    assert new_summary.text == f"{summary.text}\nsummary of {len(seen[-1])} messages"
    assert set(replaced) <= set(new_summary.response_metadata["ctxwin_summary"]["summarized_ids"])
    assert "extending the summary" in next(s for s in second.steps if s.name == "summarize").notes[0]


def test_async_summarizer_with_aplan() -> None:
    async def summarize(messages: list[BaseMessage]) -> str:
        await asyncio.sleep(0)
        return "async summary"

    messages = conversation(7)
    plan = asyncio.run(
        Planner(counter=COUNTER, context_window=2000, reserve_output=0, summarizer=summarize).aplan(messages)
    )
    assert any(is_summary(m) and "async summary" in m.text for m in plan.messages)
    assert plan.fits


def test_extractive_summary_is_capped() -> None:
    messages = conversation(8, turns=40)
    planner = Planner(
        counter=COUNTER, context_window=1500, reserve_output=0, keep_last=4, strategies=["summarize", "trim"],
        ledger_share=0,  # (the room a ledger block takes changes what is left beside the summary)
    )
    planner.strategies[0].max_summary_tokens = 60  # type: ignore[attr-defined]
    plan = planner.plan(messages)
    [summary] = [m for m in plan.messages if is_summary(m)]
    body = summary.text.split("\n", 1)[1]
    assert get_counter(COUNTER).count_text(body) <= 60


@pytest.mark.parametrize("window", [250, 400, 700])
def test_summary_is_capped_at_the_room_left_so_summarising_never_breaks_a_fit(window: int) -> None:
    counter = get_counter(COUNTER)
    for seed in range(4):
        messages = conversation(seed, turns=20)
        trimmed = Planner(counter=counter, context_window=window, reserve_output=0, strategies=["trim"]).plan(messages)
        assert trimmed.fits  # the must-keep part fits this window
        plan = Planner(
            counter=counter, context_window=window, reserve_output=0, strategies=["summarize", "trim"]
        ).plan(messages)
        assert plan.fits and counter.count_messages(plan.messages) <= window
        step = plan.steps[0]
        assert step.summarized_ids or (step.skipped and "no room for a summary" in step.notes[0])


def test_must_keep_too_big() -> None:
    messages = [SystemMessage("word " * 500), HumanMessage("hi")]
    plan = fit(messages, counter=COUNTER, context_window=300, reserve_output=0, model=None)
    assert not plan.fits
    assert plan.messages == messages
    assert any("what must stay alone needs" in w for w in plan.warnings)
    with pytest.raises(BudgetExceeded, match="budget allows 300") as info:
        fit(messages, counter=COUNTER, context_window=300, reserve_output=0, model=None, strict=True)
    assert info.value.tokens > info.value.limit == 300


def test_model_defaults_and_openai_output() -> None:
    raw = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}]
    plan = fit(raw, model="gpt-4o", output="openai")
    assert plan.messages == raw
    assert plan.fits and not plan.steps
    assert plan.budget.context_window == 128_000 and plan.budget.reserve_output > 0
    assert plan.budget.safety_margin == 0  # an exact counter needs no margin


def test_tools_are_taken_out_of_the_budget() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"}}},
            },
        }
    ]
    messages = conversation(9)
    plan = fit(messages, model="gpt-4o", context_window=2000, reserve_output=0, tools=tools)
    counter = get_counter("gpt-4o")
    assert plan.budget.tools_tokens > 0
    assert counter.count_messages(plan.messages, tools=tools) == plan.tokens_after <= 2000


def test_with_tools_budgets_each_set_of_tools_once() -> None:
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    planner = Planner(counter=COUNTER, context_window=2000, reserve_output=0)
    variant = planner.with_tools(tools)
    assert variant.budget.tools_tokens == get_counter(COUNTER).count_tools(tools) > 0
    assert planner.budget.tools_tokens == 0  # the original is unchanged
    assert planner.with_tools([dict(t) for t in tools]) is variant  # equal tools: the same planner, not recounted
    assert variant.with_tools(tools) is variant and planner.with_tools(None) is planner


def test_approximate_counter_gets_a_safety_margin() -> None:
    plan = fit([HumanMessage("hi")], model="claude-3-5-sonnet")
    assert plan.counter.startswith("approximate")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"counter": COUNTER, "context_window": 100, "reserve_output": -1}, "reserve_output"),
        ({"counter": COUNTER, "context_window": 100, "reserve_output": 100}, "smaller than the context window"),
        ({"counter": COUNTER}, "context_window is required"),
        ({"model": "gpt-nonexistent-9"}, "gpt-nonexistent-9"),
        ({"counter": COUNTER, "context_window": 100, "strategies": ["shred"]}, "shred"),
        ({"counter": COUNTER, "context_window": 100, "output": "xml"}, "output"),
        ({}, "needs a model name or a counter"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Planner(**kwargs)


def test_bad_messages_name_the_index() -> None:
    with pytest.raises(ValueError, match=r"messages\[1\]"):
        fit([{"role": "user", "content": "x"}, {"role": "nobody", "content": "y"}], model="gpt-4o")


def test_input_is_never_mutated() -> None:
    messages = conversation(10, big_tool=2000)
    snapshot = json.dumps([m.model_dump() for m in messages], default=str)
    fit(messages, counter=COUNTER, context_window=1000, reserve_output=0, model=None, keep_last=4)
    assert json.dumps([m.model_dump() for m in messages], default=str) == snapshot


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), window=st.integers(300, 5000), turns=st.integers(1, 25))
def test_plan_invariants(seed: int, window: int, turns: int) -> None:
    messages = conversation(seed, turns=turns)
    rng = random.Random(seed)
    for i in rng.sample(range(1, len(messages)), k=min(2, len(messages) - 1)):
        if not isinstance(messages[i], (ToolMessage, AIMessage)):
            messages[i] = pin(messages[i])
    plan = fit(messages, counter=COUNTER, context_window=window, reserve_output=0, model=None)
    counter = get_counter(COUNTER)
    assert counter.count_messages(plan.messages) == plan.tokens_after
    must = [m for m in messages if is_pinned(m) or m.id == "sys"]
    must.append(next(m for m in reversed(messages) if isinstance(m, HumanMessage)))
    assert all(any(k.id == m.id for k in plan.messages) for m in must)
    need = counter.count_messages(must)
    if need <= window:
        assert plan.fits
    assert_tool_pairs_intact(messages, plan.messages)
    ids = [m.id for m in plan.messages if not is_recalled(m) and not is_ledger(m)]
    order = {m.id: i for i, m in enumerate(messages)}
    assert ids == sorted(ids, key=lambda i: order[i]), "order kept"
    assert convert_to_messages(plan.messages) == plan.messages
