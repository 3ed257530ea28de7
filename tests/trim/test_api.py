"""trim_messages' arguments, counter forms, reusable form, tool pairs, order seen by the counter, and the cache."""

import re
import threading
from typing import Any

import pytest
from langchain_core import messages as lc
from trim_support import O200K, ctxwin_counter, langchain_counter, to_langchain

from ctxwin.counters._base import BaseTokenCounter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.trim import MessageTransform, filter_messages, merge_message_runs, trim_messages, trim_stored
from ctxwin.trim._count_cache import CountCache, cache_for

CONVERSATION = [
    SystemMessage("You are terse."),
    HumanMessage("first question\nwith two lines", id="h1"),
    AIMessage("first answer", id="a1"),
    HumanMessage("second question", id="h2"),
    AIMessage("second answer\nis longer\nthan the first", id="a2"),
    HumanMessage("third question", id="h3"),
]


def lc_error(**kwargs: Any) -> BaseException:
    with pytest.raises(Exception) as info:
        lc.trim_messages(to_langchain(CONVERSATION), **kwargs)
    return info.value


@pytest.mark.slow
@pytest.mark.parametrize(
    "kwargs",
    [
        {"strategy": "first", "start_on": "human"},
        {"strategy": "first", "include_system": True},
        {"strategy": "middle"},
        {"token_counter": 42},
    ],
)
def test_argument_errors_match_langchain(kwargs: dict[str, Any]) -> None:
    args = {"max_tokens": 10, "token_counter": ctxwin_counter, **kwargs}
    expected = lc_error(**{**args, "token_counter": kwargs.get("token_counter", langchain_counter)})
    with pytest.raises(type(expected)) as info:
        trim_messages(CONVERSATION, **args)
    assert str(info.value) == str(expected)
    with pytest.raises(type(expected)):  # the reusable form checks its arguments when it is built
        trim_messages(**args)


def test_unknown_counter_spec_reads_like_langchain_then_adds_a_hint() -> None:
    with pytest.raises(ValueError, match=r"^Invalid token_counter shortcut 'gpt-4oo'\. .+"):
        trim_messages(CONVERSATION, max_tokens=10, token_counter="gpt-4oo")


