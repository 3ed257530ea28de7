"""Recall on any text, through ``fit``, a session, the CLI and the LiteLLM hook: lone surrogates (what a JSON
``\\ud800`` escape gives), NUL characters and noncharacters stored and searched; one folding of case, diacritics,
Unicode normalisation and compatibility forms for the index and the check; one word rule for one-off plans and
sessions (a script written without spaces bounds a word written against it)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner, fit
from ctxwin.recall import RecallStore, is_recalled
from ctxwin.recall._terms import py_term_counts
from ctxwin.recall._text import fold, storable

COUNTER = "tiktoken:o200k_base"
BUDGET = 1_500


def conversation(fact: str, question: str, *, turns: int = 24) -> list[BaseMessage]:
    """A fact said early, turns of filler that push it out of ``BUDGET``, then ``question``."""
    filler: list[BaseMessage] = []
    for turn in range(turns):
        filler += [HumanMessage(f"Turn {turn}: the nightly export is slow again. " + "We looked at the workers. " * 8),
                   AIMessage("Noted. " + "The queue drains within the hour once the workers restart. " * 4)]
    return [SystemMessage("You are terse."), HumanMessage(fact), AIMessage("Noted."), *filler,
            HumanMessage(question)]


def recalled_text(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.text) for m in messages if is_recalled(m))


def fitted(messages: list[BaseMessage]) -> list[BaseMessage]:
    # ledger_share=0 (here and in sessions below): the ledger's block would carry the fact recall is asked for
    plan = fit(messages, counter=COUNTER, model=None, context_window=BUDGET, reserve_output=0, ledger_share=0)
    assert plan.fits and plan.messages[-1] is messages[-1]
    return plan.messages


def session_planned(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The request a session sends for ``messages`` given turn by turn (cuts on the way)."""
    session = Planner(counter=COUNTER, context_window=BUDGET, reserve_output=0, ledger_share=0).session()
    for start in range(0, len(messages) - 1, 6):
        session.add_messages(messages[start : min(start + 6, len(messages) - 1)])
        session.plan()
    session.add_messages(messages[-1:])
    plan = session.plan()
    assert plan.fits
    return plan.messages


SURROGATE_FACT = "Badge export: the Zurich office code is ZX-4471 \ud800 (the old feed wrote that)."


def test_a_lone_surrogate_is_stored_and_searched_escaped_in_fit_and_in_a_session(tmp_path: Path) -> None:
    messages = conversation(SURROGATE_FACT, "What was the Zurich office code?")
    for request in (fitted(messages), session_planned(messages)):
        recall = recalled_text(request)
        assert "ZX-4471" in recall and "\\ud800" in recall and "\ud800" not in recall
        json.dumps([str(m.text) for m in request if m is not messages[1]], ensure_ascii=False).encode("utf-8")
    RecallStore(tmp_path / "recall.db").add([HumanMessage("before \udfff\ud800 after", id="m\ud800"),
                                              HumanMessage("nothing")])
    store = RecallStore(tmp_path / "recall.db")  # a store on disk, opened again
    (found,) = store.search("\udfff\ud800")  # the query escaped the same way finds it
    assert found.text == "before \\udfff\\ud800 after" and found.message_id == "m\\ud800"
    assert store.message("m\ud800")[0].position == 0


def test_a_session_with_a_lone_surrogate_plans_every_turn_after_its_first_cut() -> None:
    session = Planner(counter=COUNTER, context_window=BUDGET, reserve_output=0, ledger_share=0).session()
    session.add_messages(conversation(SURROGATE_FACT, "How is the export?")[:-1])
    cuts = 0
    for turn in range(12):
        session.add_messages([HumanMessage(f"Question {turn}: anything about the Zurich office code? " + "x " * 80)])
        plan = session.plan()
        cuts += plan.cache.cut
        assert plan.fits
        session.add_messages([AIMessage("It was in the export.")])
    assert cuts >= 2
    assert "ZX-4471" in session.recall_tool.run({"query": "Zurich ZX-4471 badge"}) + recalled_text(plan.messages)


# What a conversation file's JSON may hold that UTF-8 cannot (a lone surrogate) or that is rare (NUL,
# noncharacters); the text around a planted word.
ODD = st.sampled_from(["\ud800", "\udfff", "\x00", "\ufffe", "\uffff", "\ufdd0", "\U0010ffff"])
texts = st.lists(st.one_of(st.characters(), ODD), max_size=40).map("".join)


@settings(max_examples=60, deadline=None)
@given(before=texts, after=texts)
@example(before="\ud800", after="\x00\ufffe")
def test_any_text_around_a_word_is_stored_and_the_word_found(before: str, after: str) -> None:
    store = RecallStore()
    store.add([HumanMessage(f"{before} qx7781 {after}", id=f"id{before}"), AIMessage(after or "-"),
               ToolMessage(before or "-", tool_call_id=f"call{after}", name=f"tool{before}")])
    found = store.search(f"qx7781 {before}")
    assert found and found[0].position == 0 and "qx7781" in found[0].text
    for excerpt in found:
        json.dumps(excerpt.as_dict(), ensure_ascii=False).encode("utf-8")
    store.message(f"call{after}")
    store.message(f"id{before}")


# Written one way, asked another: diacritics, NFC and NFD, full-width and compatibility forms, case folding.
FOLDED = [
    ("Zürich", "Zurich"),
    ("Zurich", "Zürich"),
    (unicodedata.normalize("NFD", "Zürich"), unicodedata.normalize("NFC", "Zürich")),
    (unicodedata.normalize("NFC", "Zürich"), unicodedata.normalize("NFD", "Zürich")),
    ("ＺＵＲＩＣＨ", "zurich"),
    ("Zurich", "ｚｕｒｉｃｈ"),
    ("ﬁligree", "filigree"),
    ("Straße", "strasse"),
    ("STRASSE", "straße"),
    ("Ελλάδα", "ελλαδα"),
    ("ЁЛКА", "ёлка"),
]


