"""Token charges of image and other non-text content blocks, as each provider publishes them (docs/counters.md)."""

from __future__ import annotations

import base64
import binascii
import math
import warnings
from dataclasses import dataclass
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.counters._base import DEFAULT_BLOCK_TOKENS
from ctxwin.messages._content import image_detail
from ctxwin.messages._data_url import parse_data_url

TILE_SIZE = 512
PATCH_SIZE = 32
MAX_PATCHES = 1536
ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_PIXELS_PER_TOKEN = 750
# Anthropic resizes images of "more than ~1,600 tokens"; the largest size its table lists as not resized (784x1568)
# sets the exact threshold used here, so every listed size is charged as sent.
ANTHROPIC_MAX_PIXELS = 784 * 1568
ANTHROPIC_MAX_TOKENS = math.ceil(ANTHROPIC_MAX_PIXELS / ANTHROPIC_PIXELS_PER_TOKEN)
GEMINI_TOKENS = 258
GEMINI_SMALL = 384
GEMINI_TILE = 768
# Gemini publishes no size limit; an unknown size is charged as a 3072x3072 image (16 tiles).
GEMINI_MAX_TILES = 16
# Enough of a base64 payload for any header, a JPEG's EXIF/ICC segments included (decoded: 192 KiB).
HEADER_CHARS = 256 * 1024


class ImageSizeWarning(UserWarning):
    """An image's size could not be known, so its charge is an assumption (the maximum, or a flat estimate)."""


@dataclass(frozen=True)
class ImagePricing:
    """How one model family charges images: ``kind`` is ``tiles``, ``patches``, ``area`` (Anthropic's) or
    ``gemini``."""

    name: str
    kind: str
    base: int = 0
    tile: int = 0
    multiplier: float = 1.0

    def tokens(self, width: int, height: int, detail: str) -> int:
        if self.kind == "tiles":
            return self.base if detail == "low" else self.base + self.tile * openai_tiles(width, height)
        if self.kind == "patches":
            return math.ceil(openai_patches(width, height) * self.multiplier)
        if self.kind == "area":
            return anthropic_tokens(width, height)
        return gemini_tokens(width, height)

    def maximum(self, detail: str) -> int:
        """The most one image can cost (after the provider's own resizing)."""
        if self.kind == "tiles":
            return self.base if detail == "low" else self.base + self.tile * 8  # at most 768x2048: 2 x 4 tiles
        if self.kind == "patches":
            return math.ceil(MAX_PATCHES * self.multiplier)
        if self.kind == "area":
            return ANTHROPIC_MAX_TOKENS
        return GEMINI_TOKENS * GEMINI_MAX_TILES


IMAGE_PRICINGS: dict[str, ImagePricing] = {
    pricing.name: pricing
    for pricing in (
        ImagePricing("gpt-4o", "tiles", 85, 170),  # also gpt-4.1, gpt-4.5, gpt-4-turbo
        ImagePricing("gpt-4o-mini", "tiles", 2833, 5667),
        ImagePricing("o1", "tiles", 75, 150),  # also o1-pro, o3
        ImagePricing("gpt-4.1-mini", "patches", multiplier=1.62),
        ImagePricing("gpt-4.1-nano", "patches", multiplier=2.46),
        ImagePricing("o4-mini", "patches", multiplier=1.72),
        ImagePricing("anthropic", "area"),
        ImagePricing("gemini", "gemini"),
    )
}
OPENAI_PRICING = IMAGE_PRICINGS["gpt-4o"]
UNKNOWN_SIZE_UPPER_BOUND = OPENAI_PRICING.maximum("high")
LOW_DETAIL_TOKENS = OPENAI_PRICING.base


def image_pricing(name: str) -> ImagePricing:
    """The pricing called ``name``; ValueError listing the known ones."""
    pricing = IMAGE_PRICINGS.get(name)
    if pricing is None:
        raise InvalidInputError(f"unknown image pricing {name!r} (known: {', '.join(IMAGE_PRICINGS)})")
    return pricing


def split_images_option(form: str, arg: str) -> tuple[str, ImagePricing | None]:
    """``<arg>[,images=<pricing>]`` split into a counter's own argument and the image pricing, if named; ``form``
    is the counter's spec form, for the error."""
    own, _, option = arg.partition(",")
    if not option:
        return own, None
    key, _, pricing = option.partition("=")
    if key != "images" or not pricing:
        raise InvalidInputError(f"expected '{form}' or '{form},images=<pricing>', got {arg!r}")
    return own, image_pricing(pricing)


def openai_tiles(width: int, height: int) -> int:
    """512 px tiles of an image after OpenAI's high-detail scaling (fit 2048x2048, then shortest side 768)."""
    fit = min(1.0, 2048 / max(width, height))
    shrink = fit * min(1.0, 768 / (min(width, height) * fit))
    return math.ceil(width * shrink / TILE_SIZE) * math.ceil(height * shrink / TILE_SIZE)


def high_detail_tokens(width: int, height: int) -> int:
    """gpt-4o's high-detail cost of a ``width`` x ``height`` image."""
    return OPENAI_PRICING.tokens(width, height, "high")


