"""Query-aware recall in plans and sessions, the recall tool, and masking with a handle: on conversations with
planted facts (tests/planner/planted_support.py), real tokenizers and real SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planted_support import planted

from ctxwin.counters import get_counter
from ctxwin.history import FileChatMessageHistory, SQLiteChatMessageHistory
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from ctxwin.planner import Planner, fit
from ctxwin.recall import RECALL_TOOL_NAME, is_recalled
from ctxwin.strategies._mask import MaskToolOutputs, is_masked
from ctxwin.strategies._pairs import find_broken_pairs

COUNTER = "tiktoken:o200k_base"
# Late questions naming what each planted fact was about (planted_support.FACTS, in order), and questions about
# things the conversations never mention.
QUESTIONS = ["Going back to my ticket: which one was it?", "What was the order number again?",
             "Welche Rechnung war noch offen?", "之前说的服务器是哪个？", "期限はいつでしたか？",
             "Which release did you note?", "Who is the contact now?", "Where was the export written?"]
NEVER = ["Going back to the Lyon warehouse lease: what was its reference number?",
         "Which Kubernetes namespace did the reconciler cronjob run in?",
         "What was the IBAN of the Hamburg supplier?", "里昂仓库的租约编号是多少？"]


def in_request(value: str, messages: list[BaseMessage]) -> bool:
    return any(value in str(m.text) for m in messages)


def fitted(messages: list[BaseMessage], budget: int, **options: object) -> object:
    return fit(messages, counter=COUNTER, model=None, context_window=budget, reserve_output=0, **options)


@pytest.mark.slow
@pytest.mark.parametrize("style", ["chat", "agent", "multilingual"])
@pytest.mark.parametrize("chain", [None, ["filter", "truncate_tool_output", "summarize", "trim"]])
def test_a_late_question_brings_back_the_fact_it_needs(style: str, chain: list[str] | None) -> None:
    found = asked = 0
    for seed in range(3):
        messages, values = planted(seed, style, turns=40)
        for n, value in enumerate(values):
            question = QUESTIONS[(seed + n) % len(QUESTIONS)]
            plan = fitted([*messages, HumanMessage(question)], 2_000, strategies=chain)
            assert plan.fits and plan.messages[-1].text == question
            asked += 1
            found += in_request(value, plan.messages)
    assert found >= 0.9 * asked, f"{found}/{asked}"


def test_the_plan_names_what_it_recalled_and_for_which_query() -> None:
    messages, _values = planted(1, "agent", turns=40)
    question = QUESTIONS[1]
    plan = fitted([*messages, HumanMessage(question)], 2_000)
    assert plan.recalled is not None and plan.recalled.query == question
    recall = next(m for m in plan.messages if is_recalled(m))
    assert all(label in recall.text for label in plan.recalled.labels)
    # the note names what came back, not the query: notes reach traces, which carry no message content
    recalled = next(step for step in plan.steps if step.name == "recall")
    assert question[:40] not in recalled.notes[0] and "excerpt" in recalled.notes[0]
    assert plan.summary()["recalled"] == plan.recalled.labels
    assert get_counter(COUNTER).count_messages(plan.messages) == plan.tokens_after <= 2_000
    assert not find_broken_pairs(plan.messages)


def test_questions_about_what_was_never_said_recall_almost_nothing() -> None:
    added = 0
    for style in ("chat", "agent", "multilingual"):
        messages, _ = planted(3, style, turns=40)
        for question in NEVER:
            plan = fitted([*messages, HumanMessage(question)], 2_000)
            added += plan.recalled.tokens if plan.recalled else 0
    assert added <= 0.01 * 12 * 2_000


def test_nothing_dropped_nothing_recalled_and_recall_share_zero_turns_it_off() -> None:
    messages, _values = planted(2, "chat", turns=40)
    asked = [*messages, HumanMessage(QUESTIONS[2])]
    assert fitted(asked, 200_000).recalled is None
    off = fitted(asked, 2_000, recall_share=0)
    assert off.recalled is None and not any(map(is_recalled, off.messages))
    with pytest.raises(ValueError, match="recall_share"):
        fitted(asked, 2_000, recall_share=1.5)


def test_a_recall_message_given_back_is_replaced_not_stacked() -> None:
    messages, _ = planted(1, "agent", turns=40)
    first = fitted([*messages, HumanMessage(QUESTIONS[1])], 2_000)
    again = fitted([*first.messages, AIMessage("It was that one."), HumanMessage(QUESTIONS[6])], 2_000)
    assert sum(map(is_recalled, again.messages)) <= 1


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 1_000), budget=st.integers(600, 6_000), style=st.sampled_from(["chat", "agent"]),
       share=st.sampled_from([0.05, 0.1, 0.3]), question=st.sampled_from(QUESTIONS + NEVER))
def test_recall_never_breaks_the_fit_the_pairs_or_the_last_user_message(
    seed: int, budget: int, style: str, share: float, question: str
) -> None:
    messages, _ = planted(seed, style, turns=25)
    asked = [*messages, HumanMessage(question)]
    plan = fitted(asked, budget, recall_share=share)
    counted = get_counter(COUNTER).count_messages(plan.messages)
    assert counted == plan.tokens_after and (counted <= budget or not plan.fits)
    assert plan.fits or not fitted(asked, budget, recall_share=0).fits
    assert not find_broken_pairs(plan.messages)
    assert plan.messages[-1] is asked[-1]
    recalled = [m for m in plan.messages if is_recalled(m)]
    assert len(recalled) <= 1 and (plan.recalled is None) == (not recalled)
    if plan.recalled:
        assert plan.recalled.tokens <= share * plan.budget.max_input_tokens


def session_turns(seed: int) -> list[list[BaseMessage]]:
    messages, _ = planted(seed, "agent", turns=40)
    turns: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage) or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def test_a_session_recalls_what_its_cuts_dropped_and_keeps_it_until_the_next_cut() -> None:
    planner = Planner(counter=COUNTER, context_window=3_000, reserve_output=0)
    _messages, values = planted(4, "agent", turns=40)
    session = planner.session()
    for turn in session_turns(4):
        session.add_messages(turn)
        session.plan()
    found = 0
    for n, value in enumerate(values):
        session.add_messages([HumanMessage(QUESTIONS[(4 + n) % len(QUESTIONS)])])
        plan = session.plan()
        found += in_request(value, plan.messages)
        assert plan.fits and not find_broken_pairs(plan.messages)
        session.add_messages([AIMessage("Here it is.")])
        following = session.plan()
        if not following.cache.cut:  # between cuts what was sent (its recall too) stays, byte for byte
            assert following.messages[: len(plan.messages)] == plan.messages
    assert found >= 0.75 * len(values)


def test_the_recall_tool_answers_in_every_form(tmp_path: Path) -> None:
    planner = Planner(counter=COUNTER, context_window=3_000, reserve_output=0)
    messages, _values = planted(5, "agent", turns=40)
    session = planner.session(messages)
    session.plan()
    tool = session.recall_tool
    assert tool.openai["function"]["name"] == RECALL_TOOL_NAME == tool.anthropic["name"]
    assert "query" in tool.anthropic["input_schema"]["properties"]
    dropped = next(m for m in messages if isinstance(m, ToolMessage) and not any(m is s for s in session._sent))
    assert dropped.text.splitlines()[0] in tool.run({"handle": dropped.tool_call_id})
    openai_call = {"id": "call_1", "type": "function",
                   "function": {"name": RECALL_TOOL_NAME, "arguments": json.dumps({"query": "order number"})}}
    answer = tool.answer(openai_call)
    assert answer.tool_call_id == "call_1" and answer.status == "success"
    anthropic_call = {"type": "tool_use", "id": "toolu_1", "name": RECALL_TOOL_NAME, "input": {"query": "Hamburg IBAN"}}
    assert "Nothing" in tool.answer(anthropic_call).text
    bad = tool.answer({"name": RECALL_TOOL_NAME, "args": {}, "id": "x"})
    assert bad.status == "error" and "query" in bad.text


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_a_session_backed_by_a_history_recalls_after_a_restart(tmp_path: Path, kind: str) -> None:
    def history() -> SQLiteChatMessageHistory | FileChatMessageHistory:
        if kind == "sqlite":
            return SQLiteChatMessageHistory(tmp_path / "h.db", "s1")
        return FileChatMessageHistory(tmp_path / "h.jsonl")

    planner = Planner(counter=COUNTER, context_window=3_000, reserve_output=0)
    messages, values = planted(6, "chat", turns=40)
    first = planner.session(history=history())
    first.add_messages(messages)
    first.plan()
    del first  # the process ends; the history stays on disk
    again = planner.session(history=history())
    assert len(again) == len(messages)
    again.add_messages([HumanMessage(QUESTIONS[6 % len(QUESTIONS)])])
    plan = again.plan()
    assert in_request(values[0], plan.messages) and plan.recalled is not None
    assert len(history().messages) == len(messages) + 1
    with pytest.raises(TypeError, match="history"):
        planner.session(history=[])


def test_masking_replaces_old_outputs_with_a_handle_the_tool_reads_back() -> None:
    messages, _ = planted(7, "agent", turns=30)
    planner = Planner(counter=COUNTER, context_window=4_000, reserve_output=0,
                      strategies=["filter", "mask_tool_outputs", "trim"])
    session = planner.session(messages)
    plan = session.plan()
    masked = [m for m in plan.messages if is_masked(m)]
    assert masked and plan.fits and not find_broken_pairs(plan.messages)
    original = next(m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == masked[0].tool_call_id)
    assert masked[0].tool_call_id in masked[0].text and masked[0].artifact == original.content
    assert original.text.splitlines()[-1] in session.recall_tool.run(handle=masked[0].tool_call_id)
    rounds = [i for i, m in enumerate(plan.messages) if isinstance(m, AIMessage) and m.tool_calls]
    assert not any(is_masked(m) for m in plan.messages[rounds[-3]:])  # the last three rounds stay whole
    with pytest.raises(ValueError, match="keep_rounds"):
        MaskToolOutputs(keep_rounds=-1)


# A question about a dropped fact that names it (an ID, said before), with words of how the user asks that the
# conversation never said (when it was said, where it went, what to do): they must not outweigh the fact's words.
ASIDES = ["What was my badge ID? I wrote it on a sticky note that I lost.",
          "Could you tell me the badge ID I shared right at the start?",
          "My badge ID, what was it? Dig through the older messages if needed.",
          "I forgot the badge ID. It was in my second message."]


@pytest.mark.slow
@pytest.mark.parametrize("chain", [None, ["filter", "trim"]])
def test_a_question_worded_with_words_never_said_still_recalls_its_fact(chain: list[str] | None) -> None:
    """One-off plans and a session: the dropped fact comes back for every phrasing, and a question that names what
    was never said (a place, an id) recalls nothing."""
    messages: list[BaseMessage] = [
        HumanMessage("Hello, I need help with some code."), AIMessage("Sure."),
        HumanMessage("Keep this for later: my badge ID is GB-5527-Q."), AIMessage("Noted."),
    ]
    for turn in range(12):
        code = " ".join(f"module_{turn}_{i}.py parses input" for i in range(60))
        messages += [HumanMessage(f"Turn {turn}: {code}"), AIMessage(f"Turn {turn} reviewed.")]
    # ledger_share=0: the ledger's block would carry the fact recall is asked for
    for question in ASIDES:
        plan = fitted([*messages, HumanMessage(question)], 1_500, strategies=chain, ledger_share=0)
        assert not in_request("GB-5527-Q", [m for m in plan.messages if not is_recalled(m)]), "the fact was dropped"
        assert in_request("GB-5527-Q", plan.messages), question
        session = Planner(counter=COUNTER, context_window=1_500, reserve_output=0, strategies=chain,
                          ledger_share=0).session()
        session.add_messages([*messages, HumanMessage(question)])
        assert in_request("GB-5527-Q", session.plan().messages), question
    for never in ("What was my Geneva badge ID? I wrote it on a sticky note.", "Which badge ID did QX-88 get?"):
        assert not in_request("GB-5527-Q", fitted([*messages, HumanMessage(never)], 1_500, strategies=chain,
                                                   ledger_share=0).messages)
