"""Hook specifications for ctxwin plugins (pluggy project and entry-point group ``ctxwin``). A plugin marks functions
named like these hooks with ``@ctxwin.hookimpl``; each receives a ``register`` callback (docs/counters.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pluggy import HookimplMarker, HookspecMarker

__all__ = ["hookimpl", "hookspec", "register_counters", "register_models", "register_strategies"]

hookspec = HookspecMarker("ctxwin")
hookimpl = HookimplMarker("ctxwin")


@hookspec
def register_counters(register: Callable[..., None]) -> None:
    """Register token counters: ``register(name, factory, origin=None)``.

    ``factory(arg)`` returns a TokenCounter; ``arg`` is the text after ``name:`` in a spec (``"tiktoken:o200k_base"``
    passes ``"o200k_base"``), or None. ``origin`` is a short note on where the counter's data comes from, shown by
    ``ctxwin counters``, or a function returning it (called only then). Keep the hook cheap: import a tokenizer
    package inside the factory, not at the plugin module's top, so looking up another counter does not load it.
    """


@hookspec
def register_models(register: Callable[[Any], None]) -> None:
    """Register models: ``register(ModelSpec(name, context_window, max_output_tokens, counter, aliases=...))``."""


@hookspec
def register_strategies(register: Callable[..., None]) -> None:
    """Register trimming strategies: ``register(name, factory)``; ``factory(**options)`` returns a Strategy."""
