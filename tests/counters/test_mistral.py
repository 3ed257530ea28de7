"""MistralCounter: ctxwin conversations counted as mistral-common's own encode_chat_completion counts them."""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("mistral_common", reason="the Mistral counter needs the mistral extra")
pytest.importorskip("sentencepiece", reason="the Mistral counter needs the mistral extra")

from mistral_common.protocol.instruct import messages as mm
from mistral_common.protocol.instruct.request import ChatCompletionRequest
from mistral_common.protocol.instruct.tool_calls import Function, FunctionCall, Tool, ToolCall
from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

from ctxwin.counters import TokenizerDataError, get_counter, get_model
from ctxwin.counters._families.mistral import SHIPPED, SYSTEM_JOIN_SLACK, MistralCounter, shipped_file
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

SPM_WITH_TOOLS = ("v2", "v3", "v7")


def _corpus_lines() -> list[str]:
    """Short chat lines in eight languages (chatterbot-corpus), else a fixed multilingual set."""
    fixed = ["Какая погода в Москве?", "東京の天気はどうですか？", "今天天气怎么样？", "날씨가 어때요?",
             "हिंदी में बात करें", "Wie spät ist es?  Bitte   antworte.", "هوا چطور است؟", "tabs\tand\nnewlines"]
    spec = importlib.util.find_spec("chatterbot_corpus")
    if spec is None or spec.origin is None or importlib.util.find_spec("yaml") is None:
        return fixed
    import yaml

    lines = list(fixed)
    for language in ("chinese", "japanese", "korean", "russian", "ukrainian", "persian", "hindi", "english"):
        for path in sorted((Path(spec.origin).parent / "data" / language).glob("*.yml"))[:2]:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            dialogs = data.get("conversations") or []
            lines += [line for dialog in dialogs[:6] for line in dialog if isinstance(line, str) and line.strip()]
    return lines


LINES = _corpus_lines()
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "天気を調べる / узнать погоду",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "город"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}},
]


def _chat(lines: list[str], *, system: bool) -> list[BaseMessage]:
    """user / assistant-with-tool-call / tool / assistant turns over ``lines``, ending with a user turn."""
    out: list[BaseMessage] = [SystemMessage("You are terse. Отвечай кратко. 简短回答。")] if system else []
    for turn in range(0, len(lines) - 2, 3):
        call_id = f"c{turn:08d}"  # nine characters, as Mistral's API writes them
        out += [
            HumanMessage(lines[turn]),
            AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": lines[turn + 1]}, "id": call_id}]),
            ToolMessage(json.dumps({"answer": lines[turn + 1]}, ensure_ascii=False), tool_call_id=call_id,
                        name="get_weather"),
            AIMessage(lines[turn + 2]),
        ]
    return [*out, HumanMessage(lines[-1])]


def _reference_request(chat: list[BaseMessage], tools: list[dict[str, Any]] | None) -> ChatCompletionRequest:
    """The same request written directly with mistral-common's classes (what a Mistral client sends)."""
    items: list[Any] = []
    for message in chat:
        if isinstance(message, SystemMessage):
            items.append(mm.SystemMessage(content=message.content))
        elif isinstance(message, ToolMessage):
            items.append(mm.ToolMessage(content=message.content, tool_call_id=message.tool_call_id,
                                        name=message.name))
        elif isinstance(message, AIMessage):
            calls = [ToolCall(id=c["id"], function=FunctionCall(name=c["name"], arguments=json.dumps(c["args"])))
                     for c in message.tool_calls]
            items.append(mm.AssistantMessage(content=message.content or None, tool_calls=calls or None))
        else:
            items.append(mm.UserMessage(content=message.content))
    defined = [Tool(function=Function(**t["function"])) for t in tools or []]
    return ChatCompletionRequest(messages=items, tools=defined or None)


@functools.cache
def _reference(name: str) -> MistralTokenizer[Any, Any, Any, Any, Any]:
    return MistralTokenizer.from_file(str(shipped_file(name)))


def _reference_count(name: str, chat: list[BaseMessage], tools: list[dict[str, Any]] | None = None) -> int:
    return len(_reference(name).encode_chat_completion(_reference_request(chat, tools)).tokens)


@pytest.mark.parametrize("name", SPM_WITH_TOOLS)
@pytest.mark.parametrize("system", [False, True])
def test_requests_with_tools_equal_mistral_common(name: str, system: bool) -> None:
    counter = MistralCounter(name)
    chat = _chat(LINES[:40], system=system)
    assert counter.count_messages(chat, tools=TOOLS) == _reference_count(name, chat, TOOLS)
    assert counter.count_messages(chat) == _reference_count(name, chat)