@pytest.mark.parametrize("spec", ["tiktoken:o200k_base", "approximate", "gpt-4o"])
def test_counter_specs_resolve_and_stay_within_budget(spec: str) -> None:
    from ctxwin.counters import get_counter

    result = trim_messages(CONVERSATION, max_tokens=30, token_counter=spec)
    assert result and get_counter(spec).count_messages(result) <= 30


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_tokens": -1}, ValueError, "max_tokens must be a finite number >= 0, got -1"),
        ({"max_tokens": "10"}, TypeError, "max_tokens must be a number, got str"),
        ({"max_tokens": float("nan")}, ValueError, "max_tokens must be a finite number >= 0, got nan"),
        ({"max_tokens": float("inf")}, ValueError, "max_tokens must be a finite number >= 0, got inf"),
        ({"max_tokens": -float("inf")}, ValueError, "max_tokens must be a finite number >= 0, got -inf"),
        ({"max_tokens": True}, TypeError, "max_tokens must be a number, got bool"),
        ({"max_tokens": None}, TypeError, "max_tokens must be a number, got NoneType"),
        ({"max_tokens": [10]}, TypeError, "max_tokens must be a number, got list"),
        ({"tool_pairs": "drop"}, ValueError, "tool_pairs must be 'keep' or 'ignore'"),
        ({"end_on": "humna"}, ValueError, "unknown message type 'humna'"),
        ({"start_on": [3]}, TypeError, "start_on: expected a message type string or a message class"),
        ({"text_splitter": 5}, TypeError, "text_splitter must be a function"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    args = {"max_tokens": 10, "token_counter": ctxwin_counter, **kwargs}
    with pytest.raises(error, match=re.escape(match)):
        trim_messages(CONVERSATION, **args)
    with pytest.raises(error, match=re.escape(match)):  # the reusable form checks its arguments when made
        trim_messages(**args)


def test_max_tokens_may_be_a_float() -> None:
    assert trim_messages(CONVERSATION, max_tokens=30.0, token_counter=ctxwin_counter) == trim_messages(
        CONVERSATION, max_tokens=30, token_counter=ctxwin_counter
    )


@pytest.mark.slow
def test_merge_message_runs_is_linear() -> None:
    """The fuzzing findings: 2,000 AI messages with a tool call each took 46 s, 80,000 string messages did not
    finish in two minutes (each message was merged into the growing result, copying it). Merged once per run,
    1,000 calls and 5 MB of text (gigabytes copied before) take a fraction of a second."""
    calls = [AIMessage("", tool_calls=[{"name": "f", "args": {"i": i}, "id": f"c{i}"}]) for i in range(1_000)]
    (merged,) = merge_message_runs(calls)
    assert isinstance(merged, AIMessage) and [c["args"]["i"] for c in merged.tool_calls] == list(range(1_000))
    texts = [HumanMessage("0123456789" * 100) for _ in range(5_000)]
    (joined,) = merge_message_runs(texts, chunk_separator="")
    assert joined.content == "0123456789" * 500_000


def test_bad_counter_results_raise_clear_errors() -> None:
    with pytest.raises(TypeError, match=r"token counter .*<lambda> returned 'many' for a one-message list"):
        trim_messages(CONVERSATION, max_tokens=10, token_counter=lambda m: "many")
    with pytest.raises(ValueError, match=r"<lambda> returned -1 for a one-message list; expected a number from 0"):
        trim_messages(CONVERSATION, max_tokens=10, token_counter=lambda ms: -1)
    with pytest.raises(TypeError, match="must return a list of strings"):
        trim_messages(
            [HumanMessage("a\nb")], max_tokens=2, token_counter=lambda m: len(m.text), allow_partial=True,
            text_splitter=lambda text: text,
        )  # fmt: skip


def test_reusable_form() -> None:
    trimmer = trim_messages(max_tokens=25, token_counter=ctxwin_counter, include_system=True)
    assert isinstance(trimmer, MessageTransform)
    direct = trim_messages(CONVERSATION, max_tokens=25, token_counter=ctxwin_counter, include_system=True)
    assert trimmer(CONVERSATION) == trimmer.invoke(CONVERSATION) == direct
    assert trimmer.batch([CONVERSATION, CONVERSATION[:2]]) == [direct, CONVERSATION[:2]]
    assert filter_messages(include_types=["human"]).invoke(CONVERSATION) == [CONVERSATION[i] for i in (1, 3, 5)]
    assert merge_message_runs(chunk_separator=" ")([HumanMessage("a"), HumanMessage("b")])[0].content == "a b"


def test_accepts_langchain_messages_and_openai_dicts() -> None:
    as_dicts = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}]
    assert trim_messages(as_dicts, max_tokens=100, token_counter=len) == [
        SystemMessage("be brief"),
        HumanMessage("hi there"),
    ]
    result = trim_messages(to_langchain(CONVERSATION), max_tokens=2, token_counter=len)
    assert [m.id for m in result] == ["a2", "h3"]


def test_per_message_callables_are_recognised_without_annotations() -> None:
    counted: list[Any] = []

    def record(message: Any) -> int:
        counted.append(message)
        return ctxwin_counter(message)

    def counter(m):  # type: ignore[no-untyped-def]
        return record(m)

    result = trim_messages(CONVERSATION, max_tokens=30, token_counter=counter)
    assert result == trim_messages(CONVERSATION, max_tokens=30, token_counter=ctxwin_counter)
    counted.clear()  # the first call probed the counter with a one-message list; later calls do not
    fresh = [HumanMessage("a message not counted before")]
    assert trim_messages(fresh, max_tokens=30, token_counter=counter) == fresh
    assert counted == fresh


def test_len_counts_messages_and_list_callables_get_lists() -> None:
    assert trim_messages(CONVERSATION, max_tokens=3, token_counter=len) == CONVERSATION[-3:]
    seen: list[int] = []

    def count_list(messages: list[BaseMessage]) -> int:
        seen.append(len(messages))
        return 10 * len(messages)

    assert trim_messages(CONVERSATION, max_tokens=25, token_counter=count_list) == CONVERSATION[-2:]


