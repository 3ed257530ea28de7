"""A provider's compaction block counted from what it holds, before any usage says what it cost: the readable summary
as text, the opaque part at one token per decoded byte.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import compress, count, repeat
from operator import attrgetter, is_
from typing import Any

from ctxwin.messages import AIMessage, BaseMessage

COMPACTION = "compaction"


def holds_compaction(message: BaseMessage) -> bool:
    """Whether ``message`` is an assistant message holding a provider's compaction block."""
    content: Any = message.content
    return isinstance(message, AIMessage) and isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == COMPACTION for block in content)


def newest_compaction(messages: Sequence[BaseMessage]) -> int | None:
    """The index of the newest message holding a compaction block, None when none does. Every plan step asks
    (``must_keep``), most conversations hold none: the messages whose content is a list are found in C loops, and
    only those are looked into."""
    listed = compress(count(), map(is_, map(type, map(attrgetter("content"), messages)), repeat(list)))
    return next((i for i in reversed(list(listed)) if holds_compaction(messages[i])), None)


def compaction_parts(block: dict[str, Any]) -> tuple[list[str], int]:
    """The text of a compaction block a counter counts, and the tokens of its opaque part (base64: 3 bytes per 4
    characters, one token each)."""
    summary = block.get("content")
    opaque = block.get("encrypted_content")
    tokens = math.ceil(len(opaque) * 3 / 4) if isinstance(opaque, str) else 0
    return ([summary] if isinstance(summary, str) else []), tokens