@pytest.mark.slow
def test_tekken_request_with_tools_equals_mistral_common() -> None:
    counter = get_counter("open-mistral-nemo")  # tekken takes seconds to load: the counter's file is the reference
    assert isinstance(counter, MistralCounter)
    chat = _chat(LINES[:40], system=True)
    reference = counter.tokenizer.encode_chat_completion(_reference_request(chat, TOOLS))
    assert counter.count_messages(chat, tools=TOOLS) == len(reference.tokens)
    plain = _chat(LINES[:40], system=False)
    assert counter.count_messages(plain, tools=TOOLS) == sum(counter.count_message_batch(plain)) + 1 + \
        counter.count_tools(TOOLS)


def test_v1_chat_without_tools_equals_mistral_common() -> None:
    chat: list[BaseMessage] = [SystemMessage("Be brief."), HumanMessage(LINES[0]), AIMessage(LINES[1]),
                               HumanMessage(LINES[2])]
    assert MistralCounter("v1").count_messages(chat) == _reference_count("v1", chat)
    with pytest.raises(ValueError, match="v1 has no tool calling"):
        MistralCounter("v1").count_messages(chat, tools=TOOLS)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["v3", "v7"])
def test_share_of_each_message_adds_up_to_the_request(name: str) -> None:
    # No system message before v7 and no two neighbouring messages of one role: exactly additive.
    counter = MistralCounter(name)
    chat = _chat(LINES, system=name == "v7")
    overhead = 1 + counter.count_tools(TOOLS)  # BOS and the [AVAILABLE_TOOLS] block
    assert counter.count_messages(chat, tools=TOOLS) == sum(counter.count_message_batch(chat)) + overhead
    assert counter.count_message_batch(chat) == [counter.count_message(m) for m in chat]


def test_system_prompt_joined_into_the_last_user_message_stays_within_the_stated_slack() -> None:
    counter = MistralCounter("v3")
    for end in range(4, len(LINES), 7):
        chat = _chat(LINES[end - 4:end], system=True)
        difference = counter.count_messages(chat) - sum(counter.count_message_batch(chat)) - 1
        assert abs(difference) <= SYSTEM_JOIN_SLACK


def test_v2_drops_tool_history_before_the_last_user_message() -> None:
    counter = MistralCounter("v2")
    chat = _chat(LINES[:10], system=False)
    assert counter.count_messages(chat) < sum(counter.count_message_batch(chat)) + 1
    assert counter.count_messages(chat) == _reference_count("v2", chat)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=40).filter(str.strip), min_size=4, max_size=10))
def test_random_text_is_additive_for_v7_and_equals_mistral_common(lines: list[str]) -> None:
    counter = MistralCounter("v7")
    chat = _chat(lines, system=True)
    total = counter.count_messages(chat, tools=TOOLS)
    assert total == sum(counter.count_message_batch(chat)) + 1 + counter.count_tools(TOOLS)
    assert total == _reference_count("v7", chat, TOOLS)


def test_text_counts_and_other_message_forms() -> None:
    counter = MistralCounter("v3")
    assert counter.count_text("hello world") == 3  # ▁hell o ▁world, as sentencepiece splits it with this vocabulary
    assert counter.count_text("hello world") == len(_reference("v3").instruct_tokenizer.tokenizer.encode(
        "hello world", bos=False, eos=False))
    assert counter.count_text("\ud83d\ude00 \ud800") == counter.count_text("😀 \ufffd")  # surrogates as tiktoken
    openai_form = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "abcdefghi", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "12:00"}]
    assert counter.count_messages(openai_form) == counter.count_messages(
        [HumanMessage("hi"), AIMessage("", tool_calls=[{"name": "now", "args": {}, "id": "abcdefghi"}]),
         ToolMessage("12:00", tool_call_id="abcdefghi")])
    legacy = AIMessage("", additional_kwargs={"function_call": {"name": "now", "arguments": "{\"tz\": \"UTC\"}"}})
    assert counter.count_message(legacy) > counter.count_message(AIMessage("", additional_kwargs={
        "function_call": {"name": "now", "arguments": "{}"}}))
    assert counter.count_messages([]) == 0


def test_requests_mistral_refuses_are_value_errors() -> None:
    counter = MistralCounter("v3")
    with pytest.raises(ValueError, match=r"^messages\[0\]: mistral:v3 .*cannot encode"):
        counter.count_message(AIMessage(""))  # no content and no tool call
    both = AIMessage("text", tool_calls=[{"name": "now", "args": {}, "id": "abcdefghi"}])
    with pytest.raises(ValueError, match=r"^messages\[1\]: mistral:v3 .*cannot encode"):
        counter.count_messages([HumanMessage("hi"), both])
    with pytest.raises(ValueError, match=r"^mistral:v2 .*cannot encode.*multiple tool results"):
        MistralCounter("v2").count_messages([  # each message is fine; v2 refuses two results for one call turn
            HumanMessage("hi"), AIMessage("", tool_calls=[{"name": "now", "args": {}, "id": "abcdefghi"}]),
            ToolMessage("1", tool_call_id="abcdefghi"), ToolMessage("2", tool_call_id="abcdefghi")])


