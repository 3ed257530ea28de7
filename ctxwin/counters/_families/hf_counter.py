"""The Hugging Face counter: any ``tokenizer.json``, framed by the model's own chat template when one is beside it.
How a template's framing is split into per-message counts and a request overhead: docs/counters.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence, Sized
from pathlib import Path
from typing import Any

import tokenizers

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.counters._base import BaseTokenCounter, scalar_text
from ctxwin.counters._errors import TokenizerDataError
from ctxwin.counters._families.chat_template import ChatTemplate
from ctxwin.counters._families.fast_engines import EngineChoice, choose_engine
from ctxwin.counters._families.hf_sources import HF_SOURCES
from ctxwin.counters._families.hub import hub_tokenizer, is_repo_id
from ctxwin.messages import BaseMessage, convert_to_openai_messages
from ctxwin.messages._convert import MessageLike, read_messages, request_tools


def _tokenizer_file(source: str | Path) -> Path:
    """A tokenizer.json path from a file, a directory holding one, a registered name, or a Hub repo id
    (``owner/name[@revision]`` where no such file or directory exists, fetched through huggingface_hub's cache)."""
    if isinstance(source, str) and source in HF_SOURCES:
        return HF_SOURCES[source]()
    path = Path(source)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file() and isinstance(source, str) and not path.parent.exists() and is_repo_id(source):
        return hub_tokenizer(source)
    if not path.is_file():
        known = ", ".join(sorted(HF_SOURCES))
        raise InvalidInputError(
            f"no tokenizer.json at {path}: give a tokenizer.json path, a directory containing one, a Hub repo id "
            f"(owner/name[@revision]) or a registered name ({known})"
        )
    return path


def _private_unpadded(tokenizer: tokenizers.Tokenizer) -> tokenizers.Tokenizer:
    """``tokenizer`` with padding and truncation off; a copy when they were on, so the caller's is unchanged."""
    if tokenizer.padding is None and tokenizer.truncation is None:
        return tokenizer
    copy = tokenizers.Tokenizer.from_str(tokenizer.to_str())
    copy.no_padding()
    copy.no_truncation()
    return copy


class HFCounter(BaseTokenCounter):
    """Counts with a ``tokenizers.Tokenizer``; see docs/counters.md for the framing.

    ``source`` is a tokenizer.json path (or its directory), a ``tokenizers.Tokenizer``, a registered name such
    as ``"deepseek-v3"``, or a Hugging Face Hub repo id (``"meta-llama/Llama-3.1-8B-Instruct"``, ``@revision``
    optional; see ``ctxwin.counters._families.hub``). With a path, name or repo id, a ``tokenizer_config.json``
    beside the file supplies the chat template; ``chat_template`` overrides it (pass one explicitly for an in-memory
    Tokenizer). ``tokenizer_json`` is the file an in-memory Tokenizer was read from (so a verified faster engine
    can count it); ``engine`` is ``"auto"`` (a verified faster engine where there is one) or ``"reference"``.
    """

    def __init__(
        self,
        source: str | Path | tokenizers.Tokenizer,
        *,
        chat_template: ChatTemplate | None = None,
        name: str | None = None,
        tokenizer_json: bytes | None = None,
        engine: str = "auto",
    ) -> None:
        if isinstance(source, tokenizers.Tokenizer):
            tokenizer, template, label = source, chat_template, "tokenizer"
        elif isinstance(source, (str, Path)):
            path = _tokenizer_file(source)
            try:
                tokenizer_json = path.read_bytes()
                tokenizer = tokenizers.Tokenizer.from_str(tokenizer_json.decode("utf-8"))
            except Exception as exc:  # tokenizers raises a bare Exception for unreadable files
                raise TokenizerDataError(f"{path}: not a loadable tokenizer.json: {exc}") from exc
            template = chat_template or ChatTemplate.from_config(path.with_name("tokenizer_config.json"))
            label = str(source)
        else:
            raise InvalidTypeError(
                f"HFCounter takes a tokenizer.json path, a tokenizers.Tokenizer or a registered name, "
                f"got {type(source).__name__}"
            )
        self.tokenizer = _private_unpadded(tokenizer)
        # A file with padding or truncation switched on is not the file an engine was verified on as used here.
        verifiable = tokenizer_json if self.tokenizer is tokenizer else None
        self.engine: EngineChoice = choose_engine(verifiable, f"tokenizers {tokenizers.__version__}", engine)
        self._encode: Callable[[str], Sized]
        self._encode_batch: Callable[[list[str]], Sequence[Sized]]
        if self.engine.encode is not None and self.engine.encode_batch is not None:
            self._encode, self._encode_batch = self.engine.encode, self.engine.encode_batch
        else:
            self._encode = functools.partial(self.tokenizer.encode, add_special_tokens=False)
            self._encode_batch = functools.partial(self.tokenizer.encode_batch, add_special_tokens=False)
        self.chat_template = template
        self.name = name or f"hf:{label}"
        self._baseline = self._empty_conversation_tokens()

    def _empty_conversation_tokens(self) -> int:
        """Tokens every rendering starts with (BOS...); 0 for a template that rejects an empty conversation."""
        if self.chat_template is None:
            return 0
        try:
            return self.count_text(self.chat_template.render([]))
        except ValueError:
            return 0

    def __repr__(self) -> str:
        return f"HFCounter(name={self.name!r}, chat_template={self.chat_template is not None})"

    @property
    def request_overhead(self) -> int:
        """With a chat template, what rendering an empty conversation with the reply primed gives (BOS, the
        generation prompt); a template that rejects an empty conversation: the rendered start alone."""
        if self.chat_template is None:
            return self.reply_priming
        try:
            return self.count_text(self.chat_template.render([], add_generation_prompt=True))
        except ValueError:
            return self._baseline

    def count_text(self, text: str) -> int:
        try:
            return len(self._encode(text))
        except (TypeError, UnicodeEncodeError):  # surrogates, as in count_texts
            return len(self._encode(scalar_text(text)))

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        # The engines' batch calls run in parallel in Rust with the GIL released. They refuse text holding
        # surrogates (tokenizers with a TypeError, kitoken with a UnicodeEncodeError): such text is counted as
        # tiktoken counts it.
        try:
            encoded = self._encode_batch(list(texts))
        except (TypeError, UnicodeEncodeError):
            encoded = self._encode_batch([scalar_text(t) for t in texts])
        return [len(e) for e in encoded]

    def template_messages(self, messages: Sequence[BaseMessage]) -> tuple[list[dict[str, Any]], int]:
        """Messages as chat-template dicts (OpenAI shape, text content) and the tokens of their non-text blocks."""
        out: list[dict[str, Any]] = []
        fixed = 0
        for message, item in zip(messages, convert_to_openai_messages(list(messages)), strict=True):
            if item["role"] == "developer":
                item["role"] = "system"
            if not isinstance(message.content, str):
                texts, blocks = self.content_parts(message.content)
                fixed += blocks
                item["content"] = "".join(texts)
            out.append(item)
        return out, fixed

    def count_message(self, message: MessageLike) -> int:
        return sum(self.count_message_batch(read_messages([message])))

    def count_message_batch(self, messages: Sequence[BaseMessage]) -> list[int]:
        template = self.chat_template
        if template is None:
            return super().count_message_batch(messages)
        rendered: list[str] = []
        fixed: list[int] = []
        for message in messages:
            items, extra = self.template_messages([message])
            try:
                rendered.append(template.render(items))
                fixed.append(extra - self._baseline)
            except ValueError:  # the template will not render this message alone: generic framing instead
                rendered.append("")
                fixed.append(super().count_message_batch([message])[0])
        return [count + extra for count, extra in zip(self.count_texts(rendered), fixed, strict=True)]

    def count_messages(self, messages: Sequence[MessageLike], *, tools: Sequence[dict[str, Any]] | None = None) -> int:
        tools = request_tools(messages) if tools is None else tools
        messages = read_messages(messages)
        template = self.chat_template
        if template is None:
            return super().count_messages(messages, tools=tools)
        if not messages and not tools:
            return 0
        items, fixed = self.template_messages(messages)
        in_template = template.uses_tools and bool(tools)
        prompt = template.render(items, add_generation_prompt=True, tools=tools if in_template else None)
        tool_tokens = 0 if in_template else self.count_tools(tools or [])
        return self.count_text(prompt) + fixed + tool_tokens
