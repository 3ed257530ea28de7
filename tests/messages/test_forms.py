"""Type in = type out with the real langchain-core: LangChain messages in give LangChain messages out, and the
caller's token counter sees the caller's objects."""

from typing import Any

import pytest

import ctxwin
from ctxwin.counters._lookup import get_counter
from ctxwin.history import add_messages

lc = pytest.importorskip("langchain_core.messages")
lc_utils = pytest.importorskip("langchain_core.messages.utils")
fake_models = pytest.importorskip("langchain_core.language_models.fake_chat_models")
prompts = pytest.importorskip("langchain_core.prompts")

# LangChain's own fixture (langchain_core tests/unit_tests/messages/test_utils.py: _MESSAGES_TO_TRIM).
MESSAGES_TO_TRIM = [
    lc.SystemMessage("This is a 4 token text."),
    lc.HumanMessage("This is a 4 token text.", id="first"),
    lc.AIMessage(
        [
            {"type": "text", "text": "This is the FIRST 4 token block."},
            {"type": "text", "text": "This is the SECOND 4 token block."},
        ],
        id="second",
    ),
    lc.HumanMessage("This is a 4 token text.", id="third"),
    lc.AIMessage("This is a 4 token text.", id="fourth"),
]


def langchain_only_counter(messages: list[Any]) -> int:
    """LangChain's ``dummy_token_counter`` (3 + 4 per text + 3 per message), refusing anything but LangChain
    messages, so a test fails if ctxwin hands it its own objects."""
    count = 0
    for message in messages:
        if not isinstance(message, lc.BaseMessage):
            raise TypeError(f"the counter got a {type(message).__module__}.{type(message).__name__}")
        texts = len(message.content) if isinstance(message.content, list) else 1
        count += 3 + 4 * texts + 3
    return count


TRIM_CASES = [
    {"max_tokens": 30, "strategy": "first"},
    {"max_tokens": 30, "strategy": "first", "allow_partial": True},
    {"max_tokens": 30, "strategy": "first", "allow_partial": True, "end_on": "human"},
    {"max_tokens": 40, "strategy": "last", "include_system": True},
    {"max_tokens": 30, "strategy": "last", "start_on": "human"},
    {"max_tokens": 25, "strategy": "last", "include_system": True, "start_on": "human"},
    {"max_tokens": 1000, "strategy": "last"},
    {"max_tokens": 0, "strategy": "last"},
]


@pytest.mark.parametrize("kwargs", TRIM_CASES, ids=repr)
def test_trim_matches_langchain_and_returns_its_objects(kwargs: dict[str, Any]) -> None:
    expected = lc_utils.trim_messages(MESSAGES_TO_TRIM, token_counter=langchain_only_counter, **kwargs)
    result = ctxwin.trim_messages(MESSAGES_TO_TRIM, token_counter=langchain_only_counter, **kwargs)
    assert result == expected
    assert [type(m) for m in result] == [type(m) for m in expected]
    originals = {id(m) for m in MESSAGES_TO_TRIM}
    for message in result:  # unchanged messages are the caller's own objects; a partial one is a new one
        assert (id(message) in originals) == (message in MESSAGES_TO_TRIM and message.content != [])


def test_partial_message_is_the_callers_class() -> None:
    result = ctxwin.trim_messages(
        MESSAGES_TO_TRIM, max_tokens=30, token_counter=langchain_only_counter, strategy="first", allow_partial=True
    )
    assert type(result[-1]) is lc.AIMessage and result[-1] is not MESSAGES_TO_TRIM[2]
    assert result[-1].content == [MESSAGES_TO_TRIM[2].content[0]]
    assert result[:2] == MESSAGES_TO_TRIM[:2] and result[0] is MESSAGES_TO_TRIM[0]


def test_count_tokens_approximately_as_in_langgraph_docs() -> None:
    history = [lc.SystemMessage("You are terse.")]
    for turn in range(40):
        history += [lc.HumanMessage(f"question {turn} " * 20), lc.AIMessage(f"answer {turn} " * 30)]
    for kwargs in ({"start_on": "human", "include_system": True}, {"end_on": ("human", "tool")}):
        expected = lc_utils.trim_messages(
            history, max_tokens=800, token_counter=lc_utils.count_tokens_approximately, **kwargs
        )
        result = ctxwin.trim_messages(
            history, max_tokens=800, token_counter=lc_utils.count_tokens_approximately, **kwargs
        )
        assert result == expected and all(a is b for a, b in zip(result, expected, strict=True))


