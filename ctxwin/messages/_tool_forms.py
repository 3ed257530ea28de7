"""Tool definitions and ``tool_choice`` as callers give them, read into the one form ctxwin holds (OpenAI chat function
tools, what the counters count); each request form writes them its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError


def _without_titles(schema: Any, properties: bool = False) -> Any:
    """A pydantic JSON schema without the ``title`` keys pydantic adds to every schema (a property named ``title``
    stays), as LangChain's ``convert_to_openai_tool`` sends it."""
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: _without_titles(value, properties=key == "properties" and not properties)
        for key, value in schema.items()
        if properties or not (key == "title" and isinstance(value, str))
    }


def _schema_of(tool: Any) -> dict[str, Any]:
    """A LangChain tool's argument schema as JSON schema (a pydantic model class, or a dict schema as given)."""
    schema = getattr(tool, "tool_call_schema", None) or getattr(tool, "args_schema", None)
    if schema is None:
        return {"type": "object", "properties": {}}
    if isinstance(schema, Mapping):
        return dict(schema)
    dump = getattr(schema, "model_json_schema", None)
    if not callable(dump):
        raise InvalidTypeError(f"tool {getattr(tool, 'name', tool)!r}: its schema {schema!r} is neither a dict nor a "
                               "pydantic model")
    found = _without_titles(dump())
    found.pop("description", None)  # the tool's description says it
    return found  # type: ignore[no-any-return]


def _is_langchain_tool(tool: Any) -> bool:
    return not isinstance(tool, Mapping) and isinstance(getattr(tool, "name", None), str) and (
        hasattr(tool, "tool_call_schema") or hasattr(tool, "args_schema")
    )


def openai_tool(tool: Any, index: int = 0) -> dict[str, Any]:
    """One tool definition as an OpenAI chat function tool; a tool with no function form is returned as given."""
    if _is_langchain_tool(tool):
        function = {"name": tool.name, "description": str(getattr(tool, "description", "") or ""),
                    "parameters": _schema_of(tool)}
        return {"type": "function", "function": function}
    if not isinstance(tool, Mapping):
        raise InvalidTypeError(f"tools[{index}]: expected a dict tool definition (or a LangChain tool), got "
                               f"{type(tool).__name__}")
    if "function" in tool:  # chat completions' own form
        return dict(tool)
    if "input_schema" in tool:  # Anthropic
        function = {"name": tool.get("name"), "parameters": tool["input_schema"]}
        if tool.get("description"):
            function["description"] = tool["description"]
        return {"type": "function", "function": function}
    if tool.get("type") == "function" and "name" in tool:  # Responses' flat function tool
        keys = ("name", "description", "parameters", "strict")
        function = {key: tool[key] for key in keys if tool.get(key) is not None}
        return {"type": "function", "function": function}
    return dict(tool)


def openai_tools(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """``tools`` as OpenAI chat function tools (None for none)."""
    if not tools:
        return None
    if isinstance(tools, (str, bytes, Mapping)):
        raise InvalidTypeError(f"tools must be a list of tool definitions, got {type(tools).__name__}")
    return [openai_tool(tool, i) for i, tool in enumerate(tools)]


def _function(tool: Mapping[str, Any], index: int) -> dict[str, Any] | None:
    """The function of a chat function tool, or of a bare function definition (a dict with a ``name`` and no
    ``type``, which the counters count too); None for a tool in another form (a server tool, a tool already in the
    output's form). ValueError for a function with no string name."""
    function = tool.get("function")
    if isinstance(function, dict) and tool.get("type", "function") == "function":
        found: dict[str, Any] = function
    elif "type" not in tool and "input_schema" not in tool and "name" in tool:
        found = dict(tool)
    else:
        return None
    if not isinstance(found.get("name"), str):
        raise InvalidInputError(f"tools[{index}]: a function tool needs a string 'name', got {found.get('name')!r}")
    return found


def functions_as(
    tools: Sequence[dict[str, Any]], convert: Callable[[dict[str, Any]], dict[str, Any]]
) -> list[dict[str, Any]]:
    """``tools`` with each function tool's function ``convert``-ed; the others (a provider's own tools) as given."""
    out: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        function = _function(tool, index)
        out.append(dict(tool) if function is None else convert(function))
    return out


def _chosen_name(choice: Mapping[str, Any]) -> str | None:
    """The tool a named ``tool_choice`` picks, in any of the three forms."""
    if isinstance(choice.get("function"), Mapping):
        return str(choice["function"].get("name"))
    name = choice.get("name")
    return str(name) if name is not None and choice.get("type") in ("function", "tool") else None


def _mode(choice: Any) -> str:
    """A ``tool_choice`` as one of ``auto``, ``none``, ``required``, or ``name`` (one named tool)."""
    kind = choice if isinstance(choice, str) else choice.get("type") if isinstance(choice, Mapping) else None
    mode = "name" if isinstance(choice, Mapping) and _chosen_name(choice) is not None else kind
    mode = "required" if mode == "any" else mode
    if mode not in ("auto", "none", "required", "name"):
        raise InvalidInputError(f"tool_choice must be 'auto', 'none', 'required' (Anthropic's 'any') or name one tool, "
                                f"got {choice!r}")
    return str(mode)


def check_tool_choice(choice: Any) -> None:
    """ValueError for a ``tool_choice`` no provider form reads."""
    _mode(choice)


def chosen_tool(choice: Any) -> tuple[str, str | None]:
    """A ``tool_choice`` (any of the three forms) as its mode (``auto``, ``none``, ``required`` or ``name``) and
    the tool it names (None unless the mode is ``name``); ValueError for one no provider form reads."""
    mode = _mode(choice)
    return mode, (_chosen_name(choice) if mode == "name" else None)
