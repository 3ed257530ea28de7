"""ctxwin: fit LLM chat prompts into a model's token budget. The message API and ``trim_messages`` mirror LangChain's.
Each public name is imported from its home module when first read (PEP 562), so a program pays only for what it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors read (``X as X``: re-exported); at run time, _HOMES below
    from ctxwin._errors import CtxwinError as CtxwinError
    from ctxwin._errors import InvalidInputError as InvalidInputError
    from ctxwin._errors import InvalidTypeError as InvalidTypeError
    from ctxwin._plugins import plugin_errors as plugin_errors
    from ctxwin._plugins import register_plugin as register_plugin
    from ctxwin._plugins import unregister_plugin as unregister_plugin
    from ctxwin.batch import FitResult as FitResult
    from ctxwin.batch import fit_many as fit_many
    from ctxwin.counters import BaseTokenCounter as BaseTokenCounter
    from ctxwin.counters import ModelSpec as ModelSpec
    from ctxwin.counters import TokenCounter as TokenCounter
    from ctxwin.counters import TokenizerDataError as TokenizerDataError
    from ctxwin.counters import get_counter as get_counter
    from ctxwin.counters import get_model as get_model
    from ctxwin.counters import list_counters as list_counters
    from ctxwin.counters import list_models as list_models
    from ctxwin.history import BaseChatMessageHistory as BaseChatMessageHistory
    from ctxwin.history import FileChatMessageHistory as FileChatMessageHistory
    from ctxwin.history import HistoryFormatError as HistoryFormatError
    from ctxwin.history import InMemoryChatMessageHistory as InMemoryChatMessageHistory
    from ctxwin.history import SQLiteChatMessageHistory as SQLiteChatMessageHistory
    from ctxwin.history import WindowedHistory as WindowedHistory
    from ctxwin.history import add_messages as add_messages
    from ctxwin.hookspecs import hookimpl as hookimpl
    from ctxwin.integrations import TurnDoesNotFit as TurnDoesNotFit
    from ctxwin.messages import AIMessage as AIMessage
    from ctxwin.messages import AnyMessage as AnyMessage
    from ctxwin.messages import BaseMessage as BaseMessage
    from ctxwin.messages import ChatMessage as ChatMessage
    from ctxwin.messages import HumanMessage as HumanMessage
    from ctxwin.messages import MessageLike as MessageLike
    from ctxwin.messages import RemoveMessage as RemoveMessage
    from ctxwin.messages import SystemMessage as SystemMessage
    from ctxwin.messages import ToolCall as ToolCall
    from ctxwin.messages import ToolMessage as ToolMessage
    from ctxwin.messages import convert_to_messages as convert_to_messages
    from ctxwin.messages import convert_to_openai_messages as convert_to_openai_messages
    from ctxwin.messages import messages_from_dict as messages_from_dict
    from ctxwin.messages import messages_to_dict as messages_to_dict
    from ctxwin.planner import Budget as Budget
    from ctxwin.planner import BudgetExceeded as BudgetExceeded
    from ctxwin.planner import FitConfig as FitConfig
    from ctxwin.planner import Plan as Plan
    from ctxwin.planner import Planner as Planner
    from ctxwin.planner import PlanSession as PlanSession
    from ctxwin.planner import StepReport as StepReport
    from ctxwin.planner import fit as fit
    from ctxwin.strategies import FilterMessages as FilterMessages
    from ctxwin.strategies import Ledger as Ledger
    from ctxwin.strategies import Summarize as Summarize
    from ctxwin.strategies import TrimToBudget as TrimToBudget
    from ctxwin.strategies import TruncateToolOutput as TruncateToolOutput
    from ctxwin.strategies import extractive_summarizer as extractive_summarizer
    from ctxwin.strategies import get_strategy as get_strategy
    from ctxwin.strategies import is_pinned as is_pinned
    from ctxwin.strategies import list_strategies as list_strategies
    from ctxwin.strategies import pin as pin
    from ctxwin.trim import filter_messages as filter_messages
    from ctxwin.trim import merge_message_runs as merge_message_runs
    from ctxwin.trim import trim_messages as trim_messages

__version__ = "0.1.0"

# The front door: what a program that fits prompts needs, by what it is for, each from its home module (where
# ``__getattr__`` imports it from). The rest of each package's API is in the package: ``ctxwin.messages`` (the full
# LangChain-compatible message API: chunks, content blocks, merging), ``ctxwin.strategies`` (writing a strategy),
# ``ctxwin.counters`` (writing a counter), ``ctxwin.recall``, ``ctxwin.integrations.<framework>``; docs/api.md has
# them all.
_HOMES: dict[str, tuple[str, ...]] = {
    # Messages: the classes a conversation is made of, and the conversions to and from plain data.
    "ctxwin.messages": (
        "AIMessage", "AnyMessage", "BaseMessage", "ChatMessage", "HumanMessage", "MessageLike", "RemoveMessage",
        "SystemMessage", "ToolCall", "ToolMessage", "convert_to_messages", "convert_to_openai_messages",
        "messages_from_dict", "messages_to_dict",
    ),
    # Trimming as LangChain does, by the same names and arguments.
    "ctxwin.trim": ("filter_messages", "merge_message_runs", "trim_messages"),
    # Fitting: plan a conversation into a model's budget (once, or turn after turn in a cache-stable session).
    "ctxwin.planner": ("Budget", "BudgetExceeded", "FitConfig", "Plan", "Planner", "PlanSession", "StepReport", "fit"),
    # Fitting a dataset on every core.
    "ctxwin.batch": ("FitResult", "fit_many"),
    # The strategies a plan composes, pinning the messages no strategy may drop, and the ledger of what was told.
    "ctxwin.strategies": (
        "FilterMessages", "Ledger", "Summarize", "TrimToBudget", "TruncateToolOutput", "extractive_summarizer",
        "get_strategy", "is_pinned", "list_strategies", "pin",
    ),
    # Counting tokens: the counters and the models they count for.
    "ctxwin.counters": (
        "BaseTokenCounter", "ModelSpec", "TokenCounter", "TokenizerDataError", "get_counter", "get_model",
        "list_counters", "list_models",
    ),
    # Conversation state: chat histories and the reducer that appends to one.
    "ctxwin.history": (
        "BaseChatMessageHistory", "FileChatMessageHistory", "HistoryFormatError", "InMemoryChatMessageHistory",
        "SQLiteChatMessageHistory", "WindowedHistory", "add_messages",
    ),
    # Errors: the root of every error ctxwin raises, and the two it raises about what it was given.
    "ctxwin._errors": ("CtxwinError", "InvalidInputError", "InvalidTypeError"),
    # Agent stacks: the error every integration raises when the current turn cannot be sent whole.
    "ctxwin.integrations": ("TurnDoesNotFit",),
    # Plugins: the marker for a plugin's hooks, and adding or removing one at run time.
    "ctxwin.hookspecs": ("hookimpl",),
    "ctxwin._plugins": ("plugin_errors", "register_plugin", "unregister_plugin"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [*_HOME_OF, "__version__"]

if not TYPE_CHECKING:  # hidden from type checkers, which then still report a misspelt ``ctxwin.name``

    def __getattr__(name: str) -> Any:
        """A public name, imported from its home module when first read (then kept here: this runs once a name)."""
        if name not in _HOME_OF:
            raise AttributeError(f"module 'ctxwin' has no attribute {name!r}")
        value = getattr(importlib.import_module(_HOME_OF[name]), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
