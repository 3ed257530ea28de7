"""The ledger carried in plans: one block after the system prompt (and a session's head), before any summary, in
one-off fits of every chain and at every session cut; never a corrected value beside its correction; every request
fits by recount, tool pairs whole, the last user message kept; steered ledgers and summarizers given the ledger."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin import Ledger, Planner, fit
from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import FitConfig
from ctxwin.strategies._ledger import is_ledger
from ctxwin.strategies._pairs import find_broken_pairs
from ctxwin.strategies._summarize import is_summary

COUNTER = get_counter("tiktoken:o200k_base")
SUMMARIZING = ["filter", "truncate_tool_output", "summarize", "trim"]
FILLER = ("The nightly export ran long again and the dashboard numbers lag behind the warehouse by an hour or so. "
          "We looked at the worker logs and saw the retries pile up after midnight. ")
TOLD = [
    ("rule", "Never restart payments-api during business hours."),
    ("limit", "The whole migration must not cost more than $4,800."),
    ("fact", "Our staging database lives at pg-eu2-14.corp.lan."),
    ("goal", "Next step: rotate the credentials of ledger-sync-42."),
    ("preference", "Please answer in tables, with risk_owner_17 in the first column."),
    ("limit", "The deadline is 2027-05-28."),
]
CORRECTION = ("limit", "The deadline moved to 2027-07-01.")


def conversation(turns: int = 40, seed: int = 0, *, tools: bool = False) -> list[BaseMessage]:
    """A long chat (or agent run, with ``tools``) stating ``TOLD`` early and correcting the deadline later."""
    rng = random.Random(seed)
    messages: list[BaseMessage] = [SystemMessage("You help the platform team.", id="sys")]
    told = {3 * k + 1: text for k, (_, text) in enumerate(TOLD)}
    told[len(TOLD) * 3 + 4] = CORRECTION[1]
    for turn in range(turns):
        said = told.get(turn)
        messages.append(HumanMessage(said or f"Turn {turn}: what now? " + FILLER * rng.randint(1, 3), id=f"u{turn}"))
        if tools and turn % 2:
            call = {"name": "logs", "args": {"turn": turn}, "id": f"c{turn}"}
            messages += [AIMessage("", tool_calls=[call], id=f"a{turn}c"),
                         ToolMessage("log line\n" * 40, tool_call_id=f"c{turn}", id=f"t{turn}")]
        messages.append(AIMessage("Looking into it. " + FILLER, id=f"a{turn}"))
    messages.append(HumanMessage("Thanks, let's continue.", id="last"))
    return messages


def sent_text(messages: list[Any]) -> str:
    return "\n".join(m.text for m in messages)


def check_request(plan: Any, messages: list[BaseMessage], budget: int) -> None:
    sent = plan.messages
    assert plan.fits and COUNTER.count_messages(sent) == plan.tokens_after <= budget  # recounted
    assert not find_broken_pairs(sent) and sent[-1] is messages[-1]
    blocks = [k for k, m in enumerate(sent) if is_ledger(m)]
    assert len(blocks) <= 1
    if blocks:
        summaries = [k for k, m in enumerate(sent) if is_summary(m)]
        assert all(blocks[0] < k for k in summaries) and blocks[0] == 1  # after the system prompt


@pytest.mark.slow
def test_the_default_fit_carries_what_it_dropped_and_lists_it_by_kind_with_sources() -> None:
    messages = conversation()
    plan = fit(messages, counter=COUNTER, model=None, context_window=3_000, reserve_output=0)
    check_request(plan, messages, 3_000)
    text = sent_text(plan.messages)
    assert all(statement in text for _, statement in [*TOLD[:-1], CORRECTION])
    assert "2027-05-28" not in text  # the corrected deadline is not sent beside its correction
    assert plan.ledger is not None
    by_kind = plan.ledger.by_kind()
    assert {kind for kind, _ in TOLD} <= {kind for kind, entries in by_kind.items() if entries}
    assert next(e for e in plan.ledger.entries if "payments-api" in e.text).source == "u1"
    assert any(step.name == "ledger" and "carried" in step.notes[0] for step in plan.steps)
    assert "The deadline is 2027-05-28." in [e["text"] for e in plan.ledger.as_dict()["superseded"]]


@pytest.mark.slow
def test_the_summary_builds_on_the_ledger_and_quotes_nothing_it_carries_or_superseded() -> None:
    messages = conversation(tools=True)
    plan = fit(messages, counter=COUNTER, model=None, context_window=4_000, reserve_output=0, strategies=SUMMARIZING)
    check_request(plan, messages, 4_000)
    [summary] = [m for m in plan.messages if is_summary(m)]
    [block] = [m for m in plan.messages if is_ledger(m)]
    assert all(statement in block.text for _, statement in TOLD[:-1])
    assert not any(statement in summary.text for _, statement in TOLD) and "2027-05-28" not in summary.text


def test_without_a_ledger_share_nothing_is_carried() -> None:
    plan = fit(conversation(), counter=COUNTER, model=None, context_window=3_000, reserve_output=0, ledger_share=0)
    assert plan.ledger is None and not any(is_ledger(m) for m in plan.messages)
    assert "payments-api" not in sent_text(plan.messages)


def test_a_conversation_that_fits_is_sent_as_it_is() -> None:
    messages = conversation(turns=8)
    plan = fit(messages, counter=COUNTER, model=None, context_window=60_000, reserve_output=0)
    assert plan.messages == messages and plan.ledger is None


def test_bad_ledger_shares_are_refused_by_name() -> None:
    for value in (-0.1, 1, 1.5, "0.2", True):
        try:
            FitConfig(ledger_share=value)  # type: ignore[arg-type]
        except ValueError as exc:
            assert "ledger_share" in str(exc)
        else:
            raise AssertionError(f"ledger_share={value!r} accepted")


@pytest.mark.slow
def test_a_steered_ledger_sends_its_pinned_and_added_entries_and_not_what_was_dropped() -> None:
    messages = conversation()
    ledger = Ledger().read(messages)
    ledger.drop(next(e for e in ledger.entries if "tables" in e.text))
    ledger.add("rule", "Always write the change log before deploying.")
    plan = fit(messages, counter=COUNTER, model=None, context_window=3_000, reserve_output=0, ledger=ledger)
    text = sent_text(plan.messages)
    assert "Always write the change log before deploying." in text and "risk_owner_17" not in text
    assert len(ledger.entries) == len(Ledger().read(messages).entries)  # the caller's ledger is not changed


@pytest.mark.slow
def test_a_summarizer_taking_the_ledger_is_given_it() -> None:
    given_ledgers: list[Ledger] = []

    def summarizer(messages: list[BaseMessage], *, ledger: Ledger) -> str:
        given_ledgers.append(ledger)
        return "The team chased slow exports."

    plan = fit(conversation(), counter=COUNTER, model=None, context_window=3_000, reserve_output=0,
               summarizer=summarizer)
    assert plan.fits and given_ledgers
    assert any("payments-api" in e.text for e in given_ledgers[0].entries)
    assert fit(conversation(), counter=COUNTER, model=None, context_window=3_000, reserve_output=0,
               summarizer=lambda span: "plain").fits  # a summarizer without it is called as before


def replay(planner: Planner, messages: list[BaseMessage]) -> list[Any]:
    session = planner.session()
    plans = []
    for end in range(2, len(messages) + 1):
        if isinstance(messages[end - 1], HumanMessage):
            session.add_messages(messages[len(session):end])
            plans.append(session.plan())
    plans.append(session)
    return plans


@pytest.mark.slow
def test_a_session_carries_what_it_was_told_across_every_cut_and_keeps_its_block_between_cuts() -> None:
    messages = conversation(turns=90, seed=3)
    planner = Planner(counter=COUNTER, context_window=3_000, reserve_output=0, strategies=SUMMARIZING)
    *plans, session = replay(planner, messages)
    cuts = [k for k, plan in enumerate(plans) if plan.cache is not None and plan.cache.cut]
    assert len(cuts) >= 5
    assert session.ledger.read_count == len(messages)
    assert any("payments-api" in e.text for e in session.ledger.entries)
    for k, plan in enumerate(plans):
        assert plan.fits and COUNTER.count_messages(plan.messages) <= 3_000 and not find_broken_pairs(plan.messages)
        blocks = [m for m in plan.messages if is_ledger(m)]
        if k > cuts[1]:  # everything told was said before the second cut, and dropped since
            text = sent_text(plan.messages)
            assert all(statement in text for _, statement in [*TOLD[:-1], CORRECTION]), k
            assert "2027-05-28" not in text
        if k and k not in cuts and blocks:
            assert any(b is m for b in blocks for m in plans[k - 1].messages)  # the same block until the next cut


@pytest.mark.slow
def test_a_paste_over_the_window_leaves_older_work_in_later_requests() -> None:
    messages = conversation(turns=30)
    paste = HumanMessage("Here is the whole dump:\n" + "lorem ipsum dolor sit amet " * 3_000, id="paste")
    later = [paste, AIMessage("That is a lot.", id="after"), HumanMessage("What was the first step again?", id="q")]
    plan = fit([*messages, *later], counter=COUNTER, model=None, context_window=6_000, reserve_output=0)
    ids = [m.id for m in plan.messages]
    assert plan.fits and ids[:-3] == [m.id for m in messages]  # every older message, around the placeholder
    assert "ctxwin" in plan.messages[ids.index("paste")].text
    assert "paste" in plan.messages[ids.index("paste")].text  # its recall handle
    assert any("too large to keep whole (paste)" in note for step in plan.steps for note in step.notes)
    session = Planner(counter=COUNTER, context_window=6_000, reserve_output=0).session()
    session.add_messages([*messages, *later])
    assert [m.id for m in session.plan().messages][:-3] == [m.id for m in messages]


@st.composite
def told_conversations(draw: st.DrawFn) -> list[BaseMessage]:
    turns = draw(st.integers(3, 30))
    messages = conversation(turns=turns, seed=draw(st.integers(0, 100)), tools=draw(st.booleans()))
    return messages


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(told_conversations(), st.integers(400, 6_000), st.sampled_from([None, SUMMARIZING]))
def test_every_request_fits_by_recount_with_pairs_whole_and_the_last_message_kept(
    messages: list[BaseMessage], budget: int, strategies: list[str] | None
) -> None:
    plan = fit(messages, counter=COUNTER, model=None, context_window=budget, reserve_output=0, strategies=strategies)
    must = COUNTER.count_messages([messages[0], messages[-1]])
    if must + 50 <= budget:
        check_request(plan, messages, budget)


def test_every_request_fits_on_a_few_examples() -> None:
    inner = test_every_request_fits_by_recount_with_pairs_whole_and_the_last_message_kept.hypothesis.inner_test
    for seed, budget in ((1, 1_500), (7, 700)):
        inner(conversation(turns=12, seed=seed, tools=bool(seed % 2)), budget, None)


def test_a_small_fit_carries_a_dropped_rule() -> None:
    messages = conversation(turns=12)
    plan = fit(messages, counter=COUNTER, model=None, context_window=900, reserve_output=0)
    check_request(plan, messages, 900)
    assert "Never restart payments-api during business hours." in sent_text(plan.messages)


def test_the_plan_summary_lists_the_ledger_by_kind_with_sources() -> None:
    messages = conversation(turns=12)
    plan = fit(messages, counter=COUNTER, model=None, context_window=900, reserve_output=0)
    ledger = plan.summary()["ledger"]
    rule = next(e for e in ledger["entries"]["rule"] if "payments-api" in e["text"])
    assert rule["source"] == "u1" and ledger["carried"] >= 1 and ledger["tokens"] > 0


def test_the_report_lists_the_ledger_by_kind_with_sources() -> None:
    messages = conversation(turns=12)
    plan = fit(messages, counter=COUNTER, model=None, context_window=900, reserve_output=0)
    assert plan.ledger is not None
    lines = str(plan).splitlines()
    [head] = [line for line in lines if line.startswith("ledger: ")]
    assert f"{len(plan.ledger.entries)} entries in force, {len(plan.ledger.carried)} carried" in head
    assert "  rule from u1 (carried): Never restart payments-api during business hours." in lines
    kinds = [line.split()[0] for line in lines if line.startswith("  ") and " from " in line]
    assert kinds == sorted(kinds, key=["rule", "limit", "fact", "goal", "preference"].index)  # by kind


@pytest.mark.slow
def test_a_sessions_block_goes_after_its_head_and_changes_only_at_a_cut() -> None:
    messages = conversation(turns=90, seed=5)
    # a model whose prompt cache a head can reach (a head needs its minimum cacheable prefix)
    planner = Planner("gpt-4o", context_window=3_000, reserve_output=0, strategies=SUMMARIZING, keep_first=0.5)
    session = planner.session()
    previous = None
    carried = 0
    for end in range(2, len(messages) + 1):
        if not isinstance(messages[end - 1], HumanMessage):
            continue
        session.add_messages(messages[len(session):end])
        plan = session.plan()
        sent = plan.messages
        blocks = [k for k, m in enumerate(sent) if is_ledger(m)]
        if blocks:
            carried += 1
            head = session.head
            assert blocks == [1 + len(head)] and all(a is b for a, b in zip(sent[1:], head, strict=False))
            assert all(blocks[0] < k for k, m in enumerate(sent) if is_summary(m))
            if previous is not None and not plan.cache.cut:
                assert sent[blocks[0]] is previous  # the same block until the next cut
            previous = sent[blocks[0]]
    assert carried and session.head


def test_a_deep_cut_gives_the_block_its_share_of_the_budget_not_of_the_cuts_aim() -> None:
    rules = ["Never restart the payments cluster during business hours.",
             "Always run the migration dry-run before touching production.",
             "Do not email customers about outages without legal review.",
             "Keep every database backup encrypted with the vault keys.",
             "Never merge into main on Fridays.",
             "Always page the on-call engineer when latency doubles.",
             "Do not rotate certificates while the auditors are connected.",
             "Never delete tenant archives older than the retention window.",
             "Always tag releases with the changelog summary.",
             "Do not share staging credentials over chat.",
             "Never scale the search nodes below three replicas.",
             "Always ask finance before renewing vendor contracts.",
             "Do not disable alerting on the billing queue.",
             "Never run load tests against the partner sandbox."]
    session = Planner(counter=COUNTER, context_window=3_000, reserve_output=0, low_water=0.3).session()
    session.add_messages([SystemMessage("You help the platform team.")])
    for rule in rules:
        session.add_messages([HumanMessage(rule), AIMessage("OK.")])
    cuts = []
    for turn in range(40):
        session.add_messages([HumanMessage(f"Turn {turn}: what now? " + FILLER * 2)])
        plan = session.plan()
        cuts += [plan] if plan.cache is not None and plan.cache.cut and plan.ledger is not None else []
        session.add_messages([AIMessage("Looking into it. " + FILLER)])
    assert len(cuts) >= 2
    plan = cuts[-1]
    assert plan.ledger is not None and len(plan.ledger.entries) == len(rules)
    assert not plan.ledger.left_out  # 0.15 of the cut's aim (900 tokens) would hold a few of them
    assert all(rule in sent_text(plan.messages) for rule in rules)
