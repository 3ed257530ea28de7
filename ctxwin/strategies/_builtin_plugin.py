"""Default plugin: the built-in strategies under the names the planner accepts.

Loaded by name from the plugin manager, so this module (not the plugins layer) is what depends on
``ctxwin.strategies``; the strategies are imported when the hook runs (the first strategy lookup), not when the plugins
load for a counter lookup. Each factory is the strategy class: ``factory(**options)`` passes options to its fields.
"""

from __future__ import annotations

from collections.abc import Callable

from ctxwin.hookspecs import hookimpl


@hookimpl
def register_strategies(register: Callable[..., None]) -> None:
    from ctxwin.strategies._compacted import DropCompacted
    from ctxwin.strategies._filter import FilterMessages
    from ctxwin.strategies._mask import MaskToolOutputs
    from ctxwin.strategies._reasoning import ClearReasoning
    from ctxwin.strategies._summarize import Summarize
    from ctxwin.strategies._trim import TrimToBudget
    from ctxwin.strategies._truncate import TruncateToolOutput

    register("clear_reasoning", ClearReasoning)
    register("drop_compacted", DropCompacted)
    register("filter", FilterMessages)
    register("truncate_tool_output", TruncateToolOutput)
    register("mask_tool_outputs", MaskToolOutputs)
    register("summarize", Summarize)
    register("trim", TrimToBudget)