def test_models_map_to_their_tokenizers_and_uncovered_ones_refuse() -> None:
    assert get_model("mistral/open-mixtral-8x22b").counter == "mistral:v3"
    assert get_model("mistral-large-2411").counter == "mistral:v7"
    assert get_model("pixtral-12b").counter == "mistral:tekken-v3-mm"
    assert get_model("mistralai/Mistral-Nemo-Instruct-2407").counter == "mistral:tekken-v3"
    assert get_model("mistral-small-2312").name == "open-mixtral-8x7b"
    for name in ("mistral-large-latest", "magistral-medium-2509", "devstral-small-2507", "mistral-medium-2508"):
        spec = get_model(name)
        assert spec.counter == "mistral:unshipped" and "NOT COUNTED" in spec.note
        with pytest.raises(TokenizerDataError, match=r"mistral:<path to tekken\.json>.*approximate:safe"):
            get_counter(name)


def test_a_tokenizer_file_by_path(tmp_path: Path) -> None:
    copy = tmp_path / "tokenizer.model.v3"
    copy.write_bytes(shipped_file("v3").read_bytes())
    assert get_counter(f"mistral:{copy}").count_text("hello world") == MistralCounter("v3").count_text("hello world")
    with pytest.raises(ValueError, match="no Mistral tokenizer 'nope'"):
        get_counter("mistral:nope")
    with pytest.raises(ValueError, match="needs a tokenizer"):
        get_counter("mistral")
    broken = tmp_path / "tekken.json"
    broken.write_text("{}", encoding="utf-8")
    with pytest.raises(TokenizerDataError, match="not a Mistral tokenizer file"):
        MistralCounter(broken)


def test_every_shipped_file_matches_its_hash() -> None:
    for name in SHIPPED:
        assert shipped_file(name).is_file()


_SUBPROCESS_SETUP = """
import importlib.util, sys
from pathlib import Path
import ctxwin.counters._families.mistral as mistral
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _SUBPROCESS_SETUP + code], capture_output=True, text=True,
                          check=False, env={"CTXWIN_LOAD_PLUGINS": "", "PATH": ""})


@pytest.mark.slow
def test_missing_package_names_the_extra() -> None:
    # A real interpreter in which mistral_common cannot be found (a None entry in sys.modules blocks the import).
    result = _run("""
sys.modules["mistral_common"] = None
real_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.startswith("mistral_common") else real_find_spec(name, *a)
try:
    mistral.MistralCounter("v3")
except mistral.TokenizerDataError as exc:
    print(exc)
""")
    assert "mistral-common package is not installed" in result.stdout
    assert "pip install 'mistral-common[sentencepiece]>=1.13' (ctxwin's 'mistral' extra)" in result.stdout
    # mistral-common without sentencepiece (installed without the extra): SentencePiece files name the extra too.
    result = _run("""
sys.modules["sentencepiece"] = None
real_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.startswith("sentencepiece") else real_find_spec(name, *a)
try:
    mistral.MistralCounter("v3")
except mistral.TokenizerDataError as exc:
    print(exc)
""")
    assert "`sentencepiece` is not installed" in result.stdout
    assert "Fix: pip install 'mistral-common[sentencepiece]>=1.13'" in result.stdout


def test_hash_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    # A copy of mistral-common whose v3 file is altered: the counter refuses it, naming the file and the fix.
    package = Path(str(shipped_file("v3").parent.parent))
    fake = tmp_path / "mistral_common"
    (fake / "data").mkdir(parents=True)
    (fake / "__init__.py").write_text("", encoding="utf-8")
    (fake / "data" / SHIPPED["v3"][0]).write_bytes(shipped_file("v3").read_bytes() + b"x")
    result = _run(f"""
sys.path.insert(0, {str(tmp_path)!r})
assert Path(importlib.util.find_spec("mistral_common").origin).parent != Path({str(package)!r})
try:
    mistral.MistralCounter("v3")
except mistral.TokenizerDataError as exc:
    print(exc)
""")
    assert "does not match 9addc8bd" in result.stdout, result.stderr
    assert "pip install --force-reinstall mistral-common" in result.stdout


@pytest.mark.parametrize("name", ["v3", "v7"])
def test_trimming_with_a_mistral_counter_fits_the_exact_count(name: str) -> None:
    # The engine finds Mistral's framing non-additive (two user messages merge) and counts whole candidate lists.
    from ctxwin.trim import trim_messages

    counter = MistralCounter(name)
    chat = _chat(LINES[:31], system=True)
    full = counter.count_messages(chat)
    for budget in (full // 4, full // 2, full - 1):
        kept = trim_messages(chat, max_tokens=budget, token_counter=counter, include_system=True, start_on="human")
        assert kept and kept[-1] is chat[-1] and isinstance(kept[0], SystemMessage)
        assert counter.count_messages(kept) <= budget
        assert len(kept) < len(chat)
