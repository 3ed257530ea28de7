"""Llama 3.x / 4: counts compared with llama-models' own ``Tokenizer.encode`` and ``ChatFormat.encode_dialog_prompt``.

llama-models' Llama 4 chat format imports torch and torchvision at module level (for images) without using them
for text; torch is not installable here, so that module is loaded with empty stand-ins for those two packages. Its
text path runs unchanged: the Llama 4 reference is the package's own code, only the image imports are stubbed.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

if importlib.util.find_spec("llama_models") is None:
    pytest.skip("the Llama counters need the llama extra (pip install -e '.[llama]')", allow_module_level=True)

from llama_models.datatypes import RawMessage, RawTextItem, StopReason, ToolCall
from llama_models.llama3.chat_format import ChatFormat as Llama3ChatFormat
from llama_models.llama3.tokenizer import Tokenizer as Llama3Tokenizer
from llama_models.llama4.tokenizer import Tokenizer as Llama4Tokenizer

from ctxwin.counters import get_counter, get_model
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._families.llama import (
    LLAMA3_ENCODING,
    TOOLS_ENVIRONMENT,
    LlamaCounter,
    tools_text,
)
from ctxwin.counters._families.packaged_tiktoken import build_packaged_encoding, package_folder
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from .family_texts import CHATS, TOOLS, multilingual_texts

TEXTS = multilingual_texts()


def _llama4_chat_format() -> Any:
    """llama_models.llama4.chat_format.ChatFormat, imported with stand-ins for torch and torchvision."""
    stubs = ("torch", "torchvision", "torchvision.transforms", "torchvision.transforms.functional")
    saved = {name: sys.modules.get(name) for name in stubs}
    try:
        for name in stubs:
            module = types.ModuleType(name)
            module.__getattr__ = lambda attr: type(attr, (), {})  # type: ignore[method-assign]
            sys.modules[name] = module
        return importlib.import_module("llama_models.llama4.chat_format").ChatFormat
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@pytest.fixture(scope="module")
def references() -> Iterator[dict[str, Any]]:
    import llama_models

    root = Path(llama_models.__file__).parent
    llama3 = Llama3Tokenizer(root / "llama3" / "tokenizer.model")
    llama4 = Llama4Tokenizer(root / "llama4" / "tokenizer.model")
    yield {"3": (llama3, Llama3ChatFormat(llama3)), "4": (llama4, _llama4_chat_format()(llama4))}


def _raw(message: BaseMessage, first_parts: list[str] | None = None) -> RawMessage:
    """A ctxwin message as llama-models' RawMessage; ``first_parts`` open its content as text items of their own."""
    role = {"human": "user", "system": "system", "tool": "tool", "ai": "assistant"}[message.type]
    content: Any = [RawTextItem(text=t) for t in [*(first_parts or []), message.text]] if first_parts else message.text
    calls = [ToolCall(call_id=c["id"] or "", tool_name=c["name"], arguments=c["args"])
             for c in getattr(message, "tool_calls", [])]
    return RawMessage(role=role, content=content, tool_calls=calls,
                      stop_reason=StopReason.end_of_message if calls else StopReason.end_of_turn)


def _reference_count(chat_format: Any, messages: list[BaseMessage], tools: list[dict[str, Any]] | None = None) -> int:
    """The request as ChatFormat encodes it; with tools, placed as Llama 3.1's template places them."""
    raw: list[RawMessage] = []
    if tools:
        if not any(isinstance(m, SystemMessage) for m in messages):
            raw.append(RawMessage(role="system", content=[RawTextItem(text=TOOLS_ENVIRONMENT)]))
        if not any(isinstance(m, HumanMessage) for m in messages):
            raw.append(RawMessage(role="user", content=[RawTextItem(text=tools_text(tools))]))
    seen_system = seen_user = False
    for message in messages:
        parts = None
        if tools and isinstance(message, SystemMessage) and not seen_system:
            parts, seen_system = [TOOLS_ENVIRONMENT], True
        elif tools and isinstance(message, HumanMessage) and not seen_user:
            parts, seen_user = [tools_text(tools)], True
        raw.append(_raw(message, parts))
    return len(chat_format.encode_dialog_prompt(raw).tokens)


