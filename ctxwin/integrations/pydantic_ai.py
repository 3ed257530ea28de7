"""Pydantic AI agents whose every model request fits the model's budget: ``ContextWindowProcessor``, a history
processor. docs/stacks/pydantic-ai.md is the guide.
This module imports Pydantic AI (the ``pydantic-ai`` extra); ``import ctxwin`` never does.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ctxwin._install import install_hint

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
        repair_messages,
    )
    from pydantic_ai.models import ModelRequestContext
except ImportError as exc:  # pragma: no cover - the dev environment has Pydantic AI
    raise ImportError(
        f"ctxwin.integrations.pydantic_ai needs Pydantic AI: {install_hint('pydantic-ai')}"
    ) from exc

from ctxwin.integrations._conversations import ConversationFitter, Fitted, recall, require_sessions
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner._config import FitConfig
from ctxwin.recall._tool import DESCRIPTION

__all__ = ["ContextWindow", "ContextWindowProcessor", "to_messages"]


@dataclasses.dataclass(frozen=True)
class _Instructions:
    """The run's instructions (sent as the system prompt, not part of the history): counted, never given back."""

    text: str


class _Fitting:
    """What the capability and the processor share: the fitter, and one history fitted in Pydantic AI's types."""

    def __init__(self, owner: str, model: str | None, config: FitConfig | None, options: dict[str, Any]) -> None:
        if model is not None:
            options.setdefault("model", model)
        self.fitter = ConversationFitter(owner, FitConfig.of(config, **options))

    @property
    def config(self) -> FitConfig:
        return self.fitter.config

    def recall_tool(self) -> Callable[..., str]:
        """The recall tool as a function taking Pydantic AI's ``RunContext`` (``Agent(tools=[...])`` or
        ``agent.tool``): it searches what this integration's requests left out of the conversation of the run it is
        called in (its ``conversation_id``, else its messages), and answers with an error rather than search
        another conversation."""
        fitter = self.fitter
        require_sessions(fitter.owner, fitter.config, "recall_tool()")

        def recall_conversation(ctx: RunContext[Any], query: str = "", handle: str = "") -> str:
            key = getattr(ctx, "conversation_id", None) or _conversation(ctx.messages)
            return recall(lambda: fitter.find(key=key, history=to_messages(ctx.messages)), query, handle,
                          "the run has no conversation_id, and its messages continue no conversation fitted here")

        recall_conversation.__doc__ = DESCRIPTION
        return recall_conversation

    async def _fit(
        self, messages: list[ModelMessage], instructions: str | None, tools: Sequence[Any] | None,
        key: Hashable | None,
    ) -> tuple[Fitted, list[Any], list[ModelMessage]]:
        items: list[Any] = [_Instructions(instructions)] if instructions else []
        items.extend(messages)
        sent = None if tools is None else [_tool(t) for t in tools]
        fitted = await self.fitter.afit(items, _read, key=key or _conversation(messages), tools=sent)
        return fitted, items[: len(items) - len(messages)], _history(fitted)


class ContextWindow(AbstractCapability[Any], _Fitting):
    """A Pydantic AI capability fitting each model request to the model's budget: ``Agent(...,
    capabilities=[ContextWindow("gpt-4o", ...)])``.

    Before each request (``before_model_request``) it plans the request's messages with its instructions, function
    tools and output tools counted against the budget, and sends the fitted messages; the run's stored history is
    left whole (the next request starts again from all of it), so nothing is lost for good. ``model`` and the
    options are ``ctxwin.FitConfig``'s, or a whole ``config``. When the part that must stay (instructions, tools,
    the current turn) cannot fit, it raises ``BudgetExceeded`` (or ``TurnDoesNotFit``), which ends the run.
    """

    def __init__(self, model: str | None = "gpt-4o", *, config: FitConfig | None = None, **options: Any) -> None:
        _Fitting.__init__(self, "ContextWindow", model, config, options)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        parameters = request_context.model_request_parameters
        parts = parameters.instruction_parts or []
        instructions = "\n\n".join(part.content for part in parts) or _instructions(request_context.messages)
        _, _, history = await self._fit(
            list(request_context.messages), instructions, [*parameters.function_tools, *parameters.output_tools],
            getattr(ctx, "conversation_id", None),
        )
        request_context.messages = history
        return request_context

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built in code: it holds a configuration, not a spec


class ContextWindowProcessor(_Fitting):
    """A Pydantic AI history processor fitting each model request to the model's budget: ``Agent(...,
    capabilities=[ProcessHistory(ContextWindowProcessor("gpt-4o", tools=...))])`` (or
    ``history_processors=[...]`` where the Pydantic AI version has it).

    Pydantic AI keeps what a history processor returns as the run's history (``result.all_messages()``), so what
    a plan drops is dropped for good; the ``ContextWindow`` capability fits what is sent and keeps the history
    whole. A history processor is not shown the tool definitions: pass them as ``tools`` (OpenAI function tool
    dicts, e.g. from ``agent`` tools' JSON schemas) for them to be counted. ``model`` and the options are
    ``ctxwin.FitConfig``'s, or a whole ``config``.
    """

    def __init__(self, model: str | None = "gpt-4o", *, config: FitConfig | None = None, **options: Any) -> None:
        _Fitting.__init__(self, "ContextWindowProcessor", model, config, options)

    async def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        fitted, head, history = await self._fit(messages, _instructions(messages), None, None)
        kept = _as_kept(fitted, history)
        fitted.persisted([*head, *kept])
        return kept


