"""The whole body of a provider request: what ``client.<api>.create(model=..., **body)`` takes.

``request_body`` puts together what a fitted conversation sends: its messages (or Responses ``input``), the system
prompt where the API takes it apart (Anthropic's ``system``; Responses ``instructions`` when the conversation came
with them), the tool definitions in the provider's form (``ctxwin.messages.tool_forms``), ``tool_choice`` (only with
tools: no API takes one without them) and the reply limit, named as each API names it. It is a plain function of
its parts, so other request decorations (prompt caching marks) compose with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxwin.messages.tool_forms import anthropic_tools, responses_tools, tool_choice_for

# The reply limit's name in each API (chat completions' ``max_tokens`` is deprecated for ``max_completion_tokens``).
LIMIT_KEYS = {"openai": "max_completion_tokens", "responses": "max_output_tokens", "anthropic": "max_tokens"}


def request_body(
    output: str,
    messages: list[Any],
    *,
    system: Any = None,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    max_output_tokens: int | None = None,
) -> dict[str, Any]:
    """The keyword arguments of the SDK call for ``output`` (``"openai"``, ``"responses"``, ``"anthropic"``; any
    other output is ``{"messages": messages}``). ``tools`` are OpenAI chat function tools; ``system`` is Anthropic's
    top-level system or Responses' ``instructions`` (None: none); a ``max_output_tokens`` of None or 0 is left out."""
    if output not in LIMIT_KEYS:
        return {"messages": messages}
    body: dict[str, Any] = {"input": messages} if output == "responses" else {"messages": messages}
    if system is not None:
        body["instructions" if output == "responses" else "system"] = system
    if tools:
        body["tools"] = (
            anthropic_tools(tools) if output == "anthropic"
            else responses_tools(tools) if output == "responses"
            else [dict(tool) for tool in tools]
        )
        if tool_choice is not None:
            body["tool_choice"] = tool_choice_for(tool_choice, output)
    if max_output_tokens:
        body[LIMIT_KEYS[output]] = max_output_tokens
    return body
