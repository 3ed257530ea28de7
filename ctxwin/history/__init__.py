"""Conversation state: the ``add_messages`` reducer, chat histories (memory, JSONL file, SQLite) and a windowed view."""

from ctxwin.history._base import BaseChatMessageHistory
from ctxwin.history._errors import HistoryFormatError, TornLineWarning
from ctxwin.history._jsonl import FileChatMessageHistory
from ctxwin.history._jsonl_format import SkippedLine
from ctxwin.history._memory import InMemoryChatMessageHistory
from ctxwin.history._reducer import add_messages
from ctxwin.history._sqlite import SQLiteChatMessageHistory
from ctxwin.history._windowed import WindowedHistory
from ctxwin.messages import REMOVE_ALL_MESSAGES

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "BaseChatMessageHistory",
    "FileChatMessageHistory",
    "HistoryFormatError",
    "InMemoryChatMessageHistory",
    "SQLiteChatMessageHistory",
    "SkippedLine",
    "TornLineWarning",
    "WindowedHistory",
    "add_messages",
]
