"""The counters read ``data:`` URLs by the messages layer's one rule (``ctxwin.messages._data_url``): an image's size
from its base64 data, and the Gemini counter's inline data."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from ctxwin.counters._api.gemini import gemini_contents
from ctxwin.counters._image_tokens import ImageSizeWarning, block_image_size, image_tokens


def _png(width: int, height: int) -> str:
    """A PNG header (all an image's size is read from) of the given size, in base64."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk
                            + struct.pack(">I", zlib.crc32(chunk))).decode()


@pytest.mark.parametrize("url", [f"data:image/png;base64,{_png(640, 480)}", f"DATA:Image/PNG;BASE64,{_png(640, 480)}",
                                 f"data:image/png;name=x.png;base64,{_png(640, 480)}"])
def test_image_size_from_base64_data(url: str) -> None:
    assert block_image_size({"type": "image_url", "image_url": {"url": url}}) == (640, 480)
    assert block_image_size({"type": "image", "url": url}) == (640, 480)


@pytest.mark.parametrize("url", [f"data:text/plain,see;base64,{_png(640, 480)}", "data:image/png;base64"])
def test_no_base64_data_is_an_image_of_unknown_size(url: str) -> None:
    """``;base64,`` inside the data of a data URL that is not base64 was read as base64 here (and not by the
    conversions); now no data URL without the mark before its comma is."""
    block = {"type": "image_url", "image_url": {"url": url}}
    assert block_image_size(block) is None
    with pytest.warns(ImageSizeWarning, match="image size unknown"):
        image_tokens(block)


def test_gemini_inline_data() -> None:
    data = _png(8, 8)
    _, contents = gemini_contents([{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": f"DATA:Image/PNG;BASE64,{data}"}}]}])
    assert contents == [{"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": data}}]}]


@pytest.mark.parametrize("url", ["data:text/plain,see;base64,abc", "https://example.com/cat.png"])
def test_gemini_refuses_what_is_not_base64(url: str) -> None:
    with pytest.raises(ValueError, match=r"^messages\[0\]: a 'image_url' content block has no Gemini form .* base64 "
                                         r"data URLs, 'data:<media type>;base64,<data>'"):
        gemini_contents([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}])
