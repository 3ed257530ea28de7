"""Google ADK agents whose every model call fits the model's budget: ``ContextWindowCallback``, a
``before_model_callback``. docs/stacks/google-adk.md is the guide.
This module imports ADK (the ``google-adk`` extra); ``import ctxwin`` never does.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ctxwin._install import install_hint

try:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.sessions import Session
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
except ImportError as exc:  # pragma: no cover - the dev environment has ADK
    raise ImportError(f"ctxwin.integrations.google_adk needs Google ADK: {install_hint('google-adk')}") from exc

from ctxwin.counters import TokenCounter
from ctxwin.integrations._conversations import Fitted, FittersByModel, recall, require_sessions
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner._config import FitConfig
from ctxwin.recall._tool import DESCRIPTION
from ctxwin.strategies._truncate import MARKER

__all__ = ["ContextWindowCallback", "to_messages"]


@dataclasses.dataclass(frozen=True)
class _Instruction:
    """The request's system instruction: counted, given back in the request's config, not in its contents."""

    text: str


class ContextWindowCallback:
    """An ADK ``before_model_callback`` fitting each model call to the model's budget.

    ``model`` and the options are ``ctxwin.FitConfig``'s (``context_window``, ``reserve_output``, ``strategies``,
    ``summarizer``, ``keep_last``, the sessions' options...), or a whole ``config``; ``model=None`` takes each
    request's model. It returns None (the call goes on with the fitted request). When the part that must stay
    (instruction, tools, the current turn) cannot fit, it raises ``BudgetExceeded`` (or ``TurnDoesNotFit``),
    which ends the run.
    """

    def __init__(self, model: str | None = None, *, config: FitConfig | None = None, **options: Any) -> None:
        if model is not None:
            options["model"] = model
        self.config = FitConfig.of(config, **options)
        self.fitter = FittersByModel("ContextWindowCallback", self.config)
        """The fitter for requests to a model (the configured model's when one was given)."""

    def recall_tool(self) -> Callable[..., str]:
        """The recall tool as a function ADK takes as a tool (``LlmAgent(tools=[...])``): it searches what this
        callback's requests (to whichever model) left out of the ADK session it is called in, told by the
        ``tool_context`` ADK hands it."""
        require_sessions("ContextWindowCallback", self.config, "recall_tool()")
        fitters = self.fitter

        def recall_conversation(query: str = "", handle: str = "", tool_context: ToolContext | None = None) -> str:
            key = _session_key(tool_context.session) if tool_context is not None else None
            return recall(lambda: fitters.find(key=key), query, handle, "called without ADK's tool_context")

        recall_conversation.__doc__ = DESCRIPTION
        return recall_conversation

    async def __call__(self, callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        instruction = _text(llm_request.config.system_instruction) if llm_request.config else ""
        items: list[Any] = [_Instruction(instruction)] if instruction else []
        items.extend(llm_request.contents)
        fitter = self.fitter(llm_request.model)
        fitted = await fitter.afit(items, _read, key=_session_key(callback_context.session), tools=_tools(llm_request))
        llm_request.contents = _contents(fitted, fitter.planner.counter)


def _session_key(session: Session) -> tuple[str, str, str]:
    """An ADK session's identity: its id is unique within its app and user only."""
    return session.app_name, session.user_id, session.id


def _text(instruction: Any) -> str:
    """A system instruction's text (a string, a Content, a Part or a list of them)."""
    if instruction is None:
        return ""
    if isinstance(instruction, str):
        return instruction
    if isinstance(instruction, types.Part):
        return instruction.text or ""
    if isinstance(instruction, types.Content):
        return "\n".join(part.text or "" for part in instruction.parts or [])
    return "\n".join(_text(item) for item in instruction)


def _tools(request: LlmRequest) -> list[dict[str, Any]]:
    """The request's function declarations as OpenAI function tools (their JSON schema)."""
    tools: list[dict[str, Any]] = []
    for tool in (request.config.tools if request.config else None) or []:
        for declaration in getattr(tool, "function_declarations", None) or []:
            schema = declaration.parameters_json_schema
            if schema is None and declaration.parameters is not None:
                schema = declaration.parameters.model_dump(mode="json", exclude_none=True)
            tools.append({"type": "function", "function": {
                "name": declaration.name, "description": declaration.description or "",
                "parameters": schema or {"type": "object", "properties": {}},
            }})
    return tools


def _read_part(role: str | None, part: types.Part) -> BaseMessage | None:
    if part.function_response is not None:
        response = part.function_response
        return ToolMessage(json.dumps(response.response, default=str, ensure_ascii=False),
                           tool_call_id=response.id or response.name or "", name=response.name)
    text = part.text
    if text is None:
        described = part.inline_data or part.file_data or part.executable_code or part.code_execution_result
        text = described.model_dump_json(exclude_none=True) if described is not None else None
    if text is None:
        return None
    return AIMessage(text) if role == "model" else HumanMessage(text)


def _read_model(content: types.Content) -> AIMessage:
    blocks: list[Any] = []
    calls: list[dict[str, Any]] = []
    for part in content.parts or []:
        if part.function_call is not None:
            call = part.function_call
            calls.append({"name": call.name or "", "args": call.args or {}, "id": call.id or call.name or "",
                          "type": "tool_call"})
        elif part.thought and part.text is not None:
            blocks.append({"type": "reasoning", "reasoning": part.text})
        elif part.text is not None:
            blocks.append({"type": "text", "text": part.text})
    return AIMessage(blocks, tool_calls=calls)


def _read(items: Sequence[Any]) -> list[tuple[Any, BaseMessage]]:
    """The contents as ctxwin messages, each with where it came from: a model turn's ``Content`` whole, a user
    turn's ``(content, part index)``, the instruction marker."""
    pairs: list[tuple[Any, BaseMessage]] = []
    for item in items:
        if isinstance(item, _Instruction):
            pairs.append((item, SystemMessage(item.text)))
        elif item.role == "model":
            pairs.append((item, _read_model(item)))
        else:
            for index, part in enumerate(item.parts or []):
                message = _read_part(item.role, part)
                if message is not None:
                    pairs.append(((item, index), message))
    return pairs


def _contents(fitted: Fitted, counter: TokenCounter) -> list[types.Content]:
    """The fitted contents: each user turn with the parts the plan kept (ADK's object when all), each model turn as
    it was, and new contents for what a step made."""
    out: list[types.Content] = []
    content: types.Content | None = None
    parts: list[int] = []

    def close() -> None:
        if content is not None:
            every = content.parts or []
            kept = [part for i, part in enumerate(every) if i in parts or _read_part(content.role, part) is None]
            out.append(content if len(kept) == len(every) else content.model_copy(update={"parts": kept}))

    for message in fitted.messages:
        origin = fitted.origin(message)
        if isinstance(origin, tuple) and origin[0] is content:
            parts.append(origin[1])
            continue
        close()
        content, parts = None, []
        if isinstance(origin, tuple):
            content, parts = origin[0], [origin[1]]
        elif isinstance(origin, types.Content):
            out.append(origin)
        elif not isinstance(origin, _Instruction):
            made = _new(message, counter)
            fitted.remember(message, made)
            out.append(made)
    close()
    return out


def _new(message: BaseMessage, counter: TokenCounter) -> types.Content:
    """A message a step made, as a ``Content``."""
    if isinstance(message, ToolMessage):
        response = types.FunctionResponse(id=message.tool_call_id, name=message.name or "",
                                          response=_response(message.text, counter))
        return types.Content(role="user", parts=[types.Part(function_response=response)])
    if isinstance(message, AIMessage):
        calls = [types.Part(function_call=types.FunctionCall(id=call["id"], name=call["name"], args=call["args"]))
                 for call in message.tool_calls]
        text = [types.Part(text=message.text)] if message.text else []
        return types.Content(role="model", parts=[*text, *calls])
    return types.Content(role="user", parts=[types.Part(text=message.text)])


_WRAPPED = re.compile(r'\A\{"result": "(.*?)(?:"\})?\Z', re.DOTALL)
_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_NOTE = re.compile(re.escape(MARKER).replace(re.escape("{cut}"), "[0-9]+"))


def _response(text: str, counter: TokenCounter) -> dict[str, Any]:
    """The function response to send for ``text``, a tool message's text as counted: ``text`` read as JSON when it
    is a JSON object; else (a function response's JSON, shortened: head, a note, tail) the string it wraps as
    ``{"result": ...}``, escapes read once, so that the JSON sent is ``text`` again but for the note. That JSON never
    counts more than ``text``: the end of the part before the note is cut by the difference."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    wrapped = _WRAPPED.match(text)
    result = _unescape(wrapped.group(1)) if wrapped else text
    limit = counter.count_text(text)
    if _sent_tokens(result, counter) <= limit:
        return {"result": result}
    note = _NOTE.search(result)
    cut = note.start() if note else len(result)
    low, high = 0, cut  # the most characters before the note that keep the JSON within ``limit``
    while low < high:
        middle = (low + high + 1) // 2
        if _sent_tokens(result[:middle] + result[cut:], counter) <= limit:
            low = middle
        else:
            high = middle - 1
    return {"result": result[:low] + result[cut:]}


def _unescape(body: str) -> str:
    """A JSON string's body read back: its escapes decoded, any other character as it is (a shortened text keeps
    raw newlines in its note, and may end inside an escape)."""
    return _ESCAPE.sub(lambda m: json.loads(f'"{m.group(0)}"'), body)


def _sent_tokens(result: str, counter: TokenCounter) -> int:
    return counter.count_text(json.dumps({"result": result}, ensure_ascii=False))


def to_messages(items: Sequence[Any]) -> list[BaseMessage]:
    """ADK ``Content`` list as ctxwin messages, as ctxwin counts and plans them (to count
    what a model call was sent)."""
    return [message for _, message in _read(items)]
