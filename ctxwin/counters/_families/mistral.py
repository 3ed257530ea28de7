"""Mistral models, counted exactly and offline by Mistral's own ``mistral-common`` (the ``mistral`` extra).
Its framing is not additive, so the counter says so and the trim engine measures whole requests (docs/counters.md).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxwin._errors import InvalidInputError
from ctxwin._install import install_hint
from ctxwin.counters._base import BaseTokenCounter, scalar_text
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._families.openai_tools import function_of
from ctxwin.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from ctxwin.messages._convert import MessageLike, read_messages, request_tools
from ctxwin.messages._openai_format import openai_role

if TYPE_CHECKING:
    from mistral_common.protocol.instruct.messages import AssistantMessage as MistralAssistant
    from mistral_common.protocol.instruct.messages import SystemMessage as MistralSystem
    from mistral_common.protocol.instruct.messages import ToolMessage as MistralTool
    from mistral_common.protocol.instruct.messages import UserMessage as MistralUser
    from mistral_common.protocol.instruct.tool_calls import Tool
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    MistralMessage = MistralAssistant | MistralSystem | MistralTool | MistralUser

# A system prompt written into a user message (tokenizers before v7) is tokenized with that message's text; the
# join shifts the count from the separate counts by at most this many tokens (the tests check it).
SYSTEM_JOIN_SLACK = 2


# The tokenizer files inside mistral-common's ``data`` directory, by counter argument, with the sha256 of each file
# as ctxwin was checked against (mistral-common 1.13); the models using them are in builtin_models.
SHIPPED: dict[str, tuple[str, str]] = {
    "v1": ("tokenizer.model.v1", "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055"),
    "v2": ("mistral_instruct_tokenizer_240216.model.v2",
           "37f00374dea48658ee8f5d0f21895b9bc55cb0103939607c8185bfd1c6ca1f89"),
    "v3": ("mistral_instruct_tokenizer_240323.model.v3",
           "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33"),
    "v7": ("mistral_instruct_tokenizer_241114.model.v7",
           "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a"),
    "v7-mm": ("mistral_instruct_tokenizer_241114.model.v7m1",
              "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a"),
    "tekken-v3": ("tekken_240718.json", "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516"),
    "tekken-v3-mm": ("tekken_240911.json", "1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316"),
}
# The counter argument of the models whose tokenizer (a tekken version newer than 2024's v3) mistral-common does
# not ship: the counter refuses to build and says how to count them.
UNSHIPPED = "unshipped"

_lock = threading.Lock()


def _data_dir() -> Path:
    """mistral-common's data directory, found without importing the package."""
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerDataError(f"the mistral-common package is not installed. Fix: {install_hint('mistral')}")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def shipped_file(name: str) -> Path:
    """The sha256-checked path of a shipped tokenizer (``SHIPPED`` key)."""
    file, expected = SHIPPED[name]
    path = _data_dir() / file
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise TokenizerDataError(
            f"{path}: cannot read Mistral tokenizer {name!r} ({exc}); this mistral-common does not ship it. "
            f"Fix: {install_hint('mistral')}"
        ) from exc
    if digest != expected:
        raise TokenizerDataError(
            f"{path}: sha256 {digest} does not match {expected}, the file ctxwin was checked against; "
            f"the file is corrupt or a different vocabulary. Fix: pip install --force-reinstall mistral-common"
        )
    return path


@functools.cache
def _load(path: str) -> MistralTokenizer[Any, Any, Any, Any, Any]:
    """One MistralTokenizer per file and process (a tekken file takes seconds to load)."""
    try:
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    except ImportError as exc:
        raise TokenizerDataError(f"mistral-common cannot be imported ({exc}). Fix: {install_hint('mistral')}") from exc
    from mistral_common.exceptions import MistralCommonException

    try:
        return MistralTokenizer.from_file(path)
    except (ImportError, ModuleNotFoundError) as exc:  # a SentencePiece file without the sentencepiece package
        raise TokenizerDataError(f"{path}: {exc}. Fix: {install_hint('mistral')}") from exc
    except (MistralCommonException, OSError, ValueError, KeyError, TypeError, AssertionError) as exc:
        raise TokenizerDataError(f"{path}: not a Mistral tokenizer file mistral-common can load: {exc}") from exc


