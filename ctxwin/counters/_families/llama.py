"""Llama 3.x and Llama 4: exact offline counts with Meta's header-token chat format (docs/counters.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.counters._families.openai_tools import function_of
from ctxwin.counters._families.packaged_tiktoken import PackagedEncoding, load_packaged_encoding
from ctxwin.counters._families.tiktoken_counter import TiktokenCounter
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from ctxwin.messages._convert import MessageLike, read_messages, request_tools
from ctxwin.messages._openai_format import openai_role

LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
    r"\s+(?!\S)|\s+"
)
LLAMA4_PATTERN = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"""
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"""
    r"""\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
_LLAMA3_NAMED = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>",
    "<|eot_id|>", "<|python_tag|>", "<|image|>",
)
LLAMA3_SPECIAL = (*_LLAMA3_NAMED, *(f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(_LLAMA3_NAMED))))


def _reserved(kind: str, count: int, start: int) -> tuple[str, ...]:
    return tuple(f"<|{kind}_reserved_special_token_{i}|>" for i in range(start, start + count))


_LLAMA4_NAMED = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|header_start|>", "<|header_end|>", "<|eom|>", "<|eot|>", "<|step|>",
    *_reserved("text_post_train", 6, 0), "<|python_start|>", "<|python_end|>", "<|finetune_right_pad|>",
    *_reserved("text_post_train", 61, 8),
    "<|image_start|>", "<|image_end|>", *_reserved("vision", 2, 0), "<|tile_x_separator|>", "<|tile_y_separator|>",
    *_reserved("vision", 4, 2), "<|image|>", "<|vision_reserved_special_token_6|>", "<|patch|>",
    *_reserved("vision", 1041, 7),
    *_reserved("reasoning", 8, 0), "<|reasoning_thinking_start|>", "<|reasoning_thinking_end|>",
)
LLAMA4_SPECIAL = (*_LLAMA4_NAMED, *(f"<|reserved_special_token_{i}|>" for i in range(2048 - len(_LLAMA4_NAMED))))

LLAMA3_ENCODING = PackagedEncoding(
    "llama3", "llama_models", "llama-models", "llama", "llama3/tokenizer.model",
    "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55", LLAMA3_PATTERN, LLAMA3_SPECIAL)
LLAMA4_ENCODING = PackagedEncoding(
    "llama4", "llama_models", "llama-models", "llama", "llama4/tokenizer.model",
    "d0bdbaf59b0762c8c807617e2d8ea51420eb1b1de266df2495be755c8e0ed6ed", LLAMA4_PATTERN, LLAMA4_SPECIAL)
LLAMA_ENCODINGS = {"3": LLAMA3_ENCODING, "4": LLAMA4_ENCODING}

TOOLS_ENVIRONMENT = "Environment: ipython\n"
TOOLS_INSTRUCTION = (
    "Given the following functions, please respond with a JSON for a function call with its proper arguments "
    'that best answers the given prompt.\n\nRespond in the format {"name": function name, "parameters": '
    'dictionary of argument name and its value}.Do not use variables.\n\n'
)
# A header's two special tokens and the message's end token.
FRAME_TOKENS = 3
BEGIN_OF_TEXT = 1


def tool_call_text(name: str, args: Any) -> str:
    """A tool call as ``ToolUtils.encode_tool_call`` writes it in the JSON tool-prompt format."""
    return json.dumps({"type": "function", "name": name, "parameters": args})


def tools_text(tools: Sequence[Any]) -> str:
    """The part that opens the first user message when tools are sent (Llama 3.1's chat template)."""
    for index, tool in enumerate(tools):
        function_of(tool, index)  # a malformed definition is an error naming it, as for the other counters
    return TOOLS_INSTRUCTION + "".join(json.dumps(tool, indent=4, ensure_ascii=False) + "\n\n" for tool in tools)


class LlamaCounter(TiktokenCounter):
    """Counts Llama 3.x (``"3"``) or Llama 4 (``"4"``) requests as ``ChatFormat`` encodes them."""

    def __init__(self, version: str | None) -> None:
        if version not in LLAMA_ENCODINGS:
            raise InvalidInputError(f"the llama counter needs a version: "
                                    f"{' or '.join(f'llama:{v}' for v in LLAMA_ENCODINGS)}"
                                    f" (Llama 3.x or Llama 4), got {version!r}")
        spec = LLAMA_ENCODINGS[version]
        super().__init__(spec.name, encoding=load_packaged_encoding(spec))
        self.version = version
        self.name = f"llama:{version}"
        self.header_tokens = FRAME_TOKENS + self.count_text("\n\n")
        self.reply_priming = BEGIN_OF_TEXT + self.header_tokens - 1 + self.count_text("assistant")

    def __repr__(self) -> str:
        return f"LlamaCounter({self.version!r})"

    def message_texts(self, message: BaseMessage) -> tuple[list[str], int]:
        texts, fixed = self.content_parts(message.content)
        role = {"tool": "ipython", "developer": "system"}.get(openai_role(message), openai_role(message))
        fixed += self.header_tokens + self.label_tokens(role)
        if message.name and role != "ipython":
            fixed += self.label_tokens(message.name)
        if isinstance(message, AIMessage):
            texts.extend(tool_call_text(call["name"], call["args"]) for call in message.tool_calls)
            calls = [(bad.get("name") or "", bad.get("args") or "") for bad in message.invalid_tool_calls]
            legacy = message.additional_kwargs.get("function_call")
            if not message.tool_calls and not calls and isinstance(legacy, dict):
                calls.append((str(legacy.get("name") or ""), str(legacy.get("arguments") or "")))
            # Arguments that are not valid JSON are counted as the text they are, inside the same frame.
            texts.extend(f'{{"type": "function", "name": {json.dumps(name)}, "parameters": {args}}}'
                         for name, args in calls)
        return texts, fixed

    def _frame(self, role: str) -> int:
        return self.header_tokens + self.label_tokens(role)

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        """The ``Environment`` line and the tools part, and the system and user messages they make when the
        conversation has none: the most tools add (what the planner reserves)."""
        if not tools:
            return 0
        return (self.count_text(TOOLS_ENVIRONMENT) + self.count_text(tools_text(tools)) + self._frame("system")
                + self._frame("user"))

    def count_messages(self, messages: Sequence[MessageLike], *,
                       tools: Sequence[dict[str, Any]] | None = None) -> int:
        tools = request_tools(messages) if tools is None else tools  # a whole request's own tools
        messages = read_messages(messages)
        total = super().count_messages(messages, tools=tools)
        if tools:  # joined to the conversation's own system and user messages: no message of their own
            for kind, role in ((SystemMessage, "system"), (HumanMessage, "user")):
                if any(isinstance(message, kind) for message in messages):
                    total -= self._frame(role)
        return total
