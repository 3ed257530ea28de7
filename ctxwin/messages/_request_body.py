"""The whole body of a provider request: what ``client.<api>.create(model=..., **body)`` takes.

``request_body`` puts together what a fitted conversation sends: its messages (or Responses ``input``), the system
prompt where the API takes it apart (Anthropic's ``system``; Responses ``instructions`` when the conversation came
with them), the tool definitions in the provider's form (``ctxwin.messages._tool_forms``), ``tool_choice`` (only with
tools: no API takes one without them) and the reply limit, named as each API names it. It is a plain function of
its parts, so other request decorations (prompt caching marks) compose with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ctxwin.messages._tool_forms import anthropic_tools, openai_tools, responses_tools, tool_choice_for

# The reply limit's name in each API (chat completions' ``max_tokens`` is deprecated for ``max_completion_tokens``).
LIMIT_KEYS = {"openai": "max_completion_tokens", "responses": "max_output_tokens", "anthropic": "max_tokens"}
# Anthropic's Python SDK refuses a non-streaming ``messages.create`` whose ``max_tokens`` could take over ten minutes
# to generate ("Streaming is required ..."): at the 128,000 tokens an hour it assumes, above 21,333
# (``Anthropic._calculate_nonstreaming_timeout``), and above the lower limit ``anthropic._constants
# .MODEL_NONSTREAMING_TOKENS`` sets for Claude Opus 4 and 4.1 (by its model ids; here by ctxwin's model names).
ANTHROPIC_NONSTREAMING_MAX_TOKENS = 128_000 * 10 // 60
_ANTHROPIC_NONSTREAMING_BY_MODEL = {"claude-opus-4": 8_192, "claude-opus-4-1": 8_192}


def nonstreaming_limit(output: str, model: str | None) -> int | None:
    """The largest reply limit the ``output`` API's SDK sends without streaming for ``model`` (None: no limit)."""
    if output != "anthropic":
        return None
    return _ANTHROPIC_NONSTREAMING_BY_MODEL.get(model or "", ANTHROPIC_NONSTREAMING_MAX_TOKENS)


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


def tools_as_sent(output: str, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """OpenAI chat function ``tools`` as the ``output`` request sends them, read back as the OpenAI functions a
    counter counts (Responses adds ``strict``; Anthropic's form holds a name, description and schema only), so a
    plan counts the definitions a recount of its request counts."""
    if not tools or output not in ("responses", "anthropic"):
        return tools
    return openai_tools(anthropic_tools(tools) if output == "anthropic" else responses_tools(tools))


def request_limit(request: Mapping[str, Any]) -> int | None:
    """The reply limit a request sets (``max_tokens``, ``max_completion_tokens`` or ``max_output_tokens``), or None;
    ValueError for one that is not a positive int."""
    for key in ("max_completion_tokens", "max_output_tokens", "max_tokens"):
        value = request.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"the request's {key!r} must be a positive int, got {value!r}")
        return value
    return None


_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "document"})
_RESPONSES_ITEMS = frozenset({"message", "function_call", "function_call_output", "reasoning"})


def _anthropic_block(block: Any) -> bool:
    return isinstance(block, Mapping) and (
        block.get("type") in _ANTHROPIC_BLOCKS or (block.get("type") == "image" and "source" in block)
    )


def request_form(request: Any) -> Literal["openai", "responses", "anthropic"]:
    """The provider form ``request`` is in: ``"responses"`` (a request with ``input``, or a list of Responses
    items), ``"anthropic"`` (a request with a top-level ``system`` or ``input_schema`` tools, or messages holding
    Anthropic blocks), else ``"openai"`` (chat completions, and anything else: message objects, tuples).

    A request with ``messages`` is a chat completions or an Anthropic request whatever its items are: a Responses
    item among them is read as the message it holds and written back in the request's form, under ``messages``
    (a Responses ``input`` beside them would leave the messages sent unfitted)."""
    if isinstance(request, Mapping) and "input" in request and "messages" not in request:
        return "responses"
    has_messages = isinstance(request, Mapping)
    if isinstance(request, Mapping):
        tools = request.get("tools") or []
        if "system" in request or any(isinstance(t, Mapping) and "input_schema" in t for t in tools):
            return "anthropic"
        request = request.get("messages")
    items = request if isinstance(request, (list, tuple)) else []
    if not has_messages and any(isinstance(item, Mapping) and item.get("type") in _RESPONSES_ITEMS for item in items):
        return "responses"
    if any(isinstance(item, Mapping) and isinstance(item.get("content"), list)
           and any(map(_anthropic_block, item["content"])) for item in items):
        return "anthropic"
    return "openai"
