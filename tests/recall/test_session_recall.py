"""A session's recall store on its own: it indexes what a request left out, once; the tool searches beside the
last request it was told of, and reads a whole message by handle; between cuts it places a recall message right
before the new user message when that relates to what was left out, within its share and the room left."""

from __future__ import annotations

from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.recall import RECALL_TOOL_NAME, is_recalled
from ctxwin.recall._session import SessionRecall

GPT4O = get_counter("gpt-4o")
FACT = "The Lyon warehouse lease runs until March 2031 at 4,250 EUR a month."


def history() -> list[BaseMessage]:
    filler = [HumanMessage(f"Status {n}: the nightly export finished.", id=f"s{n}") for n in range(6)]
    return [
        SystemMessage("You help with facilities.", id="sys"),
        HumanMessage(FACT, id="lease"),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"site": "Quito"}, "id": "call1"}], id="ask"),
        ToolMessage("Quito office: 14 desks, badge code QX-77.", tool_call_id="call1", id="res"),
        *filler,
        HumanMessage("What else?", id="last"),
    ]


def tokens(messages: list[BaseMessage]) -> int:
    return GPT4O.count_messages(messages)


def test_a_search_indexes_what_the_request_left_out_and_only_that() -> None:
    messages = history()
    recall = SessionRecall(messages, messages)
    request = [messages[0], *messages[4:]]
    found = recall.search("When does the Lyon warehouse lease end?", request, limit=5, min_score=0.5)
    assert [e.position for e in found] == [1] and FACT in found[0].text
    assert [p for p in range(len(messages)) if p in recall.store] == [1, 2, 3]  # sent messages are not indexed


def test_the_tool_searches_beside_the_last_request_it_was_told_of() -> None:
    messages = history()
    recall = SessionRecall(messages, messages)
    assert recall.recall("Lyon warehouse lease")  # no request yet: all of the history is left out
    recall.note_request(messages)
    assert recall.recall("Lyon warehouse lease") == []  # the request holds it
    recall.note_request([messages[0], *messages[4:]])
    answer = recall.tool.answer({"name": RECALL_TOOL_NAME, "args": {"query": "Lyon warehouse lease"}, "id": "t1"})
    assert answer.tool_call_id == "t1" and answer.status == "success" and "4,250 EUR" in answer.text


def test_a_whole_message_comes_back_by_its_handle() -> None:
    messages = history()
    recall = SessionRecall(messages, messages)
    recall.note_request([messages[0], *messages[4:]])
    assert [e.text for e in recall.recalled_message("call1")] == ["Quito office: 14 desks, badge code QX-77."]
    assert [e.position for e in recall.recalled_message("lease")] == [1]
    assert [e.position for e in recall.recalled_message("#5")] == [5]  # a message still sent, by position
    assert recall.recalled_message("#99") == [] and recall.recalled_message("nope") == []


def test_between_cuts_a_recall_goes_right_before_a_new_question_about_what_left() -> None:
    messages = history()
    recall = SessionRecall(messages, messages)
    sent = [messages[0], *messages[4:]]
    recall.note_request(sent)
    question = HumanMessage("When does the Lyon warehouse lease end?")
    messages.append(question)
    candidate = [*sent, question]
    placed = recall.between_cuts(candidate, [question], 0.2, 4_000, tokens, GPT4O.count_message)
    assert placed is not None
    with_recall, recalled = placed
    assert with_recall[:-2] == sent and is_recalled(with_recall[-2]) and with_recall[-1] is question
    assert recalled is not None and recalled.labels == ["lease"] and FACT in with_recall[-2].text
    assert recalled.tokens == GPT4O.count_message(with_recall[-2]) <= 0.2 * 4_000
    # no share, or no new user message: the request as it is; no room left for what was found: a cut makes it
    assert recall.between_cuts(candidate, [question], 0, 4_000, tokens, GPT4O.count_message) == (candidate, None)
    answer = AIMessage("It ends in 2031.")
    assert recall.between_cuts([*candidate, answer], [answer], 0.2, 4_000, tokens,
                               GPT4O.count_message) == ([*candidate, answer], None)
    assert recall.between_cuts(candidate, [question], 0.2, tokens(candidate) + 5, tokens, GPT4O.count_message) is None