class ChatModelLike:
    def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int:
        return sum(ctxwin_counter(m) for m in messages) + 3


def test_objects_with_get_num_tokens_from_messages() -> None:
    result = trim_messages(CONVERSATION, max_tokens=30, token_counter=ChatModelLike())
    assert result and ChatModelLike().get_num_tokens_from_messages(result) <= 30


def test_counter_sees_messages_in_conversation_order() -> None:
    def ordered_only(messages: list[BaseMessage]) -> int:
        positions = [CONVERSATION.index(m) for m in messages if m in CONVERSATION]
        assert positions == sorted(positions), "counter was shown messages out of order"
        return sum(ctxwin_counter(m) for m in messages)

    for strategy, extra in (("last", {"include_system": True, "allow_partial": True}), ("first", {})):
        assert trim_messages(CONVERSATION, max_tokens=30, token_counter=ordered_only, strategy=strategy, **extra)


def test_fixed_overhead_counter_never_over_budget() -> None:
    def with_overhead(messages: list[BaseMessage]) -> int:
        return 10 * len(messages) + 5

    assert trim_messages(CONVERSATION, max_tokens=35, token_counter=with_overhead) == CONVERSATION[-3:]
    # LangChain keeps 3 messages too, but for include_system it counts the overhead twice and keeps less.
    result = trim_messages(CONVERSATION, max_tokens=35, token_counter=with_overhead, include_system=True)
    assert result == [CONVERSATION[0], *CONVERSATION[-2:]]


def test_system_message_over_budget_is_the_one_exception() -> None:
    result = trim_messages(CONVERSATION, max_tokens=2, token_counter=ctxwin_counter, include_system=True)
    assert result == [CONVERSATION[0]]


CALL = {"name": "search", "args": {"q": "weather"}, "id": "call_1", "type": "tool_call"}
RAW = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "weather"}'}}
TOOLS = [
    HumanMessage("what's the weather", id="h"),
    AIMessage("let me check\nthe forecast", tool_calls=[CALL], additional_kwargs={"tool_calls": [RAW]}, id="ai"),
    ToolMessage("sunny", tool_call_id="call_1", id="t"),
    HumanMessage("thanks", id="h2"),
]


def test_last_never_keeps_an_orphan_tool_result() -> None:
    budget = ctxwin_counter(TOOLS[2]) + ctxwin_counter(TOOLS[3])
    assert trim_messages(TOOLS, max_tokens=budget, token_counter=ctxwin_counter) == TOOLS[3:]
    ignored = trim_messages(TOOLS, max_tokens=budget, token_counter=ctxwin_counter, tool_pairs="ignore")
    assert ignored == TOOLS[2:]  # LangChain's answer, with an orphan result


def test_first_never_keeps_a_call_without_its_result() -> None:
    budget = ctxwin_counter(TOOLS[0]) + ctxwin_counter(TOOLS[1])
    assert trim_messages(TOOLS, max_tokens=budget, token_counter=ctxwin_counter, strategy="first") == TOOLS[:1]


def test_partial_ai_message_keeps_only_calls_whose_results_remain() -> None:
    budget = ctxwin_counter(TOOLS[0]) + ctxwin_counter(TOOLS[1])
    result = trim_messages(TOOLS, max_tokens=budget, token_counter=ctxwin_counter, strategy="first", allow_partial=True)
    assert result[0] is TOOLS[0]
    partial = result[1]
    assert isinstance(partial, AIMessage) and partial.tool_calls == [] and "tool_calls" not in partial.additional_kwargs
    assert partial.content == TOOLS[1].content and TOOLS[1].tool_calls == [CALL]  # the input is untouched
    # strategy="last": the partial keeps the call whose result is kept, and loses text instead
    budget = ctxwin_counter(TOOLS[1]) + ctxwin_counter(TOOLS[2]) + ctxwin_counter(TOOLS[3]) - 2
    result = trim_messages(TOOLS, max_tokens=budget, token_counter=ctxwin_counter, allow_partial=True)
    assert result[1:] == TOOLS[2:] and result[0].tool_calls == [CALL] and result[0].content == "the forecast"