def _instructions(messages: Sequence[ModelMessage]) -> str | None:
    """The instructions the request will carry: the newest request's."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            return message.instructions
    return None


def _conversation(messages: Sequence[ModelMessage]) -> Hashable | None:
    """The conversation id of the newest message stamped with one (the one Pydantic AI gives the run)."""
    return next((m.conversation_id for m in reversed(messages) if getattr(m, "conversation_id", None)), None)


def _tool(definition: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": definition.name, "description": definition.description or "",
                                             "parameters": definition.parameters_json_schema}}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, default=str, ensure_ascii=False)


def _read_part(part: Any) -> BaseMessage | None:
    if isinstance(part, SystemPromptPart):
        return SystemMessage(part.content)
    if isinstance(part, UserPromptPart):
        content = part.content
        return HumanMessage(content if isinstance(content, str) else
                            " ".join(c if isinstance(c, str) else f"[{type(c).__name__}]" for c in content))
    if isinstance(part, ToolReturnPart):
        return ToolMessage(part.model_response_str(), tool_call_id=part.tool_call_id, name=part.tool_name)
    if isinstance(part, RetryPromptPart):
        if part.tool_name is not None:
            return ToolMessage(part.model_response(), tool_call_id=part.tool_call_id, name=part.tool_name,
                               status="error")
        return HumanMessage(part.model_response())
    other = getattr(part, "content", None)
    return HumanMessage(_text(other)) if other is not None else None


def _read_response(response: ModelResponse) -> AIMessage:
    content: list[Any] = []
    calls: list[dict[str, Any]] = []
    for part in response.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.content})
        elif isinstance(part, ThinkingPart):
            content.append({"type": "reasoning", "reasoning": part.content})
        elif isinstance(part, ToolCallPart):
            calls.append({"name": part.tool_name, "args": part.args_as_dict(), "id": part.tool_call_id,
                          "type": "tool_call"})
        elif (other := getattr(part, "content", None)) is not None:
            content.append({"type": "text", "text": _text(other)})
    return AIMessage(content, tool_calls=calls)


def _read(items: Sequence[Any]) -> list[tuple[Any, BaseMessage]]:
    """The history as ctxwin messages, each with where it came from: ``(request, part index)`` for a request's
    part, the response for a response, the instructions marker."""
    pairs: list[tuple[Any, BaseMessage]] = []
    for item in items:
        if isinstance(item, _Instructions):
            pairs.append((item, SystemMessage(item.text)))
        elif isinstance(item, ModelResponse):
            pairs.append((item, _read_response(item)))
        else:
            for index, part in enumerate(item.parts):
                message = _read_part(part)
                if message is not None:
                    pairs.append(((item, index), message))
    return pairs


def _history(fitted: Fitted) -> list[ModelMessage]:
    """The fitted history in Pydantic AI's types: each request with the parts the plan kept (the caller's object
    when all), each response kept as it was, and new requests or responses for what a step made."""
    out: list[ModelMessage] = []
    request: ModelRequest | None = None
    parts: list[int] = []

    def close() -> None:
        if request is not None:  # parts that read as no message (nothing to count) stay with their request
            kept = [part for i, part in enumerate(request.parts) if i in parts or _read_part(part) is None]
            out.append(request if len(kept) == len(request.parts) else dataclasses.replace(request, parts=kept))

    for message in fitted.messages:
        origin = fitted.origin(message)
        if isinstance(origin, tuple) and origin[0] is request:
            parts.append(origin[1])
            continue
        close()
        request, parts = None, []
        if isinstance(origin, tuple):
            request, parts = origin[0], [origin[1]]
        elif isinstance(origin, (ModelRequest, ModelResponse)):
            out.append(origin)
        elif not isinstance(origin, _Instructions):
            made = _new(message)
            fitted.remember(message, made)
            out.append(made)
    close()
    return out


def _as_kept(fitted: Fitted, history: list[ModelMessage]) -> list[ModelMessage]:
    """``history`` as Pydantic AI keeps it (``repair_messages``: adjacent requests merged, tool returns first), with
    the origin of each message moved to the request its part is in there: the next run, handed that history,
    continues this conversation's session (so its recall tool still finds what earlier runs left out)."""
    kept = repair_messages(history, repair_last_response=False)
    if kept == history:
        return history
    placed = {id(part): (request, index) for request in kept if isinstance(request, ModelRequest)
              for index, part in enumerate(request.parts)}
    for message in fitted.messages:
        origin = fitted.origin(message)
        part = (origin[0].parts[origin[1]] if isinstance(origin, tuple)
                else origin.parts[0] if isinstance(origin, ModelRequest) and len(origin.parts) == 1 else None)
        if part is not None and id(part) in placed:
            fitted.origins[id(message)] = placed[id(part)]
    return kept


def _new(message: BaseMessage) -> ModelMessage:
    """A message a step made, in Pydantic AI's types."""
    if isinstance(message, ToolMessage):
        return ModelRequest(parts=[ToolReturnPart(tool_name=message.name or "", content=message.text,
                                                  tool_call_id=message.tool_call_id)])
    if isinstance(message, AIMessage):
        calls = [ToolCallPart(call["name"], call["args"], tool_call_id=call["id"] or "") for call in message.tool_calls]
        return ModelResponse(parts=[*([TextPart(message.text)] if message.text else []), *calls])
    if isinstance(message, SystemMessage):
        return ModelRequest(parts=[SystemPromptPart(message.text)])
    return ModelRequest(parts=[UserPromptPart(message.text)])


def to_messages(items: Sequence[Any]) -> list[BaseMessage]:
    """Pydantic AI's ``ModelMessage`` history as ctxwin messages, as ctxwin counts and plans them (to count
    what a model call was sent)."""
    return [message for _, message in _read(items)]
