"""Default plugin: the built-in strategies under the names the planner accepts. Loaded by name, so this module, not the
plugins layer, depends on ``ctxwin.strategies``, and the strategies load at the first strategy lookup only.
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