class CountingCounter(BaseTokenCounter):
    """The real o200k counter, recording every string it tokenizes."""

    name = "counting"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return O200K.count_text(text)


def long_conversation(size: int) -> list[BaseMessage]:
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(f"message number {i}: " + "lorem ipsum dolor " * (i % 7 + 1))
        for i in range(size)
    ]


def test_each_message_counted_once_and_dropped_ones_mostly_not_at_all() -> None:
    counter = CountingCounter()
    messages = long_conversation(2000)
    result = trim_messages(messages, max_tokens=5000, token_counter=counter)
    contents = [t for t in counter.texts if t.startswith("message number")]
    assert len(contents) == len(set(contents))  # nothing tokenized twice
    assert len(result) < len(contents) <= len(result) + 40  # little counted beyond the cut
    assert counter.count_messages(result) <= 5000


def test_warm_retrim_after_appending_counts_about_one_message() -> None:
    counter = CountingCounter()
    messages = long_conversation(1000)
    trim_messages(messages, max_tokens=4000, token_counter=counter)
    counter.texts.clear()
    grown = [*messages, HumanMessage("one more question")]
    result = trim_messages(grown, max_tokens=4000, token_counter=counter)
    assert [t for t in counter.texts if t not in ("user", "assistant")] == ["one more question"]
    assert result == trim_messages(grown, max_tokens=4000, token_counter=CountingCounter())


def test_cache_is_invalidated_by_any_field_change_and_shared_by_equal_messages() -> None:
    counter = CountingCounter()
    message = HumanMessage("hello there")
    trim_messages([message], max_tokens=100, token_counter=counter)
    counter.texts.clear()
    trim_messages([HumanMessage("hello there")], max_tokens=100, token_counter=counter)
    assert counter.texts == []
    message.content = "hello there, changed"
    assert trim_messages([message], max_tokens=7, token_counter=counter) == []
    assert "hello there, changed" in counter.texts
    counter.texts.clear()
    trim_messages([HumanMessage("hello there", name="bob")], max_tokens=100, token_counter=counter)
    assert "hello there" in counter.texts


