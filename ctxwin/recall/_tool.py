"""``RecallTool``: a search tool over what a session's requests left out, in the OpenAI and Anthropic tool forms, with
the handler that answers a call by ``query`` or by ``handle`` (what a masked output names).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.messages import ToolMessage
from ctxwin.recall._inject import quoted
from ctxwin.recall._store import Excerpt, format_excerpts

RECALL_TOOL_NAME = "recall_conversation"
DESCRIPTION = (
    "Search the earlier part of this conversation that is no longer shown to you (messages, tool calls and tool "
    "outputs left out to fit the context window). Give `query` (the words to look for: names, identifiers, numbers) "
    "or `handle` (the id a placeholder of a hidden tool output names) to read it whole."
)
# The most excerpts one answer lists (``limit`` asks for fewer).
ANSWER_EXCERPTS = 8
# The longest answer, in characters: a search's excerpts (about 300 characters each, with their headings) fit well
# within it; a message read by its handle is cut there, the answer saying the ``offset`` that reads on.
ANSWER_CHARS = 12_000
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to search for in what is no longer shown."},
        "handle": {"type": "string", "description": "The id a placeholder names (a tool call id or #position)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": ANSWER_EXCERPTS,
                  "description": f"The most excerpts to list (default and at most {ANSWER_EXCERPTS})."},
        "offset": {"type": "integer", "minimum": 0,
                   "description": f"Where to read on in an answer longer than {ANSWER_CHARS:,} characters."},
    },
}
_ARGUMENTS = tuple(PARAMETERS["properties"])


class RecallTool:
    """The recall tool of one source: ``openai`` and ``anthropic`` are its definitions, ``answer(call)`` the tool
    message answering a call (an OpenAI tool call, an Anthropic ``tool_use`` block or a ctxwin/LangChain
    ``ToolCall``), ``run(arguments)`` the answer's text. ``search(query)`` and ``message(handle)`` are what it asks
    (a session's: ``SessionRecall.recall`` and ``recalled_message``); ``held(query)``, where the request the model sees
    already holds what ``query`` finds (``SessionRecall.held``), names and quotes it when nothing left out matches."""

    name = RECALL_TOOL_NAME
    description = DESCRIPTION

    def __init__(
        self, search: Callable[[str], list[Excerpt]], message: Callable[[str], list[Excerpt]],
        held: Callable[[str], list[str]] | None = None,
    ) -> None:
        self._search = search
        self._message = message
        self._held = held

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
        sentence saying none were (or where the request already holds them), at most ``ANSWER_CHARS`` characters.
        ValueError, a short one naming the argument, for anything else."""
        values = self._arguments(arguments, kwargs)
        handle, query = _text(values, "handle"), _text(values, "query")
        limit = _whole(values, "limit", 1, ANSWER_EXCERPTS) or ANSWER_EXCERPTS
        offset = _whole(values, "offset", 0, None) or 0
        if handle:
            found = self._message(handle)
            text = format_excerpts(found) if found else f"No message {quoted(handle)} in this conversation's history."
        elif query:
            found = self._search(query)[:limit]
            text = format_excerpts(found) if found else self._nothing_found(query)
        else:
            raise InvalidInputError(f"{self.name}: give query (words to search for) or handle")
        return _from(text, offset)

    def _arguments(self, arguments: object, kwargs: Mapping[str, Any]) -> Mapping[Any, Any]:
        given = arguments
        if isinstance(given, str):
            try:
                given = json.loads(given or "{}")
            except (ValueError, RecursionError):  # bad JSON, a number too long to read, nesting too deep
                raise InvalidInputError(f"{self.name}: arguments must be a JSON object, got {quoted(given)}") from None
        if not isinstance(given, Mapping | None):
            raise InvalidInputError(f"{self.name}: arguments must be an object with query or handle, got "
                                    f"{type(given).__name__}")
        values = {**(given or {}), **kwargs}
        unknown = [key for key in values if key not in _ARGUMENTS]
        if unknown:
            raise InvalidInputError(f"{self.name}: unknown argument {_described(unknown[0])} (it takes "
                                    f"{', '.join(_ARGUMENTS)})")
        return values

    def _nothing_found(self, query: str) -> str:
        places = self._held(query) if self._held is not None else []
        if places:
            # quoted, not only placed: a model that asks has missed it where it is
            return (f"What matches {quoted(query)} is already in the conversation you see (nothing more left out of "
                    "it matches), in " + "\nand in ".join(places))
        return f"Nothing left out of this conversation matches {quoted(query)}."

    def answer(self, call: Mapping[str, Any]) -> ToolMessage:
        """The ``ToolMessage`` answering ``call``: a ctxwin/LangChain ``ToolCall`` (``name``, ``args``, ``id``), an
        OpenAI tool call (``function.arguments``) or an Anthropic ``tool_use`` block (``input``). Never raises: a
        call it cannot answer gets an error message (``status="error"``)."""
        if not isinstance(call, Mapping):
            return ToolMessage(f"{self.name}: a tool call is an object, got {type(call).__name__}", tool_call_id="",
                               name=self.name, status="error")
        function = call.get("function")
        if "function" in call:
            arguments = function.get("arguments") if isinstance(function, Mapping) else None
        elif call.get("type") == "tool_use":
            arguments = call.get("input")
        else:
            arguments = call.get("args")
        call_id = call.get("id")
        try:
            text = self.run(arguments)
            status = "success"
        except ValueError as error:
            text, status = str(error), "error"
        return ToolMessage(text, tool_call_id=call_id if isinstance(call_id, str) else "", name=self.name,
                           status=status)


def _text(values: Mapping[Any, Any], name: str) -> str:
    """Argument ``name``, a string ("" when absent or null)."""
    value = values.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInputError(f"{RECALL_TOOL_NAME}: {name} must be a string, got {_described(value)}")
    return value


def _whole(values: Mapping[Any, Any], name: str, low: int, high: int | None) -> int | None:
    """Argument ``name``, a whole number of at least ``low`` (above ``high``: ``high``); None when absent or null."""
    value = values.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidInputError(f"{RECALL_TOOL_NAME}: {name} must be a whole number of at least {low}, got "
                                f"{_described(value)}")
    return value if high is None else min(value, high)


def _described(value: object) -> str:
    """``value`` as an error names it, short whatever it is: a string quoted (shortened), a number as written
    unless it is long, anything else by its type."""
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, float) or (isinstance(value, int) and abs(value).bit_length() <= 64):
        return repr(value)
    return type(value).__name__


# The most a cut answer's note takes.
_NOTE_CHARS = 120


def _from(text: str, offset: int) -> str:
    """``text`` from ``offset`` on, at most ``ANSWER_CHARS`` characters, a cut saying where to read on."""
    if offset and offset >= len(text):
        return f"The answer has {len(text):,} characters: nothing from that offset on."
    if len(text) - offset <= ANSWER_CHARS:
        return text[offset:]
    end = offset + ANSWER_CHARS - _NOTE_CHARS
    return (f"{text[offset:end]}\n[cut: {len(text) - end:,} more characters; call again with offset {end} to read on, "
            "or search them with query]")