CONVERSATIONS: list[list[BaseMessage]] = [
    *CHATS,
    [
        HumanMessage("Compare Paris and 서울."),
        AIMessage("Checking.",
                  tool_calls=[{"name": "get_weather", "args": {"city": "서울", "n": [1, 2.5]}, "id": "b"}]),
        ToolMessage("  \n\n27  ", tool_call_id="b", name="get_weather"),
    ],
    [AIMessage("I start."), AIMessage("<|eot_id|> is text here")],
    [HumanMessage(text) for text in TEXTS[:8]] + [AIMessage(text) for text in TEXTS[8:16]],
]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3", "4"])
def test_text_matches_the_packages_tokenizer(references: dict[str, Any], version: str) -> None:
    tokenizer, _ = references[version]
    counter = LlamaCounter(version)
    texts = [*TEXTS, "x" * 5000, " " * 300 + "\n" * 40]
    assert counter.count_texts(texts) == [len(tokenizer.encode(t, bos=False, eos=False)) for t in texts]
    assert counter.encoding.encode_ordinary(TEXTS[20]) == tokenizer.encode(TEXTS[20], bos=False, eos=False)


@pytest.mark.slow
def test_hello_world_ids() -> None:
    assert LlamaCounter("3").encoding.encode("hello world") == [15339, 1917]
    assert LlamaCounter("4").encoding.encode("hello world") == [25681, 3817]
    assert LlamaCounter("3").encoding.encode("<|eot_id|>", allowed_special="all") == [128009]
    assert LlamaCounter("4").encoding.encode("<|header_start|><|eot|>", allowed_special="all") == [200005, 200008]


@pytest.mark.parametrize("version", ["3", "4"])
@pytest.mark.parametrize("index", range(len(CONVERSATIONS)))
@pytest.mark.parametrize("with_tools", [False, True])
def test_requests_match_chat_format(references: dict[str, Any], version: str, index: int, with_tools: bool) -> None:
    counter = get_counter(f"llama:{version}")
    messages = CONVERSATIONS[index]
    tools = TOOLS if with_tools else None
    assert counter.count_messages(messages, tools=tools) == _reference_count(references[version][1], messages, tools)


@pytest.mark.parametrize("version", ["3", "4"])
def test_messages_add_up(references: dict[str, Any], version: str) -> None:
    """count_messages is the sum of count_message plus the request's fixed part (BOS and the reply's header)."""
    counter = get_counter(f"llama:{version}")
    messages = CONVERSATIONS[2]
    fixed = _reference_count(references[version][1], [])
    assert counter.count_messages(messages) == sum(map(counter.count_message, messages)) + fixed


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "system"]),
                          st.text(st.characters(codec="utf-8"), max_size=40)), min_size=1, max_size=5))
def test_random_conversations_match_chat_format(references: dict[str, Any], turns: list[tuple[str, str]]) -> None:
    kinds = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}
    messages = [ToolMessage(text, tool_call_id="t") if role == "tool" else kinds[role](text) for role, text in turns]
    for version in ("3", "4"):
        assert get_counter(f"llama:{version}").count_messages(messages) == _reference_count(
            references[version][1], messages)


