"""Images as providers charge them (issue 17, item 5), checked against the providers' published worked examples.

OpenAI: https://platform.openai.com/docs/guides/images-vision ("Calculating costs"). Anthropic:
https://docs.anthropic.com/en/docs/build-with-claude/vision ("Calculate image costs"). Gemini:
https://ai.google.dev/gemini-api/docs/tokens ("Multimodal tokens": images of both sides <= 384 px cost 258).
"""

from __future__ import annotations

import base64
import io
import json
import warnings

import pytest
from PIL import Image

from ctxwin.counters import ImageSizeWarning, get_counter
from ctxwin.counters._image_tokens import (
    IMAGE_PRICINGS,
    anthropic_tokens,
    gemini_tokens,
    image_pricing,
    image_size,
    image_tokens,
    openai_patches,
)
from ctxwin.messages import AIMessage, HumanMessage


def _encoded(width: int, height: int, fmt: str, **save: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 90)).save(buffer, fmt, **save)
    return buffer.getvalue()


def _data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


@pytest.mark.parametrize(("fmt", "save"), [
    ("PNG", {}), ("JPEG", {}), ("JPEG", {"progressive": True}), ("GIF", {}), ("WEBP", {}),
    ("WEBP", {"lossless": True}),
    ("JPEG", {"exif": b"Exif\x00\x00" + b"\x00" * 30_000}),  # SOF after a large APP1 segment
])
def test_sizes_read_from_real_files(fmt: str, save: dict[str, object]) -> None:
    assert image_size(_encoded(1023, 517, fmt, **save)) == (1023, 517)


def test_webp_with_alpha_uses_the_extended_header() -> None:
    buffer = io.BytesIO()
    Image.new("RGBA", (300, 77), (1, 2, 3, 4)).save(buffer, "WEBP")
    assert buffer.getvalue()[12:16] == b"VP8X" and image_size(buffer.getvalue()) == (300, 77)


@pytest.mark.parametrize("data", [b"", b"\x89PNG", b"\xff\xd8\xff\xe0\x00\x10JFIF", b"not an image", b"\xff\xd8" * 50])
def test_truncated_or_foreign_bytes_have_no_size(data: bytes) -> None:
    assert image_size(data) is None


def test_openai_published_examples() -> None:
    gpt4o = IMAGE_PRICINGS["gpt-4o"]
    assert gpt4o.tokens(1024, 1024, "high") == 765  # 4 tiles: 85 + 4 * 170
    assert gpt4o.tokens(2048, 4096, "high") == 1105  # scaled to 1024x2048, then 768x1536: 6 tiles
    assert image_tokens({"type": "image", "detail": "low", "width": 4096, "height": 8192}) == 85
    mini = IMAGE_PRICINGS["gpt-4o-mini"]
    assert mini.tokens(1024, 1024, "high") == 2833 + 4 * 5667 and mini.tokens(1024, 1024, "low") == 2833
    assert IMAGE_PRICINGS["o1"].tokens(1024, 1024, "high") == 75 + 4 * 150
    # Patch models: 1024x1024 is 1024 patches; 1800x2400 is scaled to 1056x1408, 33 x 44 = 1452 patches.
    assert openai_patches(1024, 1024) == 1024 and openai_patches(1800, 2400) == 1452
    assert IMAGE_PRICINGS["gpt-4.1-mini"].tokens(1024, 1024, "high") == 1659  # 1024 * 1.62, rounded up


def test_anthropic_published_examples() -> None:
    assert anthropic_tokens(200, 200) == 54 and anthropic_tokens(1000, 1000) == 1334
    assert anthropic_tokens(1092, 1092) == 1590
    # The sizes Anthropic lists as not resized are charged as sent; anything larger is scaled down first.
    for width, height in [(1092, 1092), (951, 1268), (896, 1344), (819, 1456), (784, 1568)]:
        assert anthropic_tokens(width, height) == -(-width * height // 750)
    assert anthropic_tokens(8000, 8000) == anthropic_tokens(1108, 1108) <= IMAGE_PRICINGS["anthropic"].maximum("")
    assert anthropic_tokens(784, 4000) < anthropic_tokens(784, 1568)  # long edge capped at 1568 px


def test_gemini_tiles() -> None:
    assert gemini_tokens(384, 384) == gemini_tokens(10, 300) == 258
    assert gemini_tokens(385, 100) == 258 and gemini_tokens(1000, 1000) == 4 * 258


@pytest.mark.parametrize("block", [
    {"type": "image_url", "image_url": {"url": "URL", "detail": "high"}},
    {"type": "image", "base64": "B64", "mime_type": "image/png"},
    {"type": "image", "source_type": "base64", "data": "B64"},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "B64"}},
])
def test_counter_reads_the_size_from_every_block_form(block: dict[str, object]) -> None:
    data = _encoded(1024, 1024, "PNG")
    payload = base64.b64encode(data).decode()
    text = json.dumps(block).replace("URL", _data_url(data, "image/png")).replace("B64", payload)
    message = HumanMessage([json.loads(text)])
    gpt4o, mini = get_counter("gpt-4o"), get_counter("openai/gpt-4o-mini")
    assert gpt4o.count_message(message) - gpt4o.count_message(HumanMessage([])) == 765
    assert mini.count_message(message) - mini.count_message(HumanMessage([])) == 2833 + 4 * 5667


def test_line_wrapped_base64_is_read() -> None:
    payload = base64.encodebytes(_encoded(300, 200, "JPEG")).decode()  # wrapped at 76 characters
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": payload}}
    assert image_tokens(block, pricing=IMAGE_PRICINGS["anthropic"]) == 80  # 300 * 200 / 750


def test_unknown_size_is_charged_the_maximum_and_says_so() -> None:
    block = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    counter = get_counter("gpt-4o-mini")
    with pytest.warns(ImageSizeWarning, match="image size unknown.*charged 48169 tokens, the most"):
        assert counter.count_message(HumanMessage([block])) - counter.count_message(HumanMessage([])) == 48169
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # low detail has a known cost whatever the size: no warning
        low = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}}
        assert image_tokens(low, upper_bound=True, pricing=IMAGE_PRICINGS["gpt-4o-mini"]) == 2833


def test_bad_pricing_names_are_clear_errors() -> None:
    with pytest.raises(ValueError, match=r"unknown image pricing 'gpt-9'.*known: gpt-4o"):
        image_pricing("gpt-9")
    with pytest.raises(ValueError, match=r"tiktoken:<encoding>,images=<pricing>"):
        get_counter("tiktoken:o200k_base,pictures=gpt-4o")


def test_legacy_function_call_arguments_are_counted() -> None:
    arguments = json.dumps({"text": " ".join(["word"] * 1000)})
    call = AIMessage("", additional_kwargs={"function_call": {"name": "save", "arguments": arguments}})
    counter = get_counter("gpt-4o")
    empty = counter.count_message(AIMessage(""))
    assert counter.count_message(call) == empty + counter.count_text(arguments) + counter.count_text("save")
    assert counter.count_message(call) > 1000
