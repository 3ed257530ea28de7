"""The types ``fit``/``Planner`` return for ``output="openai" | "responses" | "anthropic"``: the SDKs' own request param
types, for type checkers only, so ``plan.messages`` goes to the SDK with no ``cast`` and cannot drift from its types.
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
