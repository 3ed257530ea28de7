"""Property: whatever the history and the budget, the hook either hands the model a non-empty LangChain history
within the budget (system prompt and tools counted), holding the newest user message, the newest tool round after
it and whole tool pairs, or raises ``BudgetExceeded`` for a request over it; it never returns the untrimmed history
when that is over."""

from __future__ import annotations

from typing import Any

import pytest
from agent_support import MODEL, SYSTEM_PROMPT, TOOLS, Call, RecordingChatModel, check_call, filler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxwin import BudgetExceeded, get_counter
from ctxwin.integrations.langchain import pre_model_hook
from ctxwin.recall._inject import RECALL_KEY
from ctxwin.strategies._ledger import LEDGER_KEY

TOOL_DEFINITIONS = RecordingChatModel().bind_tools(TOOLS).kwargs["tools"]  # type: ignore[attr-defined]


@st.composite
def histories(draw: Any) -> list[BaseMessage]:
    """Turns of a user message, then tool rounds (parallel calls, long results) and an answer; the last turn may
    stop after its tool results (the agent is mid-turn)."""
    messages: list[BaseMessage] = []
    turns = draw(st.integers(1, 8))
    for turn in range(turns):
        messages.append(HumanMessage(f"Turn {turn}: " + filler(turn, draw(st.integers(1, 300))), id=f"u{turn}"))
        for round_ in range(draw(st.integers(0, 2))):
            ids = [f"c{turn}-{round_}-{k}" for k in range(draw(st.integers(1, 3)))]
            calls = [{"name": "build_log", "args": {"turn": turn}, "id": i, "type": "tool_call"} for i in ids]
            messages.append(AIMessage("", tool_calls=calls, id=f"a{turn}-{round_}"))
            for i in ids:
                messages.append(ToolMessage(filler(len(i), draw(st.integers(1, 1500))), tool_call_id=i, id=f"t{i}"))
        if turn < turns - 1 or draw(st.booleans()):
            messages.append(AIMessage("Answer " + filler(turn, draw(st.integers(1, 200))), id=f"r{turn}"))
    return messages


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), budget=st.integers(150, 4000))
def test_the_hook_fits_or_refuses(history: list[BaseMessage], budget: int) -> None:
    hook = pre_model_hook(MODEL, tools=TOOLS, prompt=SYSTEM_PROMPT, context_window=budget, reserve_output=0)
    counter = get_counter(MODEL)
    system = SystemMessage(SYSTEM_PROMPT)
    try:
        fitted = hook.invoke({"messages": history})["llm_input_messages"]
    except BudgetExceeded as error:
        assert error.tokens > budget == error.limit  # a refused turn says what it needs, not what was kept
        assert counter.count_messages([system, *history], tools=TOOL_DEFINITIONS) > budget
        return
    check_call(Call([system, *fitted], TOOL_DEFINITIONS), budget, history)
    # The newest user message and the newest tool round after it whole, at the end (a tool output maybe shortened:
    # a copy with the same id); older messages, older rounds of the turn included, only from history.
    last_user = max(i for i, m in enumerate(history) if isinstance(m, HumanMessage))
    rounds = [i for i, m in enumerate(history) if i > last_user and isinstance(m, AIMessage) and m.tool_calls]
    newest_round = [m.id for m in history[rounds[-1] :]] if rounds else []
    assert history[last_user].id in {m.id for m in fitted}
    assert [m.id for m in fitted[len(fitted) - len(newest_round) :]] == newest_round
    recalled = [m for m in fitted if RECALL_KEY in m.response_metadata]  # excerpts of what was left out
    told = [m for m in fitted if LEDGER_KEY in m.response_metadata]  # the ledger of what was told
    assert len(recalled) <= 1 and len(told) <= 1
    assert {m.id for m in fitted if m not in recalled and m not in told} <= {m.id for m in history}
