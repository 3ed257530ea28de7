"""One rule for ``data:`` URLs (``ctxwin.messages._data_url``), and the same answer at every place that reads one:
reading OpenAI blocks into standard blocks, and writing Anthropic's image sources."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxwin.messages import HumanMessage
from ctxwin.messages._data_url import DataUrl, parse_data_url
from ctxwin.messages._request_forms.anthropic import convert_to_anthropic

PNG_DATA = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


@pytest.mark.parametrize(("url", "expected"), [
    (f"data:image/png;base64,{PNG_DATA}", DataUrl("image/png", PNG_DATA)),
    (f"DATA:Image/PNG;BASE64,{PNG_DATA}", DataUrl("image/png", PNG_DATA)),  # scheme, mark and type: any case
    (f"data:image/png;name=a.png;base64,{PNG_DATA}", DataUrl("image/png", PNG_DATA)),  # parameters dropped
    (f"data:;base64,{PNG_DATA}", DataUrl("", PNG_DATA)),  # no media type named
    ("data:image/png;base64,", DataUrl("image/png", "")),
    ("data:image/png;base64,iVBO\nRw0K", DataUrl("image/png", "iVBO\nRw0K")),  # data as given
    ("data:text/plain,hello", None),  # a data URL, not base64
    ("data:image/png;base64", None),  # no comma: no data
    ("data:text/plain,see;base64,abc", None),  # the mark only inside the data
    ("data:image/png;base64x,abc", None),
    ("https://example.com/cat.png", None),
    ("", None),
])
def test_the_rule(url: str, expected: DataUrl | None) -> None:
    assert parse_data_url(url) == expected


@given(st.from_regex(r"[a-z]{1,8}/[a-z0-9.+-]{1,12}", fullmatch=True), st.binary(max_size=64))
def test_what_ctxwin_writes_it_reads(media_type: str, payload: bytes) -> None:
    data = base64.b64encode(payload).decode()
    assert parse_data_url(f"data:{media_type};base64,{data}") == (media_type, data)


def _image(url: str) -> HumanMessage:
    return HumanMessage(content=[{"type": "image_url", "image_url": {"url": url}}])


@pytest.mark.parametrize("url", [f"DATA:image/PNG;BASE64,{PNG_DATA}", f"data:image/png;base64,{PNG_DATA}"])
def test_read_as_a_base64_block(url: str) -> None:
    assert _image(url).content_blocks == [{"type": "image", "base64": PNG_DATA, "mime_type": "image/png"}]


@pytest.mark.parametrize("url", ["data:text/plain,see;base64,abc", "data:image/png;base64", "https://x.org/a.png"])
def test_no_base64_data_is_kept_as_a_url(url: str) -> None:
    assert _image(url).content_blocks == [{"type": "image", "url": url}]


def test_file_data() -> None:
    block = {"type": "input_file", "file_data": "data:Application/PDF;base64,JVBERi0=", "filename": "a.pdf"}
    assert HumanMessage(content=[block]).content_blocks == [
        {"type": "file", "base64": "JVBERi0=", "mime_type": "application/pdf", "extras": {"filename": "a.pdf"}}]


@pytest.mark.parametrize("block", [
    {"type": "image_url", "image_url": {"url": f"DATA:image/PNG;BASE64,{PNG_DATA}"}},
    {"type": "image", "url": f"data:image/png;base64,{PNG_DATA}"},  # a standard block holding a data URL
])
def test_anthropic_base64_source(block: dict[str, object]) -> None:
    request = convert_to_anthropic([HumanMessage(content=[block])])
    assert request["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_DATA}}]


@pytest.mark.parametrize("url", ["data:text/plain,see;base64,abc", "data:image/png;base64"])
def test_anthropic_refuses_a_data_url_without_base64(url: str) -> None:
    """Anthropic fetches URL sources from the web: a data URL there is refused by the API, so here, naming it."""
    messages = [HumanMessage("hi"), _image(url)]
    with pytest.raises(ValueError, match=r"^messages\[1\]: an image data URL must be base64, "
                                         r"'data:<media type>;base64,<data>', to be sent to Anthropic; got 'data:"):
        convert_to_anthropic(messages)