@pytest.mark.parametrize(("written", "asked"), FOLDED)
def test_the_index_and_the_check_fold_alike(written: str, asked: str) -> None:
    store = RecallStore()
    store.add([HumanMessage(f"The {written} office code is ZX-4471."), HumanMessage("nothing here")])
    found = store.search(asked, min_score=1.0)
    assert found and "ZX-4471" in found[0].text, (written, asked)


def test_what_folding_keeps_apart_dotless_i_and_the_marks_of_cyrillic_letters() -> None:
    """No locale rules: "İ" is "i" with a dot above, which folding takes off; "ı" is not "i", nor "I" "ı". A mark is
    taken off Latin and Greek letters only: Cyrillic "й" is not "и", "ё" not "е"."""
    store = RecallStore()
    store.add([HumanMessage("The İstanbul office code is ZX-4471."), HumanMessage("The ıspanak order is 12."),
               HumanMessage("Ёлка 7 and мой 8.")])
    assert "ZX-4471" in store.search("istanbul", min_score=1.0)[0].text
    assert "ZX-4471" in store.search("ISTANBUL", min_score=1.0)[0].text
    assert store.search("ispanak") == [] and store.search("ISPANAK") == []
    assert "12" in store.search("ıspanak", min_score=1.0)[0].text
    assert store.search("елка") == [] and store.search("мои") == []
    assert store.search("ёлка", min_score=1.0) and store.search("МОЙ", min_score=1.0)


@pytest.mark.parametrize(("written", "asked"), [("Zürich", "Zurich"), ("Zurich", "Zürich"),
                                                (unicodedata.normalize("NFD", "Zürich"), "Zürich"),
                                                ("ＺＵＲＩＣＨ", "Zurich"), ("Straße", "strasse")])
def test_fit_and_a_session_recall_a_fact_written_with_another_form(written: str, asked: str) -> None:
    messages = conversation(f"The {written} office code is ZX-4471.", f"What was it for {asked}?")
    assert "ZX-4471" in recalled_text(fitted(messages))
    assert "ZX-4471" in recalled_text(session_planned(messages))


@pytest.mark.parametrize("fact", ["ครับPostgreSQLครับ version 15.4-rc2 ครับ", "𠀀𠀁PostgreSQL𠀀 version 15.4-rc2",
                                  "请记住PostgreSQL的version是15.4-rc2。"])
def test_a_word_written_against_unspaced_script_is_found_in_fit_as_in_a_session(fact: str) -> None:
    messages = conversation(fact, "What was the PostgreSQL version?")
    assert "15.4-rc2" in recalled_text(fitted(messages))
    assert "15.4-rc2" in recalled_text(session_planned(messages))


# Latin, digits, an underscore and punctuation beside Thai (with its vowel marks), Han (BMP and Extension B),
# Hangul, kana, accented letters and a lone surrogate.
AROUND = st.text(alphabet="ab1_ .-éÉ是の글ครั𠀀𠀁\ud800😀", max_size=6)


@settings(max_examples=200, deadline=None)
@given(left=AROUND, right=AROUND)
@example(left="ครับ", right="ครับ")
@example(left="𠀀𠀁", right="")
def test_one_word_rule_for_the_index_the_check_and_the_one_off_count(left: str, right: str) -> None:
    text = f"{left}Zurich{right}"
    # what recall reads: a lone surrogate as its escape (so "\ud800Zurich" is one word, as in a JSON file)
    counted = py_term_counts([fold(storable(text))], ["zurich"], [True])[0] is not None
    store = RecallStore()
    store.add([HumanMessage(text)])
    assert bool(store.search("zurich")) == counted, text


def chat(messages: list[BaseMessage]) -> list[dict[str, str]]:
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [{"role": roles[m.type], "content": str(m.text)} for m in messages]


@pytest.mark.slow
def test_the_cli_fits_a_file_with_a_lone_surrogate(tmp_path: Path) -> None:
    source = tmp_path / "conversation.json"
    # json.dumps writes a lone surrogate as the escape "\ud800", as a conversation file from another program would
    source.write_text(json.dumps(chat(conversation(SURROGATE_FACT, "What was the Zurich office code?"))))
    assert "\\ud800" in source.read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "ctxwin", "fit", str(source), "-c", COUNTER, "--context-window",
                           str(BUDGET), "--reserve", "0", "--json", "-o", str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=120, env={"CTXWIN_LOAD_PLUGINS": ""})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "ZX-4471" in json.dumps(report["recall"]) or "ZX-4471" in (tmp_path / "out.json").read_text()


@pytest.mark.slow  # importing LiteLLM takes seconds
def test_the_litellm_hook_fits_a_body_with_a_lone_surrogate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM's import fetches its price list otherwise
    pytest.importorskip("litellm")
    from ctxwin.integrations.litellm import ContextWindowHook

    messages = conversation(SURROGATE_FACT, "What was the Zurich office code?")
    body = {"model": "gpt-4o", "messages": chat(messages)}
    hook = ContextWindowHook("gpt-4o", context_window=BUDGET, reserve_output=0)
    sent = asyncio.run(hook.async_pre_call_hook(None, None, body, "acompletion"))["messages"]
    assert sent[-1]["content"] == messages[-1].text
    assert any("ZX-4471" in str(m["content"]) and "\\ud800" in str(m["content"]) for m in sent)
    json.dumps(sent, ensure_ascii=False).encode("utf-8")