def test_models_resolve_as_users_write_them() -> None:
    for name, counter in [
        ("llama-3.1-8b", "llama:3"), ("meta-llama/Llama-3.1-8B-Instruct", "llama:3"),
        ("together_ai/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "llama:3"),
        ("groq/llama-3.1-8b-instant", "llama:3"),
        ("ollama/llama3.1", "llama:3"), ("ollama/llama3.2:1b", "llama:3"), ("groq/llama-3.3-70b-versatile", "llama:3"),
        ("bedrock/us.meta.llama3-1-405b-instruct-v1:0", "llama:3"), ("llama-3.2-3b-instruct", "llama:3"),
        ("fireworks_ai/accounts/fireworks/models/llama-v3p1-8b-instruct", "llama:3"),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama:4"),
        ("groq/meta-llama/llama-4-maverick-17b-128e-instruct", "llama:4"),
        ("llama-4-maverick", "llama:4"), ("vertex_ai/meta/llama-4-scout-17b-16e-instruct-maas", "llama:4"),
        ("vertex_ai/meta/llama-3.1-405b-instruct-maas", "llama:3"), ("meta-llama/Llama-3.2-11B-Vision-Instruct",
                                                                       "llama:3"),
    ]:
        assert get_model(name).counter == counter, name
    assert get_model("llama-3.1-405b").context_window == 131_072
    assert get_model("llama-4-scout").context_window == 10_485_760
    assert get_counter("llama-3.1-8b").count_text("hello world") == 2


def test_bad_versions_name_the_choices() -> None:
    with pytest.raises(ValueError, match="llama:3 or llama:4"):
        get_counter("llama:3.1")
    with pytest.raises(ValueError, match="llama:3 or llama:4"):
        get_counter("llama")


def test_a_missing_package_names_the_extra() -> None:
    missing = dataclasses.replace(LLAMA3_ENCODING, package="llama_models_not_installed")
    with pytest.raises(TokenizerDataError, match=r"llama-models package.*not installed.*pip install 'llama-models"):
        build_packaged_encoding(missing)


def test_a_changed_rank_file_is_refused(tmp_path: Path) -> None:
    original = package_folder(LLAMA3_ENCODING) / LLAMA3_ENCODING.path
    (tmp_path / "llama3").mkdir()
    (tmp_path / LLAMA3_ENCODING.path).write_bytes(original.read_bytes()[:-200])
    with pytest.raises(TokenizerDataError, match=r"sha256 \w+ does not match 82e9d319.*pip install 'llama-models"):
        build_packaged_encoding(LLAMA3_ENCODING, folder=tmp_path)


def test_tools_never_cost_more_than_count_tools() -> None:
    """count_tools (what the planner reserves) is what tools add to a conversation with neither a system nor a user
    message, and at least what they add to any other."""
    for version in ("3", "4"):
        counter = get_counter(f"llama:{version}")
        assert counter.count_messages([AIMessage("x")], tools=TOOLS) - counter.count_messages(
            [AIMessage("x")]) == counter.count_tools(TOOLS)
        for messages in CONVERSATIONS:
            added = counter.count_messages(messages, tools=TOOLS) - counter.count_messages(messages)
            assert 0 < added <= counter.count_tools(TOOLS)


def test_long_text_is_counted_in_linear_time() -> None:
    """One 120,000-letter word is one pre-token: a quadratic merge would take minutes, this a fraction of a second."""
    counter = get_counter("llama:3")
    assert counter.count_text("a" * 120_000) == 15_000
    assert counter.count_messages([HumanMessage("a" * 120_000), AIMessage("東" * 60_000)]) > 75_000


def test_malformed_tools_are_named() -> None:
    with pytest.raises(TypeError, match=r"tools\[1\]: expected a dict"):
        get_counter("llama:3").count_messages([HumanMessage("hi")], tools=[TOOLS[0], "get_weather"])


def test_text_with_lone_surrogates_is_counted_as_tiktoken_counts_it() -> None:
    """A JSON "\\ud800" escape gives a lone surrogate: counted as U+FFFD, never an error."""
    for spec in ("llama:3", "qwen:3"):
        counter = get_counter(spec)
        assert counter.count_text("a\ud800b") == counter.count_text("a\ufffdb")
