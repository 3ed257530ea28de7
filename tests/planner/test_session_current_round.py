"""A session's cut never drops the round the model must answer (the last user message and the tool round after it)
when the budget holds it beside what must stay, however large the session's head (a cut aims at its low water, and
a large head left no room there for the round)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.strategies._base import must_keep_with_partners

GPT4O = get_counter("gpt-4o")


def words(count: int, seed: int) -> str:
    return " ".join(f"w{seed}_{i}" for i in range(count))


@settings(max_examples=25, deadline=None)
@given(keep_first=st.sampled_from([0.2, 0.4, 0.6, 0.8]), user_words=st.integers(20, 300),
       output_words=st.integers(50, 1_200), turns=st.integers(3, 10))
def test_a_cut_sends_the_round_the_model_answers(keep_first: float, user_words: int, output_words: int,
                                                  turns: int) -> None:
    session = Planner("gpt-4o", context_window=4_000, reserve_output=0, keep_first=keep_first).session()
    session.add_messages([SystemMessage("You read files. " + words(40, 0))])
    for turn in range(turns):
        call = AIMessage("", tool_calls=[{"id": f"c{turn}", "name": "read", "args": {"turn": turn}}])
        output = ToolMessage(words(output_words, 100 + turn), tool_call_id=f"c{turn}")
        session.add_messages([HumanMessage(f"turn {turn} " + words(user_words, turn)), call, output])
        plan = session.plan()
        sent: list[BaseMessage] = plan.messages
        history = session.messages
        must = [history[i] for i in sorted(must_keep_with_partners(history))]
        round_fits = GPT4O.count_messages([*must, call, output]) <= plan.budget.max_input_tokens
        if plan.fits and round_fits:
            last = [m.tool_call_id if isinstance(m, ToolMessage) else type(m).__name__ for m in sent[-2:]]
            assert isinstance(sent[-2], AIMessage) and sent[-2].tool_calls == call.tool_calls, last
            assert isinstance(sent[-1], ToolMessage) and sent[-1].tool_call_id == f"c{turn}", last
        session.add_messages([AIMessage(f"answer {turn} " + words(30, 200 + turn))])
