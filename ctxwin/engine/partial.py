"""The largest part of one message that still fits, as LangChain's ``allow_partial`` defines it.

``side="first"`` keeps the beginning of the message, ``side="last"`` its end. List content loses whole blocks from
the far end (at least one block stays); failing that, the text of the block nearest the kept side (or the string
content) is split with ``text_splitter`` and the most pieces that fit are kept, joined into string content.

Unlike LangChain, every candidate is measured as it would be returned: pieces in their real order (LangChain
measures the reversed pieces for ``side="last"``) and inside the list it would be returned in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ctxwin.messages import BaseMessage

Side = Literal["first", "last"]


def largest_fitting(upper: int, fits: Callable[[int], bool]) -> int:
    """The largest ``k`` in ``1..upper`` with ``fits(k)``, by binary search (``fits`` taken as monotone); else 0."""
    low, high = 0, upper
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def _nearest_text(content: list[Any], side: Side) -> str | None:
    if not content:
        return None
    block = content[0] if side == "first" else content[-1]
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    return None


def find_partial(
    message: BaseMessage,
    side: Side,
    fits: Callable[[BaseMessage], bool],
    text_splitter: Callable[[str], list[str]],
    *,
    whole_first: bool = False,
) -> BaseMessage | None:
    """The largest part of ``message`` for which ``fits`` holds, as a deep copy; None if no part fits.

    ``whole_first`` also tries the message as it is first (the engine passes it when tool calls were removed, so
    the whole content may now fit).
    """

    def with_content(content: str | list[Any]) -> BaseMessage:
        return message.model_copy(update={"content": content})

    if whole_first and message.content and fits(message):
        return message.model_copy(deep=True)
    content = message.content
    if isinstance(content, list) and len(content) > 1:

        def blocks(k: int) -> list[Any]:
            return content[:k] if side == "first" else content[-k:]

        kept = largest_fitting(len(content) - 1, lambda k: fits(with_content(blocks(k))))
        if kept:
            return with_content(blocks(kept)).model_copy(deep=True)
    text = content if isinstance(content, str) else _nearest_text(content, side)
    if not text:
        return None
    pieces = text_splitter(text)

    def joined(k: int) -> str:
        return "".join(pieces[:k] if side == "first" else pieces[len(pieces) - k :])

    kept = largest_fitting(len(pieces), lambda k: fits(with_content(joined(k))))
    return with_content(joined(kept)).model_copy(deep=True) if kept else None


def default_text_splitter(text: str) -> list[str]:
    """Split on newlines, keeping each newline at the end of its piece (LangChain's default)."""
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]
