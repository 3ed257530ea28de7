"""Reading ``data:`` URLs (RFC 2397): the one rule every conversion and counter uses to find inline base64 media."""

from __future__ import annotations

from typing import NamedTuple


class DataUrl(NamedTuple):
    """The inline media of a base64 ``data:`` URL."""

    media_type: str
    data: str


def parse_data_url(url: str) -> DataUrl | None:
    """The media type and base64 data of a base64 ``data:`` URL; None for any other.

    ``data:[<media type>][;<parameter>...];base64,<data>``: scheme and mark in any case (RFC 3986, RFC 2397), the mark
    right before the first comma, the data after it as given (the provider decides on whitespace); the media type
    lower-cased (Anthropic's ``media_type`` takes lower case only) and without parameters (no provider takes them).
    """
    if url[:5].lower() != "data:":
        return None
    comma = url.find(",", 5)
    header = url[5:comma]
    if comma < 0 or header[-7:].lower() != ";base64":
        return None
    return DataUrl(header.partition(";")[0].strip().lower(), url[comma + 1:])


def is_data_url(url: str) -> bool:
    """Whether ``url`` has the ``data:`` scheme (inline or not)."""
    return url[:5].lower() == "data:"
