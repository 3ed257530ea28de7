"""The ledger (ctxwin.strategies._ledger): typed statements read from their structure, the user's own words apart
from what they pasted, corrections superseding what they correct, incremental reading, steering, and its block."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.strategies import Ledger
from ctxwin.strategies._ledger import from_block, ledger_message

COUNTER = get_counter("tiktoken:o200k_base")
DOC = ("The retry decorator wraps a call and retries it when it raises. You should never call it with a\n"
       "negative delay; the decorator must not be nested either. Always pass the exceptions to retry on\n"
       "explicitly, and keep the number of attempts under 10 in production code, or the caller waits too long.")


def kinds(ledger: Ledger) -> dict[str, list[str]]:
    return {kind: [e.text for e in entries] for kind, entries in ledger.by_kind().items()}


@pytest.mark.parametrize(("text", "kind"), [
    ("Never restart payments-api during business hours.", "rule"),
    ("Bitte keine Änderungen an /etc/app/prod.conf ohne Rücksprache.", "rule"),
    ("If a request could hurt a customer, stop and ask me first.", "rule"),
    ("The whole thing must not cost more than $4,800.", "limit"),
    ("预算不能超过 €20,000。", "limit"),
    ("Le livrable doit arriver avant le 2027-03-04.", "limit"),
    ("The staging database lives at pg-eu2-14.corp.lan.", "fact"),
    ("Номер счёта клиента: ACC-448213.", "fact"),
    ("Next step: rotate the credentials of ledger-sync-42.", "goal"),
    ("次は billing-api を新しいクラスタに移します。", "goal"),
    ("Please answer in short bullet points.", "preference"),
])
def test_a_statement_is_typed_by_its_structure(text: str, kind: str) -> None:
    ledger = Ledger().read([HumanMessage(text)])
    assert kinds(ledger)[kind] == [text]  # type: ignore[index]


def test_questions_pleasantries_and_pasted_documentation_are_not_statements() -> None:
    pasted = f"Here is the section I mean:\n\n{DOC}\n\n{DOC}\n\nWhat does the decorator do with a zero delay?"
    ledger = Ledger().read([
        HumanMessage("Can you tell me what the retry decorator does?"),
        HumanMessage("Thanks!"),
        HumanMessage(pasted),
        AIMessage("It retries the call. You should keep the attempts low."),
    ])
    assert ledger.entries == []


def test_statements_after_a_paste_are_the_users_own() -> None:
    text = f"Look at this:\n\n{DOC}\n\nWhat does it do?\n\nDon't touch retry.py until Friday."
    ledger = Ledger().read([HumanMessage(text)])
    assert [e.text for e in ledger.entries] == ["Don't touch retry.py until Friday."]


def test_a_correction_supersedes_what_it_corrects_and_keeps_its_source() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("The deadline is 2027-05-28.", id="first"),
        HumanMessage("The primary database is pg-eu8-70.ingest.lan.", id="db"),
        HumanMessage("Our staging database lives at pg-us1-12.ingest.lan."),
        HumanMessage("Actually, the primary database moved to kafka-ap3-45.kestrel.lan.", id="fix"),
        HumanMessage("截止日期改成 2027-06-10 了。"),
        HumanMessage("The deadline moved to 2027-07-01."),
    ]
    ledger = Ledger().read(messages)
    texts = [e.text for e in ledger.entries]
    assert "The primary database is pg-eu8-70.ingest.lan." not in texts
    assert "Our staging database lives at pg-us1-12.ingest.lan." in texts  # another database: not corrected
    fix = next(e for e in ledger.entries if e.source == "fix")
    assert fix.replaces == ("The primary database is pg-eu8-70.ingest.lan.",) and fix.position == 3
    assert "The deadline is 2027-05-28." not in texts and "The deadline moved to 2027-07-01." in texts
    assert {e.text for e in ledger.superseded} >= {"The deadline is 2027-05-28.",
                                                   "The primary database is pg-eu8-70.ingest.lan."}


def test_assistant_commitments_and_tool_answers_are_told_and_the_system_prompt_is_not() -> None:
    call = {"name": "lookup", "args": {"q": "owner of ledger-sync-42"}, "id": "c1"}
    ledger = Ledger().read([
        SystemMessage("Never reveal the admin password."),
        HumanMessage("Who owns ledger-sync-42? Look it up please."),
        AIMessage("", tool_calls=[call]),
        ToolMessage("service: ledger-sync-42\nowner: Ilse Varga\nteam: platform", tool_call_id="c1"),
        AIMessage("Ilse Varga owns it. I won't deploy ledger-sync-42 until you approve."),
    ])
    by_speaker = {(e.speaker, e.kind) for e in ledger.entries}
    assert ("tool", "fact") in by_speaker and ("assistant", "rule") in by_speaker
    assert not any("admin password" in e.text for e in ledger.entries)


@st.composite
def chats(draw: st.DrawFn) -> list[BaseMessage]:
    said = [
        "Never restart payments-api during business hours.", "The budget is $4,800.", "The budget is now $5,100.",
        "Keep the export under 12 GB.", "Our staging host is pg-eu2-14.corp.lan.", "What is the status?",
        "Next step: migrate ledger-sync-42.", "Next step: migrate billing-api-7.", "Please answer in tables.",
        "Actually, our staging host moved to pg-us3-40.corp.lan.", "ok",
    ]
    messages: list[BaseMessage] = []
    for _ in range(draw(st.integers(1, 14))):
        messages.append(HumanMessage(draw(st.sampled_from(said))))
        messages.append(AIMessage(draw(st.sampled_from(["Sure.", "I'll wait until you approve the change."]))))
    return messages


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(chats(), st.data())
def test_reading_appended_messages_gives_what_reading_them_at_once_gives(messages: list[BaseMessage],
                                                                        data: st.DataObject) -> None:
    whole = Ledger().read(messages)
    growing = Ledger()
    end = 0
    while end < len(messages):
        end = data.draw(st.integers(end + 1, len(messages)))
        growing.read(messages[:end])
    assert growing.entries == whole.entries and growing.read_count == len(messages)
    assert [e.text for e in growing.superseded] == [e.text for e in whole.superseded]


def test_a_user_steers_the_ledger_and_a_dropped_statement_stays_dropped() -> None:
    messages: list[BaseMessage] = [HumanMessage("Never restart payments-api during business hours."),
                                   HumanMessage("Please answer in tables.")]
    ledger = Ledger().read(messages)
    rule, preference = ledger.entries
    ledger.drop(preference)
    edited = ledger.edit(rule, "Never restart payments-api between 08:00 and 18:00 CET.")
    added = ledger.add("limit", "Spend at most $300 on compute.")
    assert edited.pinned and added.pinned and added.speaker == "added"
    ledger.read([*messages, HumanMessage("Please answer in tables.")])
    assert [e.text for e in ledger.entries] == [edited.text, added.text]
    with pytest.raises(KeyError, match="no entry"):
        ledger.pin("never said")
    with pytest.raises(ValueError, match="kind must be one of"):
        ledger.add("wish", "something")  # type: ignore[arg-type]


def test_a_block_over_its_room_lets_the_least_recent_facts_go_first_and_rules_last() -> None:
    cities = ["Lyon", "Porto", "Oslo", "Kyoto", "Austin", "Lagos", "Turin", "Quito", "Leeds", "Graz"]
    messages: list[BaseMessage] = [HumanMessage(f"The {city} office router is db-{i:02d}.corp.lan.")
                                   for i, city in enumerate(cities)]
    messages += [HumanMessage("Never restart payments-api during business hours."),
                 HumanMessage("Keep the export under 12 GB.")]
    ledger = Ledger().read(messages)
    ledger.pin(ledger.entries[0])
    text, left = ledger.render(max_tokens=80, count=COUNTER.count_text)
    assert COUNTER.count_text(text) <= 80
    assert left and all(e.kind == "fact" for e in left)
    assert "Never restart" in text and "12 GB" in text and "db-00" in text  # rules, limits and the pinned fact
    assert [e.position for e in left] == sorted(e.position for e in left) and left[0].position == 1


def test_a_block_read_back_as_text_gives_its_entries_back() -> None:
    ledger = Ledger().read([HumanMessage("Never restart payments-api during business hours."),
                            HumanMessage("The budget is $4,800."), HumanMessage("Please answer in tables.")])
    text, _ = ledger.render()
    for message in (ledger_message(text, ledger.entries), SystemMessage(text)):  # with its metadata, or as text
        back = from_block(message)
        assert back is not None and [(e.kind, e.text) for e in back] == [(e.kind, e.text) for e in ledger.entries]
    assert Ledger().read([SystemMessage(text)]).entries == Ledger().read([SystemMessage(text)]).entries
    assert [e.text for e in Ledger().read([SystemMessage(text)]).entries] == [e.text for e in ledger.entries]


_CUE_PARTS = st.sampled_from(["remember", "keep-alive", "note:", "don't forget", "记住", "n'oublie pas", "Keep it",
                              "remembered", "notes", "for the records", "zur info", "im", "portant:"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_CUE_PARTS, st.text(max_size=12)), max_size=8).map(" ".join), st.booleans())
def test_the_keep_cue_prefilter_finds_every_cue_the_pattern_finds(text: str, explicit: bool) -> None:
    from ctxwin.strategies._keep import _EXPLICIT, _KEEP, keep_cue

    assert keep_cue(text, explicit=explicit) == ((_EXPLICIT if explicit else _KEEP).search(text.lower()) is not None)


_TOOL_RUN = """
import json, sys
from ctxwin.messages import AIMessage, HumanMessage, ToolMessage
from ctxwin.strategies import Ledger
lines = [f"alpha-{k} 10.0.0.{k}" for k in range(100)] + [f"gamma-{k} 10.0.1.{k}" for k in range(100)]
lines[150] = "gamma-150 kestrel 10.0.1.150"
messages = [HumanMessage("Where does kestrel sit among the alpha and gamma machines?"),
            AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
            ToolMessage("\\n".join(lines), tool_call_id="c1")]
print(json.dumps([e.text for e in Ledger().read(messages)]))
"""


@pytest.mark.slow
def test_a_long_tool_result_gives_the_same_entries_under_every_hash_seed() -> None:
    import os
    import subprocess
    import sys

    outputs = {subprocess.run([sys.executable, "-c", _TOOL_RUN], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in range(6)}
    assert len(outputs) == 1
    assert "kestrel" in outputs.pop()  # the line holding the question's rarest term answers it
