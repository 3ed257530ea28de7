"""OpenAI Agents SDK agents whose every model call fits the model's budget: ``ContextWindowFilter``, a
``call_model_input_filter``. docs/stacks/openai-agents.md is the guide.
This module imports the Agents SDK (the ``openai-agents`` extra); ``import ctxwin`` never does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ctxwin._install import install_hint

try:
    from agents import Agent, FunctionTool, Handoff, handoff
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - the dev environment has the SDK
    raise ImportError(
        f"ctxwin.integrations.openai_agents needs the OpenAI Agents SDK: {install_hint('openai-agents')}"
    ) from exc

from ctxwin.integrations._conversations import ConversationFitter, Fitted, read_responses, recall, require_sessions
from ctxwin.messages import BaseMessage, SystemMessage
from ctxwin.messages._request_forms.responses import convert_to_responses_items
from ctxwin.planner._config import FitConfig
from ctxwin.recall._tool import DESCRIPTION

__all__ = ["ContextWindowFilter"]


@dataclass(frozen=True)
class _Instructions:
    """The call's instructions, read as the conversation's system message."""

    text: str


class ContextWindowFilter:
    """A ``call_model_input_filter`` fitting each model call of an agent run to the model's budget.

    ``model`` and the options are ``ctxwin.FitConfig``'s (``context_window``, ``reserve_output``, ``strategies``,
    ``summarizer``, ``keep_last``, the sessions' options...), or a whole ``config``. ``conversation_id``: a function
    of the ``CallModelData`` naming the conversation (None: told apart by its first items). When the part that must
    stay (instructions, tools, the current turn) cannot fit, the filter raises ``BudgetExceeded`` (or
    ``TurnDoesNotFit``), which ends the run: the SDK has no way to skip a model call.
    """

    def __init__(
        self,
        model: str | None = "gpt-4o",
        *,
        config: FitConfig | None = None,
        conversation_id: Callable[[CallModelData[Any]], Hashable | None] | None = None,
        **options: Any,
    ) -> None:
        if model is not None:
            options.setdefault("model", model)
        self.fitter = ConversationFitter("ContextWindowFilter", FitConfig.of(config, **options))
        self.conversation_id = conversation_id

    @property
    def config(self) -> FitConfig:
        return self.fitter.config

    def recall_tool(self) -> Callable[..., str]:
        """The recall tool as a function for ``function_tool`` (``Agent(tools=[function_tool(fit.recall_tool())])``):
        it searches what this filter's requests left out of the conversation of the run it is called in, told by the
        ``ToolContext`` the SDK hands it: ``conversation_id`` of its run context when the filter has one, else the
        run's input items; it answers with an error rather than search another conversation."""
        fitter = self.fitter
        require_sessions(fitter.owner, fitter.config, "recall_tool()")
        name = self.conversation_id

        def recall_conversation(context: ToolContext[Any], query: str = "", handle: str = "") -> str:
            turn = list(context.turn_input)
            key = None
            if name is not None:
                # the function is given what the tool knows of the call: the run's input and context, its agent
                agent = cast(Agent[Any], context.agent)
                key = name(CallModelData(ModelInputData(input=turn, instructions=None), agent, context.context))
            history = [message for _, message in read_responses(turn)]
            return recall(lambda: fitter.find(key=key, history=history), query, handle,
                          "no conversation_id, and the run's input items continue no conversation fitted in this "
                          "run: give ContextWindowFilter a conversation_id")

        recall_conversation.__doc__ = DESCRIPTION
        return recall_conversation

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        instructions = data.model_data.instructions
        items: list[Any] = [_Instructions(instructions)] if instructions else []
        items.extend(data.model_data.input)
        key = self.conversation_id(data) if self.conversation_id is not None else None
        fitted = await self.fitter.afit(items, _read, key=key, tools=agent_tools(data.agent))
        return _model_input(fitted, instructions)


def agent_tools(agent: Agent[Any]) -> list[dict[str, Any]]:
    """The agent's function tools and handoffs as the Responses tool definitions the SDK sends."""
    tools: list[dict[str, Any]] = [
        {"type": "function", "name": tool.name, "description": tool.description,
         "parameters": tool.params_json_schema, "strict": tool.strict_json_schema}
        for tool in agent.tools if isinstance(tool, FunctionTool)
    ]
    for item in agent.handoffs:
        target = item if isinstance(item, Handoff) else handoff(item)
        tools.append({"type": "function", "name": target.tool_name, "description": target.tool_description,
                      "parameters": target.input_json_schema, "strict": target.strict_json_schema})
    return tools


def _read(items: Sequence[Any]) -> list[tuple[Any, BaseMessage]]:
    """The items as ctxwin messages (``read_responses``), the instructions marker first when there is one."""
    if items and isinstance(items[0], _Instructions):
        return [(items[0], SystemMessage(items[0].text)), *read_responses(items[1:])]
    return read_responses(items)


def _model_input(fitted: Fitted, instructions: str | None) -> ModelInputData:
    """The fitted items: the caller's own items for the messages kept unchanged, new Responses items for the
    rest; the instructions as they came when they were kept first."""
    out: list[Any] = []
    kept_instructions: str | None = None
    for index, message in enumerate(fitted.messages):
        origin = fitted.origin(message)
        if isinstance(origin, _Instructions) and index == 0:
            kept_instructions = origin.text
        elif isinstance(origin, tuple):
            out.extend(origin)
        else:
            out.extend(convert_to_responses_items([message]))
    return ModelInputData(input=out, instructions=kept_instructions if instructions else None)
