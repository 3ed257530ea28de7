"""Property tests over random conversations (issue 19): whatever the tool pairs, pins, interrupting user messages,
budgets, summarizer and keep_last, a plan that says it fits is a request the provider accepts, within budget."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import fit
from ctxwin.strategies._pairs import find_broken_pairs
from ctxwin.strategies._pins import pin
from ctxwin.strategies._salience import extractive_summarizer

from .test_planner import COUNTER, WORDS

TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]


def random_conversation(seed: int) -> tuple[list[BaseMessage], int]:
    """Turns with tool calls (some parallel, some interrupted by a user message before their results), pins on any
    message, and now and then an orphan result or an unanswered call before the last turn; and where the last
    turn starts."""
    rng = random.Random(seed)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    out: list[BaseMessage] = [SystemMessage("system " + text(10), id="sys")]
    turns = rng.randint(1, 12)
    last_turn = 0
    for t in range(turns):
        last = t == turns - 1
        if last:
            last_turn = len(out)
        out.append(HumanMessage(text(rng.randint(2, 30)), id=f"u{t}"))
        if rng.random() < 0.6:
            ids = [f"c{t}_{k}" for k in range(rng.randint(1, 2))]
            out.append(AIMessage(text(rng.randint(0, 4)), id=f"a{t}",
                                 tool_calls=[{"name": "search", "args": {"q": text(2)}, "id": i} for i in ids]))
            if rng.random() < 0.25 and not last:
                out.append(HumanMessage("wait, " + text(5), id=f"x{t}"))  # interrupts the call
            out += [ToolMessage(text(rng.choice([5, 60, 400, 1200])), tool_call_id=i, id=f"r{i}") for i in ids]
        if not last and rng.random() < 0.1:
            out.append(ToolMessage("stray", tool_call_id=f"ghost{t}", id=f"g{t}"))
        if not last and rng.random() < 0.1:
            out.append(AIMessage("", tool_calls=[{"name": "search", "args": {}, "id": f"never{t}"}], id=f"n{t}"))
        out.append(AIMessage(text(rng.randint(3, 50)), id=f"b{t}"))
    for i in rng.sample(range(1, len(out)), k=min(rng.randint(0, 2), len(out) - 1)):
        if not out[i].id.startswith(("g", "n")):  # type: ignore[union-attr]  # a broken pair is repaired, pin or not
            out[i] = pin(out[i])
    return out, last_turn


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    window=st.integers(120, 6_000),
    summarize=st.booleans(),
    keep_last=st.none() | st.integers(0, 8),
    tools=st.booleans(),
)
def test_a_plan_that_fits_is_a_valid_request_within_budget(
    seed: int, window: int, summarize: bool, keep_last: int | None, tools: bool
) -> None:
    messages, last_turn = random_conversation(seed)
    kwargs: dict[str, Any] = {"summarizer": extractive_summarizer} if summarize else {}
    plan = fit(messages, counter=COUNTER, model=None, context_window=window, reserve_output=0,
               keep_last=keep_last, tools=TOOLS if tools else None, **kwargs)
    counter = get_counter(COUNTER)
    exact = counter.count_messages(plan.messages, tools=TOOLS if tools else None)
    assert exact == plan.tokens_after
    if not plan.fits:
        return
    assert exact <= plan.budget.max_input_tokens  # (i)
    assert not find_broken_pairs(plan.messages)  # (ii) no orphan result, no unanswered call
    assert not any(w.startswith("repair_tool_pairs: the fitting steps") for w in plan.warnings), "a step broke a pair"
    kept = {m.id for m in plan.messages}
    assert all(m.id in kept for m in messages if m.additional_kwargs.get("pinned"))  # (iii)
    turn = [m.id for m in messages[last_turn:]]  # (iv) whole, or a warning says what could not be kept
    assert all(i in kept for i in turn) or any("the last turn" in w for w in plan.warnings)
    if keep_last:
        tail = messages[-keep_last:]
        verbatim = all(any(k is m for k in plan.messages) for m in tail)
        assert verbatim or any(w.startswith(f"keep_last={keep_last}") for w in plan.warnings)
