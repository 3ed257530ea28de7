"""Claude and Gemini models charge images as Anthropic and Google publish, through the model registry (issue 17,
item 5): the approximate counter of every Claude model prices images with Anthropic's formula, of every Gemini
model with Gemini's tiles, not gpt-4o's.

Anthropic, https://docs.claude.com/en/docs/build-with-claude/vision ("Calculate image costs"): tokens =
width * height / 750; images with a long edge over 1568 px, or over about 1,600 tokens, are scaled down first;
the worked examples: 200x200 -> ~54, 1000x1000 -> ~1334, 1092x1092 -> ~1590 tokens.
Gemini, https://ai.google.dev/gemini-api/docs/tokens ("Multimodal tokens"): an image with both dimensions
<= 384 px is 258 tokens; a larger one is cropped and scaled into 768x768 tiles, 258 tokens each.
"""

from __future__ import annotations

import base64
import io
import warnings

import pytest
from PIL import Image

from ctxwin.counters import ImageSizeWarning, get_counter
from ctxwin.counters._builtin_models import BUILTIN_MODELS
from ctxwin.counters._image_tokens import ANTHROPIC_MAX_TOKENS, GEMINI_MAX_TILES, GEMINI_TOKENS


def image_message(width: int, height: int) -> dict[str, object]:
    """A user message holding a real PNG of that size, as a data URL (the size is read from its header)."""
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(buffer, "PNG")
    url = f"data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}"
    return {"role": "user", "content": [{"type": "text", "text": "what is this"},
                                        {"type": "image_url", "image_url": {"url": url}}]}


def image_charge(model: str, width: int, height: int) -> int:
    counter = get_counter(model)
    text_only = counter.count_message({"role": "user", "content": "what is this"})
    return counter.count_message(image_message(width, height)) - text_only


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "anthropic/claude-3-5-sonnet-latest",
                                   "bedrock/us.anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-opus-4-1"])
@pytest.mark.parametrize(("width", "height", "published"), [(200, 200, 54), (1000, 1000, 1334), (1092, 1092, 1590)])
def test_claude_published_examples(model: str, width: int, height: int, published: int) -> None:
    assert image_charge(model, width, height) == published


def test_claude_resizes_large_images() -> None:
    # 3000x2000 is scaled down (long edge and area) to the ~1,600-token cap; gpt-4o would charge 1105.
    assert image_charge("claude-sonnet-4-5", 3000, 2000) <= ANTHROPIC_MAX_TOKENS
    assert image_charge("claude-sonnet-4-5", 3000, 2000) >= 1500


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini/gemini-1.5-pro-latest", "vertex_ai/gemini-2.5-pro"])
@pytest.mark.parametrize(("width", "height", "tiles"), [(384, 384, 1), (200, 100, 1), (768, 768, 1),
                                                        (1000, 1000, 4), (1920, 1080, 6)])
def test_gemini_tiles(model: str, width: int, height: int, tiles: int) -> None:
    assert image_charge(model, width, height) == GEMINI_TOKENS * tiles


@pytest.mark.parametrize(("model", "most"), [("claude-haiku-4-5", ANTHROPIC_MAX_TOKENS),
                                             ("gemini-2.0-flash", GEMINI_TOKENS * GEMINI_MAX_TILES)])
def test_unknown_size_is_the_providers_maximum(model: str, most: int) -> None:
    counter = get_counter(model)
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        charge = counter.count_message(message) - counter.count_message({"role": "user", "content": ""})
    assert charge == most
    pricing = "anthropic" if model.startswith("claude") else "gemini"
    assert any(issubclass(w.category, ImageSizeWarning) and f"under {pricing} pricing" in str(w.message)
               for w in caught)


def test_every_claude_and_gemini_model_is_priced_by_its_provider() -> None:
    for model in BUILTIN_MODELS:
        if model.name.startswith("claude"):
            assert model.counter.endswith(",images=anthropic") and model.approximate
        if model.name.startswith("gemini"):
            assert model.counter.endswith(",images=gemini") and model.approximate


def test_default_approximate_keeps_openai_pricing() -> None:
    assert get_counter("approximate").name == "approximate"
    assert image_charge("approximate:safe", 1000, 1000) == 765  # gpt-4o: 85 + 170 * 4 tiles


def test_bad_image_option() -> None:
    with pytest.raises(ValueError, match="unknown image pricing 'claude'"):
        get_counter("approximate:safe,images=claude")
    with pytest.raises(ValueError, match=r"or 'approximate\[:safe\],images=<pricing>', got 'safe,pixels=anthropic'"):
        get_counter("approximate:safe,pixels=anthropic")
