"""Pinned messages: the ``additional_kwargs["pinned"]`` flag, and finding the pinned messages of a list.
The lowest module of the strategies: the meter follows pins across a plan's lists, and the strategies keep them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress, count
from operator import attrgetter

from ctxwin._accelerators import accelerator
from ctxwin.messages import BaseMessage

PINNED_KEY = "pinned"


def is_pinned(message: BaseMessage) -> bool:
    """Pinned messages (``additional_kwargs["pinned"] is True``) are never dropped, truncated or summarised.

    ``additional_kwargs`` is not sent to providers by ``convert_to_openai_messages``, so the flag stays local.
    """
    return message.additional_kwargs.get(PINNED_KEY) is True


def pin(message: BaseMessage) -> BaseMessage:
    """A pinned copy of ``message``."""
    return message.model_copy(update={"additional_kwargs": {**message.additional_kwargs, PINNED_KEY: True}})


_SCAN = accelerator("ctxwin.strategies._flagged")
_C_FLAGGED: Callable[[Sequence[BaseMessage]], list[int] | None] | None = None if _SCAN is None else _SCAN.flagged


def pinned_indexes(messages: Sequence[BaseMessage], start: int = 0) -> list[int]:
    """Indexes of the pinned messages of ``messages[start:]``: a loop over a field (most messages have no
    ``additional_kwargs`` at all), and only the few with some are looked into. A plan scans once and follows the
    pins (``Meter.pinned``); a session scans only what was appended."""
    flagged = None if _C_FLAGGED is None else _C_FLAGGED(messages[start:] if start else messages)
    if flagged is not None:
        return [start + i for i in flagged if is_pinned(messages[start + i])]
    some = compress(count(start), map(attrgetter("additional_kwargs"), messages[start:]))
    return [i for i in some if is_pinned(messages[i])]


def flagged_indexes(messages: Sequence[BaseMessage]) -> list[int]:
    """Indexes of the messages with additional kwargs or response metadata: where a pin can be, or a mark a layer
    above leaves on a message it made (recall's). One loop reads both fields of each message: a plan that needs
    both reads a long history once (``pinned_indexes``). In C where it is built: the messages are not in the CPU's
    cache, and the C loop fetches the next ones while it reads one."""
    flagged = None if _C_FLAGGED is None else _C_FLAGGED(messages)
    if flagged is not None:
        return flagged
    kwargs, metadata = attrgetter("additional_kwargs"), attrgetter("response_metadata")
    return list(compress(count(), map(any, zip(map(kwargs, messages), map(metadata, messages), strict=True))))


def head_length(messages: Sequence[BaseMessage], head: Sequence[BaseMessage], start: int = 0) -> int:
    """How many of ``head`` (a session's fixed head) open ``messages[start:]``, the same objects in order: the
    head is kept like pinned messages, and a summary goes after it."""
    length = 0
    for message, held in zip(messages[start:], head, strict=False):
        if message is not held:
            break
        length += 1
    return length
