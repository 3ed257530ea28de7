"""What the user asked to keep (ctxwin.strategies._keep) and the summaries that keep it, on dense text the test did
not write: Python's own reference documentation (``pydoc_data``, part of every CPython) pasted into a chat."""

from __future__ import annotations

import random
from pydoc_data.topics import topics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from ctxwin.planner import fit
from ctxwin.strategies._base import Budget
from ctxwin.strategies._facts import items
from ctxwin.strategies._keep import KEEP_CUES, QueryMatch, keep_cue, kept_pieces, query_terms
from ctxwin.strategies._salience import extractive_summary, pieces, stated_tokens
from ctxwin.strategies._summarize import MAX_SUMMARY_SHARE, SUMMARY_SHARE, Summarize

COUNTER = get_counter("tiktoken:o200k_base")
CHAIN = ["filter", "truncate_tool_output", "summarize", "trim"]

# Requests to keep, as people write them (none of these sentences is in the cue list as written).
KEEP_REQUESTS = [
    "Remember that the lease reference is {v}.",
    "Please log it under {v}.",
    "The staging host is {v}. Keep it.",
    "Note that our account is {v}.",
    "Don't forget: the invoice is {v}.",
    "N'oubliez pas : la référence du bail est {v}.",
    "Retiens bien le numéro {v}, s'il te plaît.",
    "Merk dir bitte die Vertragsnummer {v}.",
    "Bitte nicht vergessen, das Ticket ist {v}.",
    "No olvides que el pedido es {v}.",
    "Ten en cuenta que la cuenta es {v}.",
    "请记住，合同编号是 {v}。",
    "别忘了工单号 {v}。",
    "覚えておいてください、契約番号は{v}です。",
    "忘れないでね、チケットは{v}。",
]
PLAIN = [
    "The build takes about four minutes on the laptop.",
    "I remembered wrongly, the config was elsewhere.",  # "remembered" is no request to keep
    "Die Tabelle hat zwei Spalten.",
    "La fonction renvoie une liste.",
    "这个函数返回一个列表。",
    "この関数はリストを返します。",
]


@pytest.mark.parametrize("sentence", KEEP_REQUESTS)
def test_keep_requests_are_recognised_in_every_language(sentence: str) -> None:
    assert keep_cue(sentence.format(v="LWL-48213"))


@pytest.mark.parametrize("sentence", PLAIN)
def test_plain_sentences_are_no_keep_requests(sentence: str) -> None:
    assert not keep_cue(sentence)


@pytest.mark.slow
@given(st.sampled_from(KEEP_CUES), st.text(max_size=40), st.text(max_size=40))
@settings(max_examples=60, deadline=None)
def test_a_cue_anywhere_after_a_space_is_found(cue: str, before: str, after: str) -> None:
    assert keep_cue(f"{before} {cue.upper() if cue.isascii() else cue} {after}")


def _doc(rng: random.Random, chars: int = 3_000) -> str:
    keys = sorted(topics)
    text = ""
    while len(text) < chars:
        text += topics[keys[int(rng.random() * len(keys))]][:1_500] + "\n\n"
    return text


def test_note_that_in_a_paste_is_no_request_but_the_users_own_words_around_it_are() -> None:
    rng = random.Random(1)
    paste = _doc(rng) + "\nNote that the default encoding is UTF-8 in every mode.\n\n" + _doc(rng)
    text = f"Here is the section:\n\n{paste}\n\nWhat does this change?"
    assert not any(kept_pieces(pieces(text), text))
    text = f"Here is the section:\n\n{paste}\n\nWhat does this change? Remember: my ticket is ABC-12345."
    asked = pieces(text)
    kept = [piece for (piece, _), k in zip(asked, kept_pieces(asked, text), strict=True) if k]
    assert any("ABC-12345" in piece for piece in kept)
    assert all(len(piece) < 200 for piece in kept)


def test_an_explicit_request_inside_a_paste_is_kept_and_so_is_a_documentation_cue_beside_an_id() -> None:
    rng = random.Random(2)

    def kept(request: str) -> list[str]:
        text = f"Look at this:\n\n{_doc(rng)}\n\n{request}\n\n{_doc(rng)}\n\nThoughts?"
        split = pieces(text)
        factual = [any(kind == "id" for _, kind in items(piece)) for piece, _ in split]
        return [p for (p, _), k in zip(split, kept_pieces(split, text, factual), strict=True) if k]

    assert kept("Don't forget to log it under INC-48213.") == ["Don't forget to log it under INC-48213."]
    assert kept("Bitte nicht vergessen: Vertrag VX-2231.") == ["Bitte nicht vergessen: Vertrag VX-2231."]
    assert kept("Note that the lease reference is LWL-48213.") == ["Note that the lease reference is LWL-48213."]
    assert kept("Note that os.path.join() accepts any number of parts.") == []


