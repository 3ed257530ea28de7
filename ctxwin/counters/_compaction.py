"""A provider's compaction block counted from what it holds, before any usage says what it cost: the readable summary
as text, the opaque part at one token per decoded byte.
"""

from __future__ import annotations

import math
from typing import Any

COMPACTION = "compaction"


def compaction_parts(block: dict[str, Any]) -> tuple[list[str], int]:
    """The text of a compaction block a counter counts, and the tokens of its opaque part (base64: 3 bytes per 4
    characters, one token each)."""
    summary = block.get("content")
    opaque = block.get("encrypted_content")
    tokens = math.ceil(len(opaque) * 3 / 4) if isinstance(opaque, str) else 0
    return ([summary] if isinstance(summary, str) else []), tokens
