"""Microsoft Agent Framework agents whose every model call fits the model's budget: ``CtxwinCompactionStrategy``
(which marks what a plan drops as excluded) and ``CtxwinTokenizer``. docs/stacks/agent-framework.md is the guide.
This module imports the Agent Framework (the ``agent-framework`` extra); ``import ctxwin`` never does.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

from ctxwin._errors import InvalidTypeError
from ctxwin._install import install_hint

try:
    from agent_framework import (
        EXCLUDED_KEY,
        AgentSession,
        Content,
        FunctionInvocationContext,
        FunctionTool,
        InMemoryHistoryProvider,
        Message,
        tool,
    )
except ImportError as exc:  # pragma: no cover - the dev environment has the Agent Framework
    raise ImportError(
        "ctxwin.integrations.agent_framework needs the Microsoft Agent Framework: "
        f"{install_hint('agent-framework')}"
    ) from exc

from ctxwin.counters import TokenCounter, get_counter, get_model
from ctxwin.integrations._conversations import ConversationFitter, Fitted, recall, require_sessions
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner._config import FitConfig
from ctxwin.recall._tool import DESCRIPTION

__all__ = ["CtxwinCompactionStrategy", "CtxwinTokenizer", "to_messages"]

_REASON_KEY = "_exclude_reason"  # the framework's key for why a message is excluded
_REASON = "ctxwin"
_MADE = "_ctxwin_made"  # additional_properties key of the messages this strategy put in the list


class CtxwinTokenizer:
    """ctxwin's counter for ``model`` (or any counter spec) as the Agent Framework's ``TokenizerProtocol``."""

    def __init__(self, model: str = "gpt-4o") -> None:
        spec = get_model(model)
        self.counter: TokenCounter = get_counter(spec.counter if spec is not None else model)

    def count_tokens(self, text: str) -> int:
        return self.counter.count_text(text)


@dataclasses.dataclass(frozen=True)
class _Instructions:
    """The agent's instructions, read as the conversation's system message (never put in the list)."""

    text: str


class CtxwinCompactionStrategy:
    """A ``CompactionStrategy`` fitting each model call of an Agent Framework agent to the model's budget.

    ``model`` and the options are ``ctxwin.FitConfig``'s (``context_window``, ``reserve_output``, ``strategies``,
    ``summarizer``, ``keep_last``, the sessions' options...), or a whole ``config``; ``instructions`` and ``tools``
    are what the agent sends beside the messages (counted). When the part that must stay cannot fit it raises
    ``BudgetExceeded`` (or ``TurnDoesNotFit``), which ends the run.
    """

    def __init__(
        self,
        model: str | None = "gpt-4o",
        *,
        instructions: str | None = None,
        tools: Sequence[Any] = (),
        config: FitConfig | None = None,
        **options: Any,
    ) -> None:
        if model is not None:
            options.setdefault("model", model)
        if tools:
            options["tools"] = [tool_definition(tool) for tool in tools]
        self.fitter = ConversationFitter("CtxwinCompactionStrategy", FitConfig.of(config, **options))
        self.instructions = instructions
        self._recall: dict[str, Any] | None = None  # the recall tool's definition, once made

    @property
    def config(self) -> FitConfig:
        return self.fitter.config

    def recall_tool(self) -> Callable[..., str]:
        """The recall tool as a function for ``Agent(tools=...)``: it searches what this strategy's calls left out of
        the conversation of the run it is called in (the one the run's compaction fitted, checked against the stored
        messages of the session the framework hands it), and answers with an error rather than search another
        conversation. This strategy counts its definition from now on (naming it in ``tools`` too is no harm)."""
        fitter = self.fitter
        require_sessions(fitter.owner, fitter.config, "recall_tool()")

        def recall_conversation(
            query: str = "", handle: str = "", context: FunctionInvocationContext | None = None
        ) -> str:
            history = _stored(context.session) if context is not None else None
            return recall(lambda: fitter.find(history=history, current=True), query, handle,
                          "not called in a run this strategy fitted, or the session's messages are another "
                          "conversation's")

        recall_conversation.__doc__ = DESCRIPTION
        # The framework hands the run's context to the parameter annotated with the class (not a string of it).
        recall_conversation.__annotations__ = {"query": str, "handle": str,
                                               "context": FunctionInvocationContext | None, "return": str}
        self._recall = tool_definition(recall_conversation)
        return recall_conversation

    def _tools(self) -> list[dict[str, Any]] | None:
        """What each model call sends as tools: the configured ones and the recall tool once made (None: the
        configured ones alone)."""
        tools = list(self.config.tools or [])
        if self._recall is None or any(_name(t) == _name(self._recall) for t in tools):
            return None
        return [*tools, self._recall]

    async def __call__(self, messages: list[Message]) -> bool:
        before = [(id(m), bool(m.additional_properties.get(EXCLUDED_KEY))) for m in messages]
        originals = _restore(messages)
        items: list[Any] = [_Instructions(self.instructions)] if self.instructions else []
        items.extend(m for m in originals if not m.additional_properties.get(EXCLUDED_KEY))
        fitted = await self.fitter.afit(items, _read, tools=self._tools(), identity=_identity)
        messages[:] = _placed(fitted, originals)
        return [(id(m), bool(m.additional_properties.get(EXCLUDED_KEY))) for m in messages] != before


def tool_definition(given: Any) -> dict[str, Any]:
    """An agent tool as the OpenAI function tool the model is sent; a plain function as ``Agent(tools=...)`` makes
    it a ``FunctionTool`` (with ``@tool``)."""
    if isinstance(given, dict):
        return given
    if not isinstance(given, FunctionTool) and callable(given):
        given = tool(given)
    if isinstance(given, FunctionTool):
        return given.to_json_schema_spec()
    raise InvalidTypeError(f"CtxwinCompactionStrategy: tools are functions, FunctionTools (@tool) or OpenAI tool "
                           f"dicts, got "
                           f"{type(given).__name__}")


def _name(definition: dict[str, Any]) -> Any:
    return definition.get("function", definition).get("name")


def _stored(session: AgentSession | None) -> list[BaseMessage] | None:
    """The messages the session's in-memory history holds (the runs before this one), as ctxwin messages."""
    state = session.state.get(InMemoryHistoryProvider.DEFAULT_SOURCE_ID) if session is not None else None
    stored = state.get("messages") if isinstance(state, dict) else None
    messages = [m for m in stored if isinstance(m, Message)] if isinstance(stored, list) else []
    return to_messages(messages) if messages else None


