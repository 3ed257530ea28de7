"""Recall: what a plan leaves out stays searchable and can come back (``RecallStore``, SQLite FTS5 with BM25), into
the request when the newest user message relates to it (``ctxwin.recall._inject``), or through a tool an agent calls
(``RecallTool``). docs/recall.md has the guide."""

from ctxwin.recall._inject import Recalled, is_recalled
from ctxwin.recall._store import Excerpt, RecallStore
from ctxwin.recall._tool import RECALL_TOOL_NAME, RecallTool

__all__ = ["RECALL_TOOL_NAME", "Excerpt", "RecallStore", "RecallTool", "Recalled", "is_recalled"]
