"""RemoveMessage: an instruction to a history reducer to delete the message with this id."""

from __future__ import annotations

from typing import Any, Literal

from ctxwin._errors import InvalidInputError
from ctxwin.messages._base import BaseMessage

REMOVE_ALL_MESSAGES = "__remove_all__"


class RemoveMessage(BaseMessage):
    type: Literal["remove"] = "remove"

    def __init__(self, id: str, **kwargs: Any) -> None:
        if kwargs.pop("content", None):
            raise InvalidInputError("RemoveMessage does not support 'content' field.")
        super().__init__("", id=id, **kwargs)