def test_per_message_counter_cache_keys_the_callers_objects() -> None:
    seen: list[Any] = []

    def count_one(message: lc.BaseMessage) -> int:
        seen.append(message)
        return len(str(message.content)) // 4 + 3

    history = [lc.HumanMessage(f"message {i} " * 10) if i % 2 else lc.AIMessage(f"reply {i} " * 10) for i in range(200)]
    first = ctxwin.trim_messages(history, max_tokens=400, token_counter=count_one)
    assert seen and all(any(m is h for h in history) for m in seen)
    seen.clear()
    history.append(lc.HumanMessage("one more"))
    second = ctxwin.trim_messages(history, max_tokens=400, token_counter=count_one)
    assert seen == [history[-1]] and seen[0] is history[-1]  # every other count recalled by identity
    assert second[-1] is history[-1] and second[0] in first


class _CountingFakeModel(fake_models.GenericFakeChatModel):  # type: ignore[misc]
    """A real LangChain chat model whose ``get_num_tokens_from_messages`` (the interface ``trim_messages`` uses)
    counts like LangChain's approximate counter; the base class would need transformers' GPT-2 tokenizer."""

    def get_num_tokens_from_messages(self, messages: list[Any], tools: Any = None) -> int:
        return int(lc_utils.count_tokens_approximately(messages))


def _model(*replies: str) -> Any:
    return _CountingFakeModel(messages=iter([lc.AIMessage(r) for r in replies]))


def test_chat_model_counter_gets_langchain_objects_and_invoke_accepts_the_result() -> None:
    model = _model("fine")
    history = [lc.SystemMessage("sys"), *[lc.HumanMessage("word " * 50) for _ in range(10)]]
    result = ctxwin.trim_messages(history, max_tokens=200, token_counter=model, include_system=True)
    assert result == lc_utils.trim_messages(history, max_tokens=200, token_counter=model, include_system=True)
    assert model.invoke(result).content == "fine"


def test_prompt_pipe_trimmer_pipe_model() -> None:
    trimmer = ctxwin.trim_messages(max_tokens=60, token_counter=lc_utils.count_tokens_approximately)
    prompt = prompts.ChatPromptTemplate.from_messages([prompts.MessagesPlaceholder("history")])
    chain = prompt | trimmer | _model("ok")
    history = [lc.HumanMessage("older " * 60), lc.AIMessage("a"), lc.HumanMessage("latest")]
    assert chain.invoke({"history": history}).content == "ok"
    trimmed = (prompt | trimmer).invoke({"history": history})
    assert [type(m) for m in trimmed] == [lc.AIMessage, lc.HumanMessage]


def test_filter_and_merge_give_langchain_objects() -> None:
    messages = [
        lc.SystemMessage("s", id="1"),
        lc.HumanMessage("a", id="2"),
        lc.HumanMessage("b", id="3"),
        lc.AIMessage("c", id="4"),
    ]
    filtered = ctxwin.filter_messages(messages, include_types=["human"])
    assert filtered == lc_utils.filter_messages(messages, include_types=["human"])
    assert filtered[0] is messages[1]
    merged = ctxwin.merge_message_runs(messages)
    assert merged == lc_utils.merge_message_runs(messages)
    assert [type(m) for m in merged] == [lc.SystemMessage, lc.HumanMessage, lc.AIMessage]
    assert merged[0] is messages[0]


def _tool_conversation() -> list[Any]:
    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_abc123", "type": "tool_call"}
    return [
        lc.HumanMessage("What is the weather in Paris?"),
        lc.AIMessage("", tool_calls=[call]),
        lc.ToolMessage("Sunny, 21 C", tool_call_id="call_abc123"),
    ]


def test_count_messages_reads_langchain_and_openai_messages_whole() -> None:
    counter = get_counter("gpt-4o")
    messages = _tool_conversation()
    as_ctxwin = ctxwin.convert_to_messages(messages)
    as_openai = ctxwin.convert_to_openai_messages(as_ctxwin)
    expected = counter.count_messages(as_ctxwin)
    assert counter.count_messages(messages) == expected == counter.count_messages(as_openai)
    # the tool call and its id are counted, not skipped: without them the request is smaller
    bare = [lc.HumanMessage(messages[0].content), lc.AIMessage(""), lc.ToolMessage("Sunny, 21 C", tool_call_id="x")]
    assert counter.count_messages(bare) < expected
    assert counter.count_message(messages[1]) == counter.count_message(as_ctxwin[1])


def test_fit_returns_langchain_objects_a_model_accepts() -> None:
    history = [lc.SystemMessage("You are helpful.")]
    for turn in range(30):
        history += [lc.HumanMessage(f"question {turn} " * 40), lc.AIMessage(f"answer {turn} " * 40)]
    history.append(lc.HumanMessage("last question"))
    plan = ctxwin.fit(history, model="gpt-4o", context_window=1700, reserve_output=500)
    assert plan.fits and len(plan.messages) < len(history)
    assert all(isinstance(m, lc.BaseMessage) for m in plan.messages)
    assert plan.messages[0] is history[0] and plan.messages[-1] is history[-1]
    assert _model("done").invoke(plan.messages).content == "done"
    assert all(isinstance(m, dict) for m in ctxwin.fit(history, model="gpt-4o", output="openai").messages)


