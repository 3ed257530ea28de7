"""Conversation state: the ``add_messages`` reducer, chat histories (memory, JSONL file, SQLite) and a windowed view."""

from ctxwin.history.base import BaseChatMessageHistory
from ctxwin.history.errors import HistoryFormatError, TornLineWarning
from ctxwin.history.jsonl import FileChatMessageHistory
from ctxwin.history.jsonl_format import SkippedLine
from ctxwin.history.memory import InMemoryChatMessageHistory
from ctxwin.history.reducer import add_messages
from ctxwin.history.sqlite import SQLiteChatMessageHistory
from ctxwin.history.windowed import WindowedHistory
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