def test_cache_is_bounded_per_counter_and_thread_safe() -> None:
    cache = CountCache(max_entries=50)

    def fill(k: int) -> None:
        for i in range(200):
            message = HumanMessage(f"thread {k}, message {i}")
            assert cache.recall([message]) == [None]
            found, notes = cache.lookup([message])
            assert found == [None]
            cache.store([message], notes, [i])
            assert cache.recall([message]) == [i]

    threads = [threading.Thread(target=fill, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 50
    found, notes = cache.lookup([HumanMessage("an equal message")])
    assert found == [None]
    cache.store([HumanMessage("an equal message")], notes, [7])
    assert cache.lookup([HumanMessage("an equal message")])[0] == [7]
    assert cache.lookup([HumanMessage("an equal message", name="bob")])[0] == [None]
    assert cache_for(ctxwin_counter) is cache_for(ctxwin_counter) is not cache_for(langchain_counter)
    with pytest.raises(ValueError, match="max_entries"):
        CountCache(0)


def test_partial_text_is_measured_in_real_order() -> None:
    text = "".join(f"line {i} of a long answer\n" for i in range(20))
    for budget in range(10, 120, 7):
        result = trim_messages([AIMessage(text)], max_tokens=budget, token_counter=O200K, allow_partial=True)
        assert not result or O200K.count_messages(result) <= budget
        assert not result or text.endswith(result[0].text)


def test_list_content_loses_blocks_from_the_far_end() -> None:
    blocks = [{"type": "text", "text": f"block {i} " * 5} for i in range(4)]
    message = AIMessage(blocks)
    per_block = ctxwin_counter(AIMessage(blocks[:1]))
    first = trim_messages(
        [message], max_tokens=per_block * 2, token_counter=ctxwin_counter, strategy="first", allow_partial=True
    )
    last = trim_messages([message], max_tokens=per_block * 2, token_counter=ctxwin_counter, allow_partial=True)
    assert first[0].content == blocks[: len(first[0].content)] and last[0].content == blocks[-len(last[0].content) :]
    assert message.content == blocks


def test_in_place_changes_are_seen_after_repeated_trims() -> None:
    """The identity fast path (from the second sighting on) compares a deep copy of the fields."""

    def text_length(message: BaseMessage) -> int:
        return len(message.text)

    message = AIMessage([{"type": "text", "text": "short"}])
    for _ in range(3):
        assert trim_messages([message], max_tokens=10, token_counter=text_length) == [message]
    message.content[0]["text"] = "now far longer than ten"  # type: ignore[index]
    assert trim_messages([message], max_tokens=10, token_counter=text_length) == []
    message.content[0]["text"] = "short"  # type: ignore[index]
    assert trim_messages([message], max_tokens=10, token_counter=text_length) == [message]
    message.content = "also far longer than ten"
    assert trim_messages([message], max_tokens=10, token_counter=text_length) == []


@pytest.mark.parametrize("include_system", [False, True])
@pytest.mark.parametrize("tool_pairs", ["keep", "ignore"])
def test_trim_stored_is_trim_messages_last(include_system: bool, tool_pairs: Any) -> None:
    caller = AIMessage("", tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c1"}])
    messages = [*CONVERSATION, caller, ToolMessage("result " * 5, tool_call_id="c1"), AIMessage("done")]
    for budget in range(0, 90, 3):
        kwargs: dict[str, Any] = {"max_tokens": budget, "include_system": include_system, "tool_pairs": tool_pairs}
        expected = trim_messages(messages, token_counter=ctxwin_counter, **kwargs)
        assert trim_stored(messages, token_counter=ctxwin_counter, **kwargs) == expected
        assert trim_stored(messages, token_counter="approximate", **kwargs) == trim_messages(
            messages, token_counter="approximate", **kwargs
        )


def test_nested_in_place_change_is_seen_on_the_first_retrim_after_an_append() -> None:
    """Identity recall writes the message again and compares: a nested value changed in place is recounted."""

    def text_and_args(message: BaseMessage) -> int:
        calls = message.tool_calls if isinstance(message, AIMessage) else []
        return len(message.text) + sum(len(str(call["args"])) for call in calls)

    answer = AIMessage([{"type": "text", "text": "short"}])
    caller = AIMessage("", tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c1"}])
    history = [HumanMessage("q"), answer, HumanMessage("next"), caller, ToolMessage("ok", tool_call_id="c1")]
    assert trim_messages(history, max_tokens=100, token_counter=text_and_args) == history
    answer.content[0]["text"] = "x" * 200  # type: ignore[index]
    grown = [*history, HumanMessage("one more")]
    assert trim_messages(grown, max_tokens=100, token_counter=text_and_args) == grown[2:]
    caller.tool_calls[0]["args"]["more"] = "y" * 200  # a dict inside a list inside a field grows
    grown = [*grown, HumanMessage("and another")]
    assert trim_messages(grown, max_tokens=100, token_counter=text_and_args) == grown[5:]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: filter_messages(CONVERSATION, include_names="bob"), TypeError, "include_names must be a sequence"),
        (lambda: filter_messages(CONVERSATION, exclude_types=["humna"]), ValueError, "unknown message type 'humna'"),
        (lambda: filter_messages(exclude_ids=5), TypeError, "exclude_ids must be a sequence"),
        (lambda: merge_message_runs(CONVERSATION, chunk_separator=1), TypeError, "chunk_separator must be a string"),
    ],
)
def test_filter_and_merge_reject_bad_arguments(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_filter_removes_a_call_and_its_result_and_the_raw_entry() -> None:
    result = filter_messages(TOOLS, exclude_tool_calls=["call_1"])
    assert [m.id for m in result] == ["h", "h2"]  # the AIMessage had no other call, so it goes too
    two = AIMessage("", tool_calls=[CALL, {**CALL, "id": "call_2"}], additional_kwargs={"tool_calls": [RAW]})
    (kept,) = filter_messages([two], exclude_tool_calls=["call_1"])
    assert [c["id"] for c in kept.tool_calls] == ["call_2"] and "tool_calls" not in kept.additional_kwargs