def openai_patches(width: int, height: int) -> int:
    """32 px patches of an image, scaled down (as OpenAI documents) when it would need more than 1536."""
    patches = math.ceil(width / PATCH_SIZE) * math.ceil(height / PATCH_SIZE)
    if patches <= MAX_PATCHES:
        return patches
    shrink = math.sqrt(PATCH_SIZE * PATCH_SIZE * MAX_PATCHES / (width * height))
    across, down = width * shrink / PATCH_SIZE, height * shrink / PATCH_SIZE
    shrink *= min(math.floor(across) / across, math.floor(down) / down)
    resized_width, resized_height = math.floor(width * shrink + 1e-6), math.floor(height * shrink + 1e-6)
    return min(MAX_PATCHES, math.ceil(resized_width / PATCH_SIZE) * math.ceil(resized_height / PATCH_SIZE))


def anthropic_tokens(width: int, height: int) -> int:
    """Claude's charge: ``w * h / 750`` after scaling to a 1568 px long edge and ~1600 tokens' area at most."""
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(width, height), math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)))
    if scale < 1.0:
        width, height = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
    return min(ANTHROPIC_MAX_TOKENS, math.ceil(width * height / ANTHROPIC_PIXELS_PER_TOKEN))


def gemini_tokens(width: int, height: int) -> int:
    """Gemini's charge: 258 for a small image, else 258 per 768x768 tile."""
    if width <= GEMINI_SMALL and height <= GEMINI_SMALL:
        return GEMINI_TOKENS
    return GEMINI_TOKENS * math.ceil(width / GEMINI_TILE) * math.ceil(height / GEMINI_TILE)


def _be(data: bytes, start: int, size: int) -> int:
    return int.from_bytes(data[start:start + size], "big")


def _le(data: bytes, start: int, size: int) -> int:
    return int.from_bytes(data[start:start + size], "little")


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Walk the JPEG segments to the first start-of-frame marker (SOF0-SOF15, except DHT, JPG and DAC)."""
    index = 2
    while index + 9 <= len(data):
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        if marker == 0xFF:  # fill byte
            index += 1
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return _be(data, index + 7, 2), _be(data, index + 5, 2)
        if 0xD0 <= marker <= 0xD9 or marker == 0x01:  # markers without a length
            index += 2
            continue
        index += 2 + _be(data, index + 2, 2)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        return _le(data, 26, 2) & 0x3FFF, _le(data, 28, 2) & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = _le(data, 21, 4)
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        return _le(data, 24, 3) + 1, _le(data, 27, 3) + 1
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from the header of PNG, JPEG, GIF or WebP bytes; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        size: tuple[int, int] | None = _be(data, 16, 4), _be(data, 20, 4)
    elif data.startswith((b"GIF87a", b"GIF89a")) and len(data) >= 10:
        size = _le(data, 6, 2), _le(data, 8, 2)
    elif data.startswith(b"\xff\xd8"):
        size = _jpeg_size(data)
    elif data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        size = _webp_size(data)
    else:
        size = None
    return size if size is not None and min(size) > 0 else None


def _payload(block: dict[str, Any]) -> str | None:
    """The base64 payload of an image block in OpenAI, LangChain or Anthropic form, if it carries one."""
    image_url = block.get("image_url")
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    source = block.get("source")
    for value in (url, block.get("url")):
        inline = parse_data_url(value) if isinstance(value, str) else None
        if inline is not None:
            return inline.data
    for value in (block.get("base64"), block.get("data") if block.get("source_type") == "base64" else None,
                  source.get("data") if isinstance(source, dict) and source.get("type") == "base64" else None):
        if isinstance(value, str):
            return value
    return None


def _decoded_size(payload: str) -> tuple[int, int] | None:
    head = "".join(payload[:HEADER_CHARS].split())  # some encoders wrap base64 lines
    head = head[:len(head) - len(head) % 4]
    try:
        return image_size(base64.b64decode(head))
    except (binascii.Error, ValueError):
        return None


def _dimension(block: dict[str, Any], key: str) -> int | None:
    extras = block.get("extras")
    value = block.get(key, extras.get(key) if isinstance(extras, dict) else None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise InvalidInputError(f"image block {key} must be a positive number of pixels, got {value!r}")
    return int(value)


def _detail(block: dict[str, Any]) -> str:
    return image_detail(block) or "auto"


def block_image_size(block: dict[str, Any]) -> tuple[int, int] | None:
    """An image block's size: given (``width``/``height``, in the block or its ``extras``) or read from its data."""
    width, height = _dimension(block, "width"), _dimension(block, "height")
    if width is not None and height is not None:
        return width, height
    payload = _payload(block)
    return None if payload is None else _decoded_size(payload)


def image_tokens(block: dict[str, Any], *, upper_bound: bool = False, pricing: ImagePricing = OPENAI_PRICING) -> int:
    """Tokens of one non-text block under ``pricing``. An image of unknown size costs the pricing's maximum when
    ``upper_bound``, else ``DEFAULT_BLOCK_TOKENS``, and an ``ImageSizeWarning`` says so."""
    if block.get("type") not in ("image", "image_url"):
        return DEFAULT_BLOCK_TOKENS
    detail = _detail(block)
    if detail == "low" and pricing.kind == "tiles":
        return pricing.base
    size = block_image_size(block)
    if size is not None:
        return pricing.tokens(*size, detail)
    charge = pricing.maximum(detail) if upper_bound else DEFAULT_BLOCK_TOKENS
    message = (f"image size unknown (no width/height and no PNG/JPEG/GIF/WebP data): charged {charge} tokens, "
               f"{'the most' if upper_bound else 'a flat estimate; not an upper bound'} under {pricing.name} pricing")
    warnings.warn(message, ImageSizeWarning, stacklevel=2)
    return charge
