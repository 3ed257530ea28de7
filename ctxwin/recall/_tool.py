"""``RecallTool``: a search tool over what a session's requests left out, for an agent to look up what it no longer
sees (as Letta's conversation search does), in the OpenAI and Anthropic tool forms (the LangChain one is
``ctxwin.integrations.langchain.recall_tool``), with the handler that answers a call.

A call gives ``query`` (words to search for) or ``handle`` (what a masked tool output names: a tool call id, a
message id or ``#position``) and gets back the excerpts found, each headed by where it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ctxwin.messages import ToolMessage
from ctxwin.recall._store import Excerpt, format_excerpts

RECALL_TOOL_NAME = "recall_conversation"
DESCRIPTION = (
    "Search the earlier part of this conversation that is no longer shown to you (messages, tool calls and tool "
    "outputs left out to fit the context window). Give `query` (the words to look for: names, identifiers, numbers) "
    "or `handle` (the id a placeholder of a hidden tool output names) to read it whole."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to search for in what is no longer shown."},
        "handle": {"type": "string", "description": "The id a placeholder names (a tool call id or #position)."},
    },
}
# The most excerpts one answer lists.
ANSWER_EXCERPTS = 8


class RecallTool:
    """The recall tool of one source: ``openai`` and ``anthropic`` are its definitions, ``answer(call)`` the tool
    message answering a call (an OpenAI tool call, an Anthropic ``tool_use`` block or a ctxwin/LangChain
    ``ToolCall``), ``run(arguments)`` the answer's text. ``search(query)`` and ``message(handle)`` are what it asks
    (a ``PlanSession``'s ``recall`` and ``recalled_message``)."""

    name = RECALL_TOOL_NAME
    description = DESCRIPTION

    def __init__(self, search: Callable[[str], list[Excerpt]], message: Callable[[str], list[Excerpt]]) -> None:
        self._search = search
        self._message = message

    @property
    def openai(self) -> dict[str, Any]:
        """The definition for OpenAI's chat completions ``tools``."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": PARAMETERS}}

    @property
    def anthropic(self) -> dict[str, Any]:
        """The definition for Anthropic's ``tools``."""
        return {"name": self.name, "description": self.description, "input_schema": PARAMETERS}

    def run(self, arguments: Mapping[str, Any] | str | None = None, /, **kwargs: Any) -> str:
        """The answer to a call with ``arguments`` (a mapping, its JSON, or keywords): the excerpts found, or a
        sentence saying none were. ValueError naming what is wrong with the arguments."""
        given: Any = arguments
        if isinstance(given, str):
            try:
                given = json.loads(given or "{}")
            except ValueError:
                raise ValueError(f"{self.name}: arguments must be JSON, got {arguments!r}") from None
        if not isinstance(given, Mapping | None):
            raise ValueError(f"{self.name}: arguments must be an object with query or handle, got {arguments!r}")
        values = {**(given or {}), **kwargs}
        handle, query = values.get("handle"), values.get("query")
        if handle:
            found = self._message(str(handle))
            return format_excerpts(found) if found else f"No message {handle!r} in this conversation's history."
        if not query:
            raise ValueError(f"{self.name}: give query (words to search for) or handle, got {dict(values)!r}")
        found = self._search(str(query))[:ANSWER_EXCERPTS]
        return format_excerpts(found) if found else f"Nothing left out of this conversation matches {query!r}."

    def answer(self, call: Mapping[str, Any]) -> ToolMessage:
        """The ``ToolMessage`` answering ``call``: a ctxwin/LangChain ``ToolCall`` (``name``, ``args``, ``id``), an
        OpenAI tool call (``function.arguments``) or an Anthropic ``tool_use`` block (``input``)."""
        if "function" in call:
            arguments, call_id = call["function"].get("arguments"), call.get("id")
        elif call.get("type") == "tool_use":
            arguments, call_id = call.get("input"), call.get("id")
        else:
            arguments, call_id = call.get("args"), call.get("id")
        try:
            text = self.run(arguments)
            status = "success"
        except ValueError as error:
            text, status = str(error), "error"
        return ToolMessage(text, tool_call_id=str(call_id or ""), name=self.name, status=status)
