"""Token estimates for image and other non-text content blocks (OpenAI's published vision accounting).

OpenAI charges ``low`` detail images 85 tokens; ``high`` (and ``auto``, which may pick high) detail images are
scaled to fit in 2048x2048, then so that the shortest side is 768 px, and cost 85 + 170 per 512 px tile. The size
is read from the block or its ``extras`` (``width``/``height``); without it the estimate is flat: the largest
possible cost (1445, a 768x2048 image of 8 tiles) for an upper bound, ``DEFAULT_BLOCK_TOKENS`` otherwise.
Non-image blocks (audio, files...) are flat.
"""

from __future__ import annotations

import math
from typing import Any

from ctxwin.counters.base import DEFAULT_BLOCK_TOKENS

LOW_DETAIL_TOKENS = 85
TILE_TOKENS = 170
TILE_SIZE = 512
# After scaling the shortest side is at most 768 px and the longest at most 2048 px: at most 2 x 4 tiles.
UNKNOWN_SIZE_UPPER_BOUND = LOW_DETAIL_TOKENS + TILE_TOKENS * 8


def _dimension(block: dict[str, Any], key: str) -> int | None:
    extras = block.get("extras")
    value = block.get(key, extras.get(key) if isinstance(extras, dict) else None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"image block {key} must be a positive number of pixels, got {value!r}")
    return int(value)


def _detail(block: dict[str, Any]) -> str:
    detail = block.get("detail")
    image_url = block.get("image_url")
    if detail is None and isinstance(image_url, dict):
        detail = image_url.get("detail")
    extras = block.get("extras")
    if detail is None and isinstance(extras, dict):
        detail = extras.get("detail")
    return str(detail or "auto")


def high_detail_tokens(width: int, height: int) -> int:
    """OpenAI's high-detail cost of a ``width`` x ``height`` image."""
    fit = min(1.0, 2048 / max(width, height))
    shrink = fit * min(1.0, 768 / (min(width, height) * fit))
    tiles = math.ceil(width * shrink / TILE_SIZE) * math.ceil(height * shrink / TILE_SIZE)
    return LOW_DETAIL_TOKENS + TILE_TOKENS * tiles


def image_tokens(block: dict[str, Any], *, upper_bound: bool = False) -> int:
    """Tokens of one non-text block; ``upper_bound`` picks the worst case where the size is unknown."""
    if block.get("type") not in ("image", "image_url"):
        return DEFAULT_BLOCK_TOKENS
    if _detail(block) == "low":
        return LOW_DETAIL_TOKENS
    width, height = _dimension(block, "width"), _dimension(block, "height")
    if width is None or height is None:
        return UNKNOWN_SIZE_UPPER_BOUND if upper_bound else DEFAULT_BLOCK_TOKENS
    return high_detail_tokens(width, height)