def test_query_terms_leave_out_function_words_and_pair_cjk_characters() -> None:
    assert query_terms("Going back to the Lyon warehouse lease: what was its reference number?") == {
        "lyon", "warehouse", "lease", "reference", "number"}
    assert {"合同", "同编", "编号"} <= query_terms("合同编号是什么？")
    scores = QueryMatch("the Lyon lease", ["Lyon lease ref LWL-1", "Lyon office", "nothing here"]).scores()
    assert scores[0] > scores[1] > scores[2] == 0


def _dense_chat(seed: int, requests: list[tuple[str, str]], turns: int = 24) -> list[BaseMessage]:
    """A chat pasting Python's reference documentation, with ``(sentence, value)`` keep requests added at the end
    of some long user messages and as turns of their own, in its first 70%."""
    rng = random.Random(seed)
    messages: list[BaseMessage] = [SystemMessage("You explain Python's documentation.")]
    for _ in range(turns):
        messages.append(HumanMessage(f"Here is a part of the reference:\n\n{_doc(rng)}\n\nWhat does it say?"))
        messages.append(AIMessage(" ".join(_doc(rng, 600).split()[:120])))
    for n, (sentence, value) in enumerate(requests):
        at = 1 + 2 * int(rng.random() * int(turns * 0.7))
        if n % 2:
            messages[at] = HumanMessage(f"{messages[at].text}\n\n{sentence.format(v=value)}")
        else:
            messages[at:at] = [HumanMessage(sentence.format(v=value)), AIMessage("Noted.")]
    return messages


def _values(rng: random.Random, n: int) -> list[str]:
    return [f"{''.join(chr(65 + int(rng.random() * 26)) for _ in range(3))}-{10_000 + int(rng.random() * 89_999)}"
            for _ in range(n)]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 4])
def test_a_summarising_fit_keeps_what_the_user_asked_to_keep(seed: int) -> None:
    rng = random.Random(seed)
    values = _values(rng, len(KEEP_REQUESTS))
    messages = _dense_chat(seed, list(zip(KEEP_REQUESTS, values, strict=True)))
    messages.append(HumanMessage("Thanks. Let's go on with the next chapter."))
    assert COUNTER.count_messages(messages) > 3 * 6_000
    plan = fit(messages, counter=COUNTER, model=None, context_window=6_000, reserve_output=0, strategies=CHAIN)
    assert plan.fits and COUNTER.count_messages(plan.messages) <= 6_000
    sent = "\n".join(m.text for m in plan.messages)
    assert [v for v in values if v not in sent] == []


@pytest.mark.slow
def test_the_newest_message_steers_what_the_summary_keeps() -> None:
    rng = random.Random(9)
    messages = _dense_chat(9, [])
    cities = ["Bergen", "Lyon", "Porto", "Kyoto", "Quito", "Graz", "Leeds", "Ghent", "Oslo", "Turin"]
    things = ["fleet contract", "warehouse lease", "payroll export", "backup bucket"]
    subjects = [f"{c} {t}" for c in cities for t in things]
    values = _values(rng, len(subjects))
    for n, (subject, value) in enumerate(zip(subjects, values, strict=True)):
        at = 2 + 2 * (n % 16)
        messages[at] = AIMessage(f"{messages[at].text} I checked: the {subject} has ticket {value}.")
    span = messages[1:-4]
    plain = extractive_summary(span, 300, COUNTER.count_text).text
    missing = [(s, v) for s, v in zip(subjects, values, strict=True) if v not in plain]
    assert len(missing) > len(subjects) // 2  # the room holds few of them
    for subject, value in missing[:5]:
        asked = extractive_summary(span, 300, COUNTER.count_text, f"Going back to the {subject}: which ticket?").text
        assert value in asked
        assert COUNTER.count_text(asked) <= 300


@pytest.mark.slow
def test_the_summarys_room_grows_with_what_the_user_asked_to_keep_within_its_cap() -> None:
    rng = random.Random(5)
    values = _values(rng, len(KEEP_REQUESTS))
    quiet = _dense_chat(5, [])
    asking = _dense_chat(5, list(zip(KEEP_REQUESTS, values, strict=True)))
    assert stated_tokens(quiet, COUNTER.count_text) < stated_tokens(asking, COUNTER.count_text)
    budget = Budget(context_window=6_000, reserve_output=0)
    step = Summarize()
    base = step._cap(budget)
    assert base == int(SUMMARY_SHARE * 6_000)
    assert step._cap(budget, 300) == base + 300
    assert step._cap(budget, 10**6) == int(MAX_SUMMARY_SHARE * 6_000)
    assert Summarize(max_summary_tokens=400)._cap(budget, 10**6) == 400  # the user's cap is the cap
