"""One message as one JSON text: the record format the JSONL and SQLite histories store."""

from __future__ import annotations

import json

from ctxwin.messages import BaseMessage, message_to_dict


def message_json(message: BaseMessage, index: int, *, ensure_ascii: bool = False) -> str:
    """``message_to_dict`` as compact-enough JSON; fails with the message's index before anything is stored."""
    try:
        return json.dumps(message_to_dict(message), ensure_ascii=ensure_ascii, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"messages[{index}] cannot be stored as JSON: {exc}") from None
