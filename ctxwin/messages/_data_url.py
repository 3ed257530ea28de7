"""Reading ``data:`` URLs: the one rule every conversion and counter uses to find inline base64 media.

A URL holds inline base64 media when it is ``data:[<media type>][;<parameter>...];base64,<data>`` (RFC 2397): the
``data:`` scheme and the ``;base64`` mark are read in any case (RFC 3986 schemes, RFC 2397 tokens), the mark is the
last thing before the first comma, and the data is everything after that comma, as given (whitespace included: the
provider decides on it). The media type is the part before the first ``;``, in lower case (media types are
case-insensitive, and Anthropic's ``media_type`` takes lower case only), without its parameters (no provider's
media-type field takes them); empty when the URL names none. Any other URL, a ``data:`` URL without ``;base64``
(``data:text/plain,hi``) or without a comma, and one where ``;base64,`` only appears inside the data, holds no
inline base64 media: each caller says what it does with it (kept as a URL, refused where the provider takes none).
"""

from __future__ import annotations

from typing import NamedTuple


class DataUrl(NamedTuple):
    """The inline media of a base64 ``data:`` URL."""

    media_type: str
    data: str


def parse_data_url(url: str) -> DataUrl | None:
    """The media type and base64 data of a base64 ``data:`` URL (see the module docstring); None for any other."""
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
