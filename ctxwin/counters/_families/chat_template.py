"""Rendering a Hugging Face chat template the way ``transformers``' ``apply_chat_template`` does, without it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import jinja2
import jinja2.ext
import jinja2.meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ctxwin._errors import InvalidInputError
from ctxwin.counters._errors import TokenizerDataError

_SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def _raise_exception(message: str) -> NoReturn:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


def _environment() -> ImmutableSandboxedEnvironment:
    # transformers' setup; its ``{% generation %}`` tag is left out: it only builds training masks.
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


def _token_text(value: Any) -> str | None:
    """A special token from tokenizer_config.json: a string or an AddedToken dict with ``content``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


class ChatTemplate:
    """A compiled chat template plus the special-token variables it is rendered with."""

    def __init__(self, source: str, special_tokens: Mapping[str, str] | None = None) -> None:
        env = _environment()
        try:
            self.template = env.from_string(source)
            self.uses_tools = "tools" in jinja2.meta.find_undeclared_variables(env.parse(source))
        except jinja2.TemplateSyntaxError as exc:
            raise InvalidInputError(f"chat template does not compile: {exc} (line {exc.lineno})") from exc
        self.source = source
        self.special_tokens = dict(special_tokens or {})

    @classmethod
    def from_config(cls, config_path: Path) -> ChatTemplate | None:
        """The template of a ``tokenizer_config.json`` (or a ``chat_template.jinja`` beside it), if it has one."""
        try:
            config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
        except (OSError, json.JSONDecodeError) as exc:
            raise TokenizerDataError(f"{config_path}: cannot read tokenizer config: {exc}") from exc
        source = config.get("chat_template")
        if isinstance(source, list):  # named templates: [{"name": "default", "template": ...}, ...]
            named = {t.get("name"): t.get("template") for t in source if isinstance(t, dict)}
            source = named.get("default")
        jinja_file = config_path.with_name("chat_template.jinja")
        if not isinstance(source, str) and jinja_file.is_file():
            source = jinja_file.read_text(encoding="utf-8")
        if not isinstance(source, str):
            return None
        tokens = {key: text for key in _SPECIAL_TOKEN_KEYS if (text := _token_text(config.get(key))) is not None}
        return cls(source, tokens)

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        add_generation_prompt: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> str:
        """The prompt text for ``messages``; a template that rejects the conversation raises ValueError."""
        try:
            return self.template.render(
                messages=list(messages),
                tools=list(tools) if tools else None,
                add_generation_prompt=add_generation_prompt,
                **self.special_tokens,
            )
        except (jinja2.TemplateError, TypeError) as exc:
            raise InvalidInputError(f"the chat template rejected the conversation: {exc}") from exc
