"""The offline summarizer (ctxwin.strategies._salience) and the summaries that extend each other, with the real
o200k tokenizer: planted facts survive a fit into a small budget, the summary fills its room and says what it
covers, small talk gives way to requests, and an earlier summary stays the next one's prefix."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planted_support import planted

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner, fit
from ctxwin.strategies._facts import find_facts
from ctxwin.strategies._salience import extractive_summary
from ctxwin.strategies._summarize import MAX_EXTENDED_SHARE, is_summary

COUNTER = get_counter("tiktoken:o200k_base")
CHAIN = ["filter", "truncate_tool_output", "summarize", "trim"]
JAPANESE = "ダッシュボードの数字がまだ古いです。設定を変更してもキャッシュが無効化されていないようです。"


def request_text(messages: list[BaseMessage]) -> str:
    return "\n".join(m.text + "".join(str(c["args"]) for c in getattr(m, "tool_calls", [])) for m in messages)


@pytest.mark.parametrize("style", ["chat", "agent", "multilingual"])
def test_planted_facts_survive_a_fit_into_a_small_budget(style: str) -> None:
    kept = trimmed = total = 0
    for seed in range(3):
        messages, values = planted(seed, style)
        budget = COUNTER.count_messages(messages) // 3
        plan = fit(messages, counter=COUNTER, model=None, context_window=budget, reserve_output=0, strategies=CHAIN)
        assert plan.fits and COUNTER.count_messages(plan.messages) <= budget
        assert any(is_summary(m) for m in plan.messages)
        text = request_text(plan.messages)
        kept += sum(v in text for v in values)
        trim = fit(messages, counter=COUNTER, model=None, context_window=budget, reserve_output=0, strategies=["trim"])
        trimmed += sum(v in request_text(trim.messages) for v in values)
        total += len(values)
    assert kept >= 0.8 * total, (kept, total)
    assert trimmed < kept  # the facts sit in the first 70%: a plain trim drops most of them


def test_the_summary_says_what_it_covers_and_fills_its_room() -> None:
    messages, _ = planted(4, "agent")
    plan = fit(messages, counter=COUNTER, model=None, context_window=4_000, reserve_output=0, strategies=CHAIN)
    [summary] = [m for m in plan.messages if is_summary(m)]
    step = next(s for s in plan.steps if s.name == "summarize")
    header = summary.text.split("\n")[1]
    assert header.startswith(f"(covers {len(step.summarized_ids)} messages: ") and " user" in header
    assert plan.fits and plan.budget_used > 0.95


def test_requests_and_errors_are_kept_before_small_talk() -> None:
    messages: list[BaseMessage] = [SystemMessage("You help with exports.")]
    for n in range(20):
        messages += [HumanMessage("Hi!"), AIMessage("Hello! How can I help you today with anything at all?")]
        messages += [HumanMessage("Danke."), AIMessage("You are welcome, glad that this was useful to you.")]
        if n == 7:
            messages += [HumanMessage("Please make sure the export never runs before the backup finishes."),
                         AIMessage("", tool_calls=[{"name": "run_export", "args": {}, "id": "c1"}]),
                         ToolMessage("Traceback (most recent call last):\nPermissionError: export dir is read-only",
                                     tool_call_id="c1"),
                         AIMessage("We decided to move the export to the scratch volume instead.")]
    text = extractive_summary(messages, 120, COUNTER.count_text).text
    assert "never runs before the backup finishes" in text
    assert "PermissionError" in text and "decided to move the export" in text
    assert "Hi!" not in text and "Danke." not in text  # too short to say anything


def test_facts_inside_other_scripts_and_tool_outputs_are_found() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("部署完成了，但是仪表盘上的数字还是旧的。我的工单号是ABC-12345，请记住。" * 1),
        AIMessage("", tool_calls=[{"name": "search", "args": {"q": "deploy"}, "id": "c1"}]),
        ToolMessage('{\n "results": [],\n "incident_ref": "SUP-90210",\n "status": "open"\n}', tool_call_id="c1"),
        *[AIMessage(f"{JAPANESE}（{n}回目）") for n in range(30)],
    ]
    text = extractive_summary(messages, 120, COUNTER.count_text).text
    assert "ABC-12345" in text and "SUP-90210" in text


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["human", "ai"]), st.text(min_size=0, max_size=200)), min_size=1, max_size=30),
    st.integers(min_value=1, max_value=400),
)
def test_the_summary_is_within_its_cap(turns: list[tuple[str, str]], cap: int) -> None:
    messages = [HumanMessage(text) if kind == "human" else AIMessage(text) for kind, text in turns]
    extract = extractive_summary(messages, cap, COUNTER.count_text)
    header = COUNTER.count_text(extractive_summary(messages, 1, COUNTER.count_text).text)  # the coverage line only
    assert COUNTER.count_text(extract.text) <= max(cap, header)
    assert extract.messages == len(messages) and extract.text.startswith(f"(covers {len(messages)} messages")


def _plan(messages: list[BaseMessage], window: int) -> tuple[list[BaseMessage], SystemMessage, list[str]]:
    plan = Planner(counter=COUNTER, context_window=window, reserve_output=0, strategies=CHAIN,
                   ledger_share=0).plan(messages)  # (a ledger block would make room the summary then need not)
    [summary] = [m for m in plan.messages if is_summary(m)]
    assert plan.fits
    return plan.messages, summary, next(s for s in plan.steps if s.name == "summarize").notes


def test_each_cut_extends_the_previous_summary_byte_for_byte_until_it_outgrows_its_share() -> None:
    messages, values = planted(5, "chat", turns=120)
    users = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    cuts = [*users[20::12], len(messages)]
    fitted, summary, _ = _plan(messages[: cuts[0]], 2_000)
    extended = rewritten = 0
    for start, end in itertools.pairwise(cuts):
        fitted, new, notes = _plan([*fitted, *messages[start:end]], 2_000)
        if COUNTER.count_message(summary) <= MAX_EXTENDED_SHARE * 2_000:
            assert new.text.startswith(summary.text + "\n") and "extending the summary" in notes[0]
            extended += 1
        else:  # too large to stay whole: rewritten from its own lines and the new messages
            assert not new.text.startswith(summary.text) and "rewriting the earlier summary" in notes[0]
            rewritten += 1
        assert set(summary.response_metadata["ctxwin_summary"]["summarized_ids"]) < set(
            new.response_metadata["ctxwin_summary"]["summarized_ids"])
        summary = new
    assert extended and rewritten
    assert sum(v in request_text(fitted) for v in values) >= 0.8 * len(values)  # facts survive the rewrites too


def test_the_facts_a_summary_dropped_are_named_the_users_first() -> None:
    messages, values = planted(7, "agent")
    plan = fit(messages, counter=COUNTER, model=None, context_window=3_000, reserve_output=0, strategies=CHAIN,
               summarizer=lambda span: "The user had questions about the exports.")
    notes = next(s for s in plan.steps if s.name == "summarize").notes
    [dropped] = [n for n in notes if n.startswith("the summary dropped")]
    user_values = [v for v in values[:5] if v in dropped]
    assert user_values and "stated by the user" in dropped


@pytest.mark.slow
@pytest.mark.parametrize("window", [3_000, 8_000, 24_000])
def test_the_summary_is_given_an_eighth_of_the_budget_by_default(window: int) -> None:
    messages, _ = planted(8, "agent", turns=120)
    plan = fit(messages, counter=COUNTER, model=None, context_window=window, reserve_output=0, strategies=CHAIN)
    [summary] = [m for m in plan.messages if is_summary(m)]
    assert plan.fits
    assert COUNTER.count_message(summary) >= 0.9 * max(512, window // 8)  # at least what was reserved, nearly


def test_a_system_message_in_the_span_is_summarised_too() -> None:
    messages: list[BaseMessage] = [HumanMessage("Could you look at why the nightly export is slower than last week?")]
    messages += [SystemMessage("Operator note: the escalation contact is ops.4412@example.org.")]
    messages += [AIMessage(f"I think the cache is not invalidated when the settings change ({n}).") for n in range(40)]
    text = extractive_summary(messages, 80, COUNTER.count_text).text
    assert "ops.4412@example.org" in text and "- system: Operator note" in text


def test_the_built_in_summarizer_reports_the_facts_it_left_out() -> None:
    messages, _ = planted(9, "agent")
    plan = fit(messages, counter=COUNTER, model=None, context_window=3_000, reserve_output=0, strategies=CHAIN,
               ledger_share=0)  # (with the ledger, the summary quotes none of what the ledger carries)
    step = next(s for s in plan.steps if s.name == "summarize")
    [summary] = [m for m in plan.messages if is_summary(m)]
    [dropped] = [n for n in step.notes if n.startswith("the summary dropped")]
    replaced = [m for m in messages if m.id in set(step.summarized_ids)]
    facts = find_facts(replaced)
    lost = [f for f in facts if f.text not in summary.text]
    assert dropped.startswith(f"the summary dropped {len(lost):,} of the {len(facts):,} facts")
    assert all(f.text in dropped for f in lost[:3] if f.user)  # the user's are named first
