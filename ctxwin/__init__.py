"""ctxwin: fit LLM chat prompts into a model's token budget.

The message API mirrors ``langchain_core.messages`` and ``trim_messages`` mirrors LangChain's: switching is a change
of import. Heavy tokenizer packages load only when a counter that needs them is first used.
"""

from ctxwin.batch import FitResult, fit_many
from ctxwin.counters import (
    BaseTokenCounter,
    ModelSpec,
    TokenCounter,
    TokenizerDataError,
    get_counter,
    get_model,
    list_counters,
    list_models,
)
from ctxwin.history import (
    BaseChatMessageHistory,
    FileChatMessageHistory,
    HistoryFormatError,
    InMemoryChatMessageHistory,
    SQLiteChatMessageHistory,
    TornLineWarning,
    WindowedHistory,
    add_messages,
)
from ctxwin.hookspecs import hookimpl
from ctxwin.messages import *  # noqa: F403
from ctxwin.messages import __all__ as _message_names
from ctxwin.planner import Budget, BudgetExceeded, Plan, Planner, PlanSession, StepReport, fit
from ctxwin.plugins import plugin_errors, register_plugin, unregister_plugin
from ctxwin.strategies import (
    BaseStrategy,
    FilterMessages,
    StepContext,
    StepResult,
    Strategy,
    Summarize,
    TrimToBudget,
    TruncateToolOutput,
    extractive_summarizer,
    get_strategy,
    get_strategy_factory,
    is_pinned,
    list_strategies,
    pin,
)
from ctxwin.trim import filter_messages, merge_message_runs, trim_messages

__version__ = "0.1.0"

__all__ = [
    *_message_names,
    "BaseChatMessageHistory",
    "BaseStrategy",
    "BaseTokenCounter",
    "Budget",
    "BudgetExceeded",
    "FileChatMessageHistory",
    "FilterMessages",
    "FitResult",
    "HistoryFormatError",
    "InMemoryChatMessageHistory",
    "ModelSpec",
    "Plan",
    "PlanSession",
    "Planner",
    "SQLiteChatMessageHistory",
    "StepContext",
    "StepReport",
    "StepResult",
    "Strategy",
    "Summarize",
    "TokenCounter",
    "TokenizerDataError",
    "TornLineWarning",
    "TrimToBudget",
    "TruncateToolOutput",
    "WindowedHistory",
    "__version__",
    "add_messages",
    "extractive_summarizer",
    "filter_messages",
    "fit",
    "fit_many",
    "get_counter",
    "get_model",
    "get_strategy",
    "get_strategy_factory",
    "hookimpl",
    "is_pinned",
    "list_counters",
    "list_models",
    "list_strategies",
    "merge_message_runs",
    "pin",
    "plugin_errors",
    "register_plugin",
    "trim_messages",
    "unregister_plugin",
]