def _identity(item: Any) -> Any:
    """A message's role and contents (the framework reads a session's messages again as new objects every run, and
    its messages compare by identity; their annotations change as strategies run)."""
    if isinstance(item, _Instructions):
        return item
    return item.role, item.contents


def _restore(messages: list[Message]) -> list[Message]:
    """The framework's own messages as they were before this strategy's last call: its messages taken out, its
    exclusions undone."""
    originals = [m for m in messages if not m.additional_properties.get(_MADE)]
    for message in originals:
        if message.additional_properties.get(_REASON_KEY) == _REASON:
            message.additional_properties.pop(EXCLUDED_KEY, None)
            message.additional_properties.pop(_REASON_KEY, None)
    return originals


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(c, Content) for c in value):
        return "\n".join(c.text or "" for c in value if c.type == "text")
    return json.dumps(value, default=str, ensure_ascii=False)


def _results(message: Message) -> list[Content]:
    return [c for c in message.contents if c.type == "function_result"]


def _read_message(message: Message) -> list[BaseMessage]:
    if message.role == "tool":
        return [ToolMessage(_text(c.result if c.result is not None else c.items), tool_call_id=c.call_id or "")
                for c in _results(message)]
    if message.role == "assistant":
        blocks: list[Any] = []
        calls: list[dict[str, Any]] = []
        for content in message.contents:
            if content.type == "function_call":
                arguments = content.arguments
                args = json.loads(arguments) if isinstance(arguments, str) and arguments else dict(arguments or {})
                calls.append({"name": content.name or "", "args": args, "id": content.call_id or "",
                              "type": "tool_call"})
            elif content.type == "text_reasoning":
                blocks.append({"type": "reasoning", "reasoning": content.text or ""})
            elif content.type == "text":
                blocks.append({"type": "text", "text": content.text or ""})
        return [AIMessage(blocks, tool_calls=calls)]
    text = message.text
    return [SystemMessage(text) if message.role == "system" else HumanMessage(text)]


