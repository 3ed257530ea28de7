"""The recall store on real SQLite (FTS5): what it keeps of a message, ranking and relevance, CJK, handles."""

from __future__ import annotations

from pathlib import Path

from ctxwin.messages import AIMessage, HumanMessage, ToolMessage
from ctxwin.recall import RecallStore
from ctxwin.recall._store import QUERY_GRAMS, QUERY_WORDS, pieces, query_terms

LEASE = "Going back to the Lyon warehouse lease: what was its reference number?"


def conversation() -> list:
    return [
        HumanMessage("The Lyon warehouse lease has reference LY-2231-X; the landlord is Rhône Logistique.", id="u0"),
        AIMessage("", tool_calls=[{"name": "search_contracts", "args": {"q": "lease Lyon"}, "id": "call_7"}]),
        ToolMessage("hit 1: office lease Paris, ref PA-19\nhit 2: parking lease Lille, ref LI-4", tool_call_id="call_7",
                    name="search_contracts"),
        HumanMessage("请记住，深圳仓库的租约编号是 SZ-5521。", id="u3"),
        HumanMessage("念のため：大阪倉庫の契約番号はOS-7781です。", id="u4"),
        HumanMessage("The nightly export is slow again; the dashboard shows stale numbers.", id="u5"),
    ]


def test_a_question_finds_the_message_that_answers_it_with_where_it_was() -> None:
    store = RecallStore()
    store.add(conversation())
    best = store.search(LEASE)[0]
    assert "LY-2231-X" in best.text and (best.position, best.role, best.message_id) == (0, "user", "u0")
    calls = store.search("search_contracts Lyon", min_score=0.5)
    call = next(e for e in calls if e.position == 1)
    assert (call.tool, call.call_id) == ("search_contracts", "call_7") and "lease Lyon" in call.text
    result = next(e for e in store.search("parking Lille") if e.position == 2)
    assert (result.role, result.tool, result.call_id) == ("tool", "search_contracts", "call_7")


def test_questions_about_what_was_never_said_find_nothing_relevant() -> None:
    store = RecallStore()
    store.add(conversation())
    for question in ("Going back to the Madrid office lease: what was its reference number?",
                     "Which Kubernetes namespace did the billing cronjob run in?",
                     "What was the IBAN of the Hamburg supplier?"):
        assert store.search(question, min_score=0.5) == [], question


def test_chinese_and_japanese_questions_match_text_without_spaces() -> None:
    store = RecallStore()
    store.add(conversation())
    assert "SZ-5521" in store.search("深圳仓库的租约编号是什么？", min_score=0.5)[0].text
    assert "OS-7781" in store.search("大阪倉庫の契約番号は何でしたか", min_score=0.5)[0].text
    words, grams = query_terms("ip是多少 大阪倉庫")
    assert "ip" in words and "大阪倉" in grams and not any(len(g) != 3 for g in grams)


def test_a_word_written_against_cjk_text_is_a_word_of_its_own() -> None:
    store = RecallStore()
    store.add([HumanMessage("请记住，ip是 10.103.249.25。"), HumanMessage("nothing here")])
    assert "10.103.249.25" in store.search("which ip was it?")[0].text


def test_handles_read_a_message_whole_by_call_id_id_or_position() -> None:
    store = RecallStore()
    messages = conversation()
    store.add(messages)
    assert [e.position for e in store.message("call_7")] == [2]  # the call id names the result
    assert store.message("u3")[0].position == 3
    assert "LY-2231-X" in store.message("#0")[0].text
    assert store.message("call_404") == []


def test_adding_is_incremental_and_a_position_is_stored_once() -> None:
    store = RecallStore()
    messages = conversation()
    store.add(messages[:3])
    store.add(messages, skip={5})
    assert len(store) == 5 and 5 not in store
    store.add(messages)
    assert len(store) == 6 and len(store.message("#0")) == 1


def test_a_store_on_disk_keeps_what_it_indexed(tmp_path: Path) -> None:
    path = tmp_path / "recall.db"
    first = RecallStore(path)
    first.add(conversation())
    first.close()
    again = RecallStore(path)
    assert len(again) == 6 and "LY-2231-X" in again.search(LEASE)[0].text


def test_long_texts_are_cut_at_line_ends_and_lose_nothing() -> None:
    text = "\n".join(f"line {i} " + "x" * (i % 50) for i in range(400))
    parts = pieces(text, 600)
    assert "".join(parts) == text and all(len(p) <= 600 for p in parts)
    assert all(p.endswith("\n") for p in parts[:-1])


def test_a_pasted_query_is_searched_by_its_most_specific_words_and_still_finds_its_identifier() -> None:
    log = "\n".join(f"2025-03-19T16:{m:02d}:07 INFO [worker] request {m} served in {m * 3} ms" for m in range(40))
    query = f"The deploy failed again, the ticket is INC_7731-b. Here is the log:\n{log}\nWhat went wrong?"
    words, _ = query_terms(query)
    assert len(words) == QUERY_WORDS
    assert "inc_7731" in words and "19t16" in words  # identifiers before plain numbers and words
    assert "wrong" in words and "39" not in words  # the question's words before a timestamp's numbers
    store = RecallStore()
    store.add([HumanMessage("Note that INC_7731 was the outage of the billing export."),
               *(AIMessage(f"Served request {m} of the worker in {m} ms.") for m in range(30))])
    found = store.search(query, limit=3)
    assert found and "billing export" in found[0].text


def test_a_pasted_chinese_document_is_searched_by_its_first_pieces() -> None:
    paste = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(3000))  # thousands of distinct pieces
    _, grams = query_terms(f"大阪仓库的合同编号是多少？{paste}")
    assert len(grams) == QUERY_GRAMS
    assert grams[:4] == ["大阪仓", "阪仓库", "合同编", "同编号"]  # the question's pieces come first
    assert set(grams[4:]) <= {paste[i : i + 3] for i in range(len(paste) - 2)}