def tokenizer_origin() -> str:
    """Where the shipped tokenizers come from, or why they are unavailable (for ``ctxwin counters``)."""
    try:
        folder = _data_dir()
    except TokenizerDataError as exc:
        return f"unavailable: {exc}"
    return f"mistral-common package data {folder} (sha256-checked: {', '.join(SHIPPED)}), or a tokenizer file path"


class MistralCounter(BaseTokenCounter):
    """Counts with mistral-common; see docs/counters.md for the framing (and why it is not additive).

    ``tokenizer`` is a shipped tokenizer's name (``SHIPPED``: ``v3``, ``tekken-v3``...) or the path of a Mistral
    tokenizer file (``tekken.json``, ``tokenizer.model.v3``), loaded offline without a hash check.
    """

    additive = False

    def __init__(self, tokenizer: str | Path) -> None:
        name = str(tokenizer)
        if name == UNSHIPPED:
            raise TokenizerDataError(
                "this Mistral model's tokenizer (a tekken version newer than those mistral-common ships) is not "
                "available offline. Fix: download the model's tekken.json from its Hugging Face repository and "
                "count with 'mistral:<path to tekken.json>'; or, for an estimate with a margin, ask for "
                "'approximate:safe' explicitly"
            )
        if name in SHIPPED:
            path = shipped_file(name)
        else:
            path = Path(name)
            if not path.is_file():
                raise InvalidInputError(
                    f"no Mistral tokenizer {name!r}: give a shipped name ({', '.join(SHIPPED)}) or the path of a "
                    "tokenizer file (tekken.json, tokenizer.model.v*)"
                )
        with _lock:  # loading takes seconds: one thread loads, the others wait for it
            self.tokenizer = _load(str(path.resolve()))
        self.name = f"mistral:{name}"
        self.version = self.tokenizer.version.value
        self._instruct: Any = self.tokenizer.instruct_tokenizer
        self._system_in_user = self.version in ("v1", "v2", "v3")

    def __repr__(self) -> str:
        return f"MistralCounter({self.name!r}, version={self.version!r})"



    def count_text(self, text: str) -> int:
        return len(self._instruct.tokenizer.encode(scalar_text(text), bos=False, eos=False))

    def _convert(self, message: BaseMessage) -> tuple[MistralMessage, int]:
        """The mistral-common message for a ctxwin message, and the tokens of its non-text blocks."""
        from mistral_common.protocol.instruct.messages import (
            AssistantMessage,
            UserMessage,
        )
        from mistral_common.protocol.instruct.messages import (
            SystemMessage as MistralSystemMessage,
        )
        from mistral_common.protocol.instruct.messages import (
            ToolMessage as MistralToolMessage,
        )
        from mistral_common.protocol.instruct.tool_calls import FunctionCall, ToolCall

        texts, fixed = self.content_parts(message.content)
        text = scalar_text("".join(texts))
        if isinstance(message, SystemMessage) or openai_role(message) in ("system", "developer"):
            return MistralSystemMessage(content=text), fixed
        if isinstance(message, ToolMessage):
            return MistralToolMessage(content=text, tool_call_id=message.tool_call_id, name=message.name), fixed
        if not isinstance(message, AIMessage):
            return UserMessage(content=text), fixed
        calls = [(c["name"], json.dumps(c["args"], ensure_ascii=False), c.get("id")) for c in message.tool_calls]
        calls += [(bad.get("name") or "", bad.get("args") or "", bad.get("id")) for bad in message.invalid_tool_calls]
        legacy = message.additional_kwargs.get("function_call")
        if not calls and isinstance(legacy, dict):  # the pre-tools OpenAI format: counted as a tool call
            calls.append((str(legacy.get("name") or ""), str(legacy.get("arguments") or ""), None))
        tool_calls = [ToolCall(id=call_id or "null", function=FunctionCall(name=name, arguments=scalar_text(args)))
                      for name, args, call_id in calls]
        return AssistantMessage(content=text or None, tool_calls=tool_calls or None), fixed

    def _tools(self, tools: Sequence[dict[str, Any]]) -> list[Tool]:
        from mistral_common.protocol.instruct.tool_calls import Function, Tool

        out = []
        for index, tool in enumerate(tools):
            function = function_of(tool, index)
            parameters = function.get("parameters") or function.get("input_schema") or {}
            out.append(Tool(function=Function(name=function["name"], description=function.get("description") or "",
                                              parameters=parameters)))
        return out

    def _encode_one(self, message: MistralMessage) -> int:
        """Tokens of one message as mistral-common encodes it in the middle of a conversation."""
        from mistral_common.protocol.instruct.messages import AssistantMessage, SystemMessage, ToolMessage

        instruct = self._instruct
        if isinstance(message, SystemMessage):
            if self._system_in_user:  # written into the last user message, joined by a blank line
                return self.count_text(f"{message.content}\n\n")
            return len(instruct.encode_system_message(message)[0])
        if isinstance(message, ToolMessage):
            return len(instruct.encode_tool_message(message, False)[0])
        if isinstance(message, AssistantMessage):
            return len(instruct.encode_assistant_message(message, False))
        return len(instruct.encode_user_message(message, None, False, False, None)[0])

    def count_message(self, message: MessageLike) -> int:
        return sum(self.count_message_batch(read_messages([message])))

    def count_message_batch(self, messages: Sequence[BaseMessage]) -> list[int]:
        counts = []
        for index, message in enumerate(messages):
            converted, fixed = self._convert(message)
            counts.append(self._mistral_call(index, lambda m=converted: self._encode_one(m)) + fixed)
        return counts

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        """The ``[AVAILABLE_TOOLS]`` block written before the last user message."""
        if not tools:
            return 0
        dumped = [tool.model_dump(exclude={"function": {"strict": True}}) for tool in self._tools(tools)]
        return 2 + self.count_text(json.dumps(dumped, ensure_ascii=False))

    def count_messages(self, messages: Sequence[MessageLike], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        from mistral_common.protocol.instruct.normalize import get_normalizer
        from mistral_common.protocol.instruct.request import ChatCompletionRequest

        tools = request_tools(messages) if tools is None else tools  # a whole request's own tools
        messages = read_messages(messages)
        if not messages and not tools:
            return 0
        converted: list[MistralMessage] = []
        fixed = 0
        for message in messages:
            item, extra = self._convert(message)
            converted.append(item)
            fixed += extra
        if tools and self.version == "v1":
            raise InvalidInputError(f"{self.name}: Mistral tokenizer v1 has no tool calling; send no tools to this "
                                    f"model")
        request = ChatCompletionRequest(messages=converted, tools=self._tools(tools or []) or None)
        normalizer = get_normalizer(self.tokenizer.version, self._instruct.tokenizer.model_settings_builder)

        def encode() -> int:
            return len(self._instruct.encode_instruct(normalizer.from_chat_completion_request(request)).tokens)

        try:
            return self._mistral_call(None, encode) + fixed
        except ValueError:
            self.count_message_batch(messages)  # a message mistral-common refuses on its own is named
            raise

    def _mistral_call(self, index: int | None, call: Any) -> int:
        """``call()``, with mistral-common's refusals (a request its encoder cannot write) as a ValueError."""
        from mistral_common.exceptions import MistralCommonException

        try:
            count: int = call()
        except (MistralCommonException, ValueError, AssertionError, NotImplementedError) as exc:
            where = f"messages[{index}]: " if index is not None else ""
            raise InvalidInputError(f"{where}{self.name} (Mistral tokenizer {self.version}) cannot encode it: "
                                    f"{exc}") from exc
        return count
