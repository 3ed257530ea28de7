"""ctxwin: fit LLM chat prompts into a model's token budget.

The message API mirrors ``langchain_core.messages`` and ``trim_messages`` mirrors LangChain's: switching is a change
of import. ``import ctxwin`` imports none of the modules below: each public name is imported from its home module the
first time it is read (PEP 562), so a program or a command pays only for what it uses; heavy tokenizer packages
load only when a counter that needs them is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors read (``X as X``: re-exported); at run time, _HOMES below
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
    from ctxwin.history import TornLineWarning as TornLineWarning
    from ctxwin.history import WindowedHistory as WindowedHistory
    from ctxwin.history import add_messages as add_messages
    from ctxwin.hookspecs import hookimpl as hookimpl
    from ctxwin.messages import *  # noqa: F403
    from ctxwin.planner import Budget as Budget
    from ctxwin.planner import BudgetExceeded as BudgetExceeded
    from ctxwin.planner import FitConfig as FitConfig
    from ctxwin.planner import Plan as Plan
    from ctxwin.planner import Planner as Planner
    from ctxwin.planner import PlanSession as PlanSession
    from ctxwin.planner import StepReport as StepReport
    from ctxwin.planner import fit as fit
    from ctxwin.strategies import BaseStrategy as BaseStrategy
    from ctxwin.strategies import FilterMessages as FilterMessages
    from ctxwin.strategies import StepContext as StepContext
    from ctxwin.strategies import StepResult as StepResult
    from ctxwin.strategies import Strategy as Strategy
    from ctxwin.strategies import Summarize as Summarize
    from ctxwin.strategies import TrimToBudget as TrimToBudget
    from ctxwin.strategies import TruncateToolOutput as TruncateToolOutput
    from ctxwin.strategies import extractive_summarizer as extractive_summarizer
    from ctxwin.strategies import get_strategy as get_strategy
    from ctxwin.strategies import get_strategy_factory as get_strategy_factory
    from ctxwin.strategies import is_pinned as is_pinned
    from ctxwin.strategies import list_strategies as list_strategies
    from ctxwin.strategies import pin as pin
    from ctxwin.trim import filter_messages as filter_messages
    from ctxwin.trim import merge_message_runs as merge_message_runs
    from ctxwin.trim import trim_messages as trim_messages

__version__ = "0.1.0"

# Each public name's home module, where ``__getattr__`` imports it from.
_HOMES: dict[str, tuple[str, ...]] = {
    "ctxwin.messages": (
        "REMOVE_ALL_MESSAGES", "AIMessage", "AIMessageChunk", "AnyMessage", "AudioContentBlock", "BaseMessage",
        "BaseMessageChunk", "ChatMessage", "ChatMessageChunk", "ContentBlock", "DataContentBlock", "FileContentBlock",
        "HumanMessage", "HumanMessageChunk", "ImageContentBlock", "InputTokenDetails", "InvalidToolCall", "MessageLike",
        "NonStandardContentBlock", "OutputTokenDetails", "PlainTextContentBlock", "ReasoningContentBlock",
        "RemoveMessage", "SystemMessage", "SystemMessageChunk", "TextAccessor", "TextContentBlock", "ToolCall",
        "ToolCallChunk", "ToolMessage", "ToolMessageChunk", "UsageMetadata", "VideoContentBlock", "add_usage",
        "convert_to_messages", "convert_to_openai_messages", "create_audio_block", "create_file_block",
        "create_image_block", "create_non_standard_block", "create_reasoning_block", "create_text_block",
        "create_video_block", "default_tool_chunk_parser", "default_tool_parser", "get_buffer_string",
        "get_msg_title_repr", "invalid_tool_call", "is_data_content_block", "merge_content", "merge_dicts", "merge_ids",
        "merge_lists", "message_chunk_to_message", "message_from_dict", "message_to_dict", "messages_from_dict",
        "messages_to_dict", "openai_role", "parse_partial_json", "subtract_usage", "to_content_blocks", "tool_call",
        "tool_call_chunk"
    ),
    "ctxwin.batch": ("FitResult", "fit_many"),
    "ctxwin.counters": (
        "BaseTokenCounter", "ModelSpec", "TokenCounter", "TokenizerDataError", "get_counter", "get_model",
        "list_counters", "list_models"
    ),
    "ctxwin.history": (
        "BaseChatMessageHistory", "FileChatMessageHistory", "HistoryFormatError", "InMemoryChatMessageHistory",
        "SQLiteChatMessageHistory", "TornLineWarning", "WindowedHistory", "add_messages"
    ),
    "ctxwin.hookspecs": ("hookimpl",),
    "ctxwin.planner": ("Budget", "BudgetExceeded", "FitConfig", "Plan", "Planner", "PlanSession", "StepReport", "fit"),
    "ctxwin._plugins": ("plugin_errors", "register_plugin", "unregister_plugin"),
    "ctxwin.strategies": (
        "BaseStrategy", "FilterMessages", "StepContext", "StepResult", "Strategy", "Summarize", "TrimToBudget",
        "TruncateToolOutput", "extractive_summarizer", "get_strategy", "get_strategy_factory", "is_pinned",
        "list_strategies", "pin"
    ),
    "ctxwin.trim": ("filter_messages", "merge_message_runs", "trim_messages"),
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
