"""The facts rule (ctxwin.strategies._facts): what counts as a rare, checkable string, in any script."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.strategies._facts import MIN_CHARS, RARE_MESSAGES, find_facts, items, message_text

IP = "10.0.0.17"


@pytest.mark.parametrize(
    ("text", "fact", "kind"),
    [
        ("see https://status.acme.io/incidents/8841.", "https://status.acme.io/incidents/8841", "url"),
        ("write to priya.raman@acme-corp.io today", "priya.raman@acme-corp.io", "email"),
        ("the file /srv/ledger/exports/q3.csv is empty", "/srv/ledger/exports/q3.csv", "path"),
        ("open report_final.pdf", "report_final.pdf", "file"),
        ("due 2025-03-15, not later", "2025-03-15", "date"),
        ("due March 15, 2025 at noon", "March 15, 2025", "date"),
        ("截止日期是2025年3月15日。", "2025年3月15日", "date"),
        ("meet at 14:30 UTC", "14:30 UTC", "time"),
        ("it took 250 ms", "250 ms", "quantity"),
        ("the bill is $14,250.00.", "$14,250.00", "quantity"),
        ("金额为14250元", "14250元", "quantity"),
        ("I can spend at most 63k EUR", "63k EUR", "quantity"),
        ("my PIN is 7731", "7731", "number"),
        ("order 48213 shipped", "48213", "id"),
        ("call +49 301 2345 678 now", "+49 301 2345 678", "phone"),
        ("host 10.24.7.193 is down", "10.24.7.193", "ip"),
        ("My ticket is INC-48213.", "INC-48213", "id"),
        ("工单号是ABC-12345。", "ABC-12345", "id"),  # no word edge between 是 and A for \b: ASCII edges find it
        ("念のため：ticketはXQZ-55555です。", "XQZ-55555", "id"),
        ("deploy v4.18.2-rc3 first", "v4.18.2-rc3", "id"),
        ("order 48213921 shipped", "48213921", "id"),
        ("fixed in #4821", "#4821", "id"),
        ("call reconcile_ledger() again", "reconcile_ledger()", "symbol"),
        ("PaymentGateway.refund raised", "PaymentGateway.refund", "symbol"),
        ("set maxRetries to three", "maxRetries", "symbol"),
        ("ask Priya Raman about it", "Priya Raman", "name"),
    ],
)
def test_each_kind_of_fact_is_found_verbatim(text: str, fact: str, kind: str) -> None:
    assert (fact, kind) in items(text)


@pytest.mark.parametrize(
    "text",
    ["Hello there, how are you today?", "pi is 3.14 or so", "The Next steps are below.", "Thanks Bob", "ok 12", "v1"],
)
def test_plain_words_short_items_and_decimals_are_no_facts(text: str) -> None:
    assert items(text) == []


def test_a_fact_is_rare_and_knows_whether_the_user_stated_it() -> None:
    messages = [
        SystemMessage("Always answer about /srv/app/config.yaml first."),
        HumanMessage("My ticket is INC-48213 and the host is db-prod-07.internal."),
        AIMessage("Checking db-prod-07.internal.", tool_calls=[{"name": "ping", "args": {"ip": IP}, "id": "c1"}]),
        ToolMessage("10.0.0.17 replied in 12 ms", tool_call_id="c1"),
        *[HumanMessage(f"still /srv/app/config.yaml? ({n})") for n in range(RARE_MESSAGES)],
    ]
    facts = {f.text: f for f in find_facts(messages)}
    assert facts["INC-48213"].user and facts["INC-48213"].messages == (1,)
    assert facts["db-prod-07.internal"].user and facts["db-prod-07.internal"].messages == (1, 2)
    assert not facts["10.0.0.17"].user and facts["10.0.0.17"].messages == (2, 3)  # a tool call's arguments count
    assert "/srv/app/config.yaml" not in facts  # in RARE_MESSAGES + 1 messages: context, not a fact
    assert "ping" in message_text(messages[2])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ09 .-_/:@#$€,\n()+工是ABCdefxyz")), max_size=300))
def test_every_item_is_a_long_enough_substring_of_its_text(text: str) -> None:
    for item, _ in items(text):
        assert item in text and len(item) >= MIN_CHARS


@pytest.mark.parametrize("unit", ["a-", "a.", "a_", "/a", "1.", "1:1", "Aa ", "a@", "+1 ", "$1,", "Jan 1 ", "ab1-"])
def test_reading_is_linear_on_repetitive_text(unit: str) -> None:
    # a pattern that rescans the rest of a word from each of its starts takes minutes here; linear takes ~0.1 s
    text = unit * 50_000
    started = time.perf_counter()
    items(text)
    assert time.perf_counter() - started < 10
