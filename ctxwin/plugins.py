"""ctxwin's plugin API in one place, modelled on simonw/llm's ``plugins`` module.

- ``hookimpl``: the marker plugin authors put on ``register_counters`` / ``register_models`` /
  ``register_strategies`` (specified in ``ctxwin.hookspecs``).
- Lookups (``ctxwin.registry``): ``get_counter``, ``list_counters``, ``get_model``, ``list_models``,
  ``get_strategy_factory``, ``list_strategies``.
- Management (``ctxwin.plugin_manager``): ``pm``, ``load_plugins``, ``register_plugin`` / ``unregister_plugin``
  for explicit registration (tests, applications), ``plugin_errors`` for failures reported by plugin name.
"""

from __future__ import annotations

from ctxwin.hookspecs import hookimpl
from ctxwin.plugin_manager import (
    DEFAULT_PLUGINS,
    ENTRY_POINT_GROUP,
    LOAD_PLUGINS_ENV,
    CounterInfo,
    PluginError,
    StrategyInfo,
    load_plugins,
    plugin_errors,
    plugin_names,
    plugin_source,
    pm,
    register_plugin,
    unregister_plugin,
)
from ctxwin.registry import (
    get_counter,
    get_model,
    get_strategy_factory,
    list_counters,
    list_models,
    list_strategies,
    model_plugin,
)

__all__ = [
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "LOAD_PLUGINS_ENV",
    "CounterInfo",
    "PluginError",
    "StrategyInfo",
    "get_counter",
    "get_model",
    "get_strategy_factory",
    "hookimpl",
    "list_counters",
    "list_models",
    "list_strategies",
    "load_plugins",
    "model_plugin",
    "plugin_errors",
    "plugin_names",
    "plugin_source",
    "pm",
    "register_plugin",
    "unregister_plugin",
]
