"""Chat completions (``output="openai"``): ``client.chat.completions.create(**plan.request)``, with the caller's
own OpenAI dicts back for the messages kept unchanged (their unknown keys and ``"content": null`` survive).
"""

from __future__ import annotations

from typing import Any

from ctxwin.messages._base import BaseMessage
from ctxwin.messages._convert import is_request
from ctxwin.messages._forms import CallerForms, OpenAIDicts
from ctxwin.messages._openai_cache import OpenAIPromptCache
from ctxwin.messages._openai_format import convert_to_openai_messages
from ctxwin.messages._placement import VIDEO
from ctxwin.messages._request_forms.form import MediaRules
from ctxwin.messages._tool_forms import chosen_tool


class ChatCompletions(OpenAIPromptCache):
    """Media in user messages only, video nowhere; ``max_completion_tokens`` (``max_tokens`` is deprecated)."""

    name = "openai"
    limit_key = "max_completion_tokens"
    media = MediaRules(frozenset({"user"}), VIDEO)

    def as_sent(
        self, given: Any, items: list[BaseMessage], forms: CallerForms | None
    ) -> tuple[list[BaseMessage], CallerForms | None]:
        if forms is None:
            forms = OpenAIDicts.read_dicts(given.get("messages") if is_request(given) else given, items)
        return items, forms

    def write(self, messages: list[BaseMessage], forms: CallerForms | None) -> tuple[list[Any], Any]:
        if isinstance(forms, OpenAIDicts):
            return forms.back_all(messages), None
        return convert_to_openai_messages(messages), None

    def tools_as_sent(self, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        return tools  # the form ctxwin holds tools in

    def tool_choice(self, choice: Any) -> Any:
        mode, name = chosen_tool(choice)
        return mode if name is None else {"type": "function", "function": {"name": name}}


CHAT = ChatCompletions()
