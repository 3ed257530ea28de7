"""gpt-oss: the o200k_harmony encoding with OpenAI's harmony chat framing, exact and offline.

o200k_harmony is o200k_base plus harmony's special tokens (tiktoken's registry builds it from the o200k data ctxwin
already ships). Harmony renders every message as ``<|start|>{header}<|message|>{content}<|end|>``, as the
``openai-harmony`` package does (the tests compare with it):

- the request opens with harmony's system message (``SystemContent.new()``: model identity, knowledge cutoff,
  ``Reasoning: medium``, the valid channels; no date) and primes the reply with ``<|start|>assistant``;
- a system message is harmony's developer message, ``# Instructions\\n\\n{content}``;
- an assistant reply is ``assistant<|channel|>final``; each tool call is
  ``assistant to=functions.{name}<|channel|>commentary <|constrain|>json<|message|>{args}<|call|>``;
- a tool result is ``functions.{name} to=assistant<|channel|>commentary`` (its ``name``, else ``tool``).

Tool definitions are counted as the tokens of their JSON, not harmony's TypeScript-like namespace rendering.
"""

from __future__ import annotations

import json

from ctxwin.counters.base import BaseTokenCounter
from ctxwin.counters.tiktoken_counter import TiktokenCounter
from ctxwin.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from ctxwin.messages.openai_format import openai_role

SYSTEM_PROMPT = (
    "You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n\nReasoning: medium\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message."
)
INSTRUCTIONS_HEADER = "# Instructions\n\n"
# <|start|> <|message|> <|end|>; a channel adds <|channel|>; a tool call adds <|constrain|> (and ends in <|call|>
# instead of <|end|>).
FRAME_TOKENS = 3
CHANNEL_TOKENS = 1
CONSTRAIN_TOKENS = 1


class HarmonyCounter(TiktokenCounter):
    """Counts gpt-oss requests exactly as harmony renders them (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__("o200k_harmony")
        self.name = "harmony"
        # The system message, and ``<|start|>assistant`` priming the reply.
        self.reply_priming = (FRAME_TOKENS + self.count_text("system") + self.count_text(SYSTEM_PROMPT)
                              + 1 + self.count_text("assistant"))

    def __repr__(self) -> str:
        return "HarmonyCounter()"

    def message_texts(self, message: BaseMessage) -> tuple[list[str], int]:
        texts, fixed = self.content_parts(message.content)
        label = self.label_tokens
        if message.name and not isinstance(message, ToolMessage):
            fixed += label(message.name)  # harmony has no author names for these roles: counted as sent
        if isinstance(message, SystemMessage):
            return ["".join((INSTRUCTIONS_HEADER, *texts))], fixed + FRAME_TOKENS + label("developer")
        if isinstance(message, ToolMessage):
            header = f"functions.{message.name or 'tool'} to=assistant"
            return texts, fixed + FRAME_TOKENS + CHANNEL_TOKENS + label(header) + label("commentary")
        if not isinstance(message, AIMessage):
            return texts, fixed + FRAME_TOKENS + label(openai_role(message))
        calls = [(call["name"], json.dumps(call["args"], ensure_ascii=False)) for call in message.tool_calls]
        calls += [(bad.get("name") or "", bad.get("args") or "") for bad in message.invalid_tool_calls]
        legacy = message.additional_kwargs.get("function_call")
        if not calls and isinstance(legacy, dict):
            calls.append((str(legacy.get("name") or ""), str(legacy.get("arguments") or "")))
        if any(texts) or not calls:
            fixed += FRAME_TOKENS + CHANNEL_TOKENS + label("assistant") + label("final")
        else:
            texts = []
        for name, arguments in calls:
            fixed += FRAME_TOKENS + CHANNEL_TOKENS + CONSTRAIN_TOKENS + label(f"assistant to=functions.{name}")
            fixed += label("commentary ") + label("json")
            texts.append(arguments)
        return texts, fixed

    count_tools = BaseTokenCounter.count_tools  # the JSON of the definitions, not OpenAI's chat-API overheads
