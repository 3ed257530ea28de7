"""The types ``fit``/``Planner`` return for ``output="openai" | "responses" | "anthropic"``.

They are the SDKs' own request param types (``openai``'s ``ChatCompletionMessageParam`` and
``ResponseInputItemParam``, ``anthropic``'s ``MessageParam`` and ``TextBlockParam``), imported for type checkers
only: a ``mypy --strict`` user passes ``plan.messages`` to ``client.chat.completions.create(messages=...)`` with no
``cast``, and a copy of the SDKs' TypedDicts cannot drift from theirs (TypedDict values are invariant, so a copy must
match exactly). Where an SDK is not installed its types read as plain dicts (``Any`` to a type checker). ctxwin never
imports either SDK at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from typing_extensions import Required, TypedDict

if TYPE_CHECKING:
    from anthropic.types import MessageParam as AnthropicMessage
    from anthropic.types import TextBlockParam as AnthropicTextBlock
    from openai.types.chat import ChatCompletionMessageParam as OpenAIMessage
    from openai.types.responses import ResponseInputItemParam as ResponsesItem
else:
    AnthropicMessage = AnthropicTextBlock = OpenAIMessage = ResponsesItem = dict[str, Any]


class AnthropicRequest(TypedDict, total=False):
    """The message part of an Anthropic Messages request: ``client.messages.create(model=..., max_tokens=...,
    **request)``. ``system`` is present only when the conversation has a system message."""

    system: str | list[AnthropicTextBlock]
    messages: Required[list[AnthropicMessage]]


__all__ = ["AnthropicMessage", "AnthropicRequest", "AnthropicTextBlock", "OpenAIMessage", "ResponsesItem"]
