"""The reusable callable returned when a message function is called without messages (LangChain's runnable form)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ctxwin.messages import BaseMessage


class MessageTransform:
    """A message function configured with its keyword arguments: call it (or ``.invoke`` / ``.batch`` it).

    LangChain returns a ``RunnableLambda``; ctxwin never imports LangChain, so this offers the parts of that
    interface a message function needs. ``apply`` takes the messages alone; ``kwargs`` are the arguments it was
    configured with, kept for ``repr`` and inspection. Arguments are validated when it is built, not at first use.
    """

    def __init__(self, apply: Callable[[Any], list[BaseMessage]], name: str, kwargs: dict[str, Any]) -> None:
        self._apply = apply
        self.name = name
        self.kwargs = dict(kwargs)

    def __call__(self, messages: Any) -> list[BaseMessage]:
        return self._apply(messages)

    def invoke(self, messages: Any, config: Any = None, **kwargs: Any) -> list[BaseMessage]:
        """Apply to ``messages``; ``config`` and extra keywords are accepted for runnable compatibility, unused."""
        return self._apply(messages)

    async def ainvoke(self, messages: Any, config: Any = None, **kwargs: Any) -> list[BaseMessage]:
        return self._apply(messages)

    def batch(self, inputs: Sequence[Any], config: Any = None, **kwargs: Any) -> list[list[BaseMessage]]:
        return [self._apply(messages) for messages in inputs]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{self.name}({args})"