def _read(items: Sequence[Any]) -> list[tuple[Any, BaseMessage]]:
    pairs: list[tuple[Any, BaseMessage]] = []
    for item in items:
        if isinstance(item, _Instructions):
            pairs.append((item, SystemMessage(item.text)))
        elif item.role == "tool":  # one message a result: the plan may keep some of them
            pairs.extend(((item, index), message) for index, message in enumerate(_read_message(item)))
        else:
            pairs.extend((item, message) for message in _read_message(item))
    return pairs


def _placed(fitted: Fitted, originals: list[Message]) -> list[Message]:
    """The framework's list after this call: every original message in its place, excluded unless a message the
    plan sends came from it, and the messages a step made where the plan put them."""
    kept: list[Message] = []
    results: list[int] = []  # the results kept of the tool message last in ``kept``

    def close() -> None:
        if results and len(results) != len(_results(kept[-1])):  # some results only: a message of those
            contents = _results(kept[-1])
            kept[-1] = Message(role="tool", contents=[contents[i] for i in results],
                               additional_properties={_MADE: True})
        results.clear()

    for message in fitted.messages:
        origin = fitted.origin(message)
        if isinstance(origin, tuple):
            if not kept or kept[-1] is not origin[0] or not results:
                close()
                kept.append(origin[0])
            results.append(origin[1])
            continue
        close()
        if isinstance(origin, _Instructions):
            continue
        if origin is None:
            origin = _new(message)
            fitted.remember(message, origin)
        kept.append(origin)
    close()
    sent = {id(m) for m in kept}
    out: list[Message] = []
    position = 0
    for sending in kept:
        if sending.additional_properties.get(_MADE):
            out.append(sending)
            continue
        while originals[position] is not sending:
            out.append(_excluded(originals[position]))
            position += 1
        out.append(sending)
        position += 1
    out.extend(_excluded(m) if id(m) not in sent else m for m in originals[position:])
    return out


def _excluded(message: Message) -> Message:
    if not message.additional_properties.get(EXCLUDED_KEY):
        message.additional_properties[EXCLUDED_KEY] = True
        message.additional_properties[_REASON_KEY] = _REASON
    return message


def _new(message: BaseMessage) -> Message:
    """A message a step made, as a ``Message`` marked as this strategy's."""
    made = {_MADE: True}
    if isinstance(message, ToolMessage):
        result = Content.from_function_result(call_id=message.tool_call_id, result=message.text)
        return Message(role="tool", contents=[result], additional_properties=made)
    if isinstance(message, AIMessage):
        calls = [Content.from_function_call(call_id=call["id"] or "", name=call["name"], arguments=call["args"])
                 for call in message.tool_calls]
        text = [Content.from_text(message.text)] if message.text else []
        return Message(role="assistant", contents=[*text, *calls], additional_properties=made)
    role = "system" if isinstance(message, SystemMessage) else "user"
    return Message(role=role, contents=[Content.from_text(message.text)], additional_properties=made)


def to_messages(items: Sequence[Any]) -> list[BaseMessage]:
    """Agent Framework ``Message`` list as ctxwin messages, as ctxwin counts and plans them (to count
    what a model call was sent)."""
    return [message for _, message in _read(items)]