def test_fit_truncated_tool_output_is_a_langchain_tool_message() -> None:
    messages = _tool_conversation()
    messages[2] = lc.ToolMessage("line of tool output\n" * 4000, tool_call_id="call_abc123")
    conversation = [*messages, lc.HumanMessage("and tomorrow?")]
    plan = ctxwin.fit(conversation, model="gpt-4o", context_window=2500, reserve_output=500)
    assert plan.fits
    tool = next(m for m in plan.messages if m.type == "tool")
    assert type(tool) is lc.ToolMessage and tool is not messages[2] and tool.tool_call_id == "call_abc123"
    assert len(tool.content) < len(messages[2].content)


def test_add_messages_gives_langchain_objects() -> None:
    left = [lc.HumanMessage("hi", id="1"), lc.AIMessage("hello", id="2")]
    merged = add_messages(left, [lc.AIMessage("hello again", id="2"), lc.HumanMessage("new")])
    assert [type(m) for m in merged] == [lc.HumanMessage, lc.AIMessage, lc.HumanMessage]
    assert merged[0] is left[0] and merged[1].content == "hello again"
    assert merged[2].id is not None and merged[2].content == "new"
    assert _model("x").invoke(merged).content == "x"


def test_mixed_or_ctxwin_input_still_gives_ctxwin_messages() -> None:
    mixed = [{"role": "user", "content": "hi"}, lc.AIMessage("hello")]
    result = ctxwin.trim_messages(mixed, max_tokens=100, token_counter="gpt-4o")
    assert all(isinstance(m, ctxwin.messages.BaseMessage) for m in result)


def test_langchain_objects_are_read_once_and_changes_in_place_are_noticed() -> None:
    # A chat loop hands the same LangChain objects over every turn: each is converted once, the count cache recalls
    # it by identity, and an object changed in place (a field reassigned, a nested value edited) is read again.
    call = lc.AIMessage("", tool_calls=[{"name": "search", "args": {"q": "short"}, "id": "c1"}])
    history = [lc.HumanMessage("hello " * 50), call, lc.ToolMessage("result " * 50, tool_call_id="c1")]
    read = ctxwin.messages._forms.CallerForms.read_langchain
    first, _ = read(history)
    again, _ = read([*history, lc.HumanMessage("new")])
    assert all(a is b for a, b in zip(first, again, strict=False))
    counter = get_counter("gpt-4o")
    before = counter.count_messages(history)
    assert ctxwin.trim_messages(history, max_tokens=before, token_counter="gpt-4o") == history
    history[0].content = "hello " * 200
    call.tool_calls[0]["args"]["q"] = "a much longer query " * 40
    changed, _ = read(history)
    assert changed[0] is not first[0] and changed[0].content == "hello " * 200
    assert changed[1].tool_calls[0]["args"]["q"] == "a much longer query " * 40 and changed[2] is first[2]
    assert counter.count_messages(history) > before + 250
    trimmed = ctxwin.trim_messages(history, max_tokens=before, token_counter="gpt-4o")
    assert len(trimmed) < len(history) and counter.count_messages(trimmed) <= before


def test_an_error_names_the_callers_index_when_only_new_objects_are_read() -> None:
    history = [lc.HumanMessage("hello"), lc.AIMessage("hi")]
    ctxwin.trim_messages(history, max_tokens=100, token_counter="gpt-4o")
    bad = lc.ToolMessage("out", tool_call_id="c1")
    bad.tool_call_id = None  # type: ignore[assignment]
    with pytest.raises(ValueError, match=r"^messages\[2\]: .*tool_call_id"):
        ctxwin.trim_messages([*history, bad], max_tokens=100, token_counter="gpt-4o")


def test_a_list_is_read_as_the_callers_langchain_objects_only_when_every_message_is_one() -> None:
    ours, theirs = ctxwin.messages.HumanMessage("hi"), lc.AIMessage("hello")
    read = ctxwin.messages._forms.CallerForms.read_langchain
    assert read([ours, theirs]) is None  # the first message answers: no pass over the list
    assert read([theirs, ours]) is None and read([theirs, "text"]) is None and read([]) is None
    found = read([theirs, lc.HumanMessage("again")])
    assert found is not None and [m.content for m in found[0]] == ["hello", "again"]
    assert found[1].back(found[0][0]) is theirs
