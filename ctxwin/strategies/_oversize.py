"""Messages too large to keep whole: each is replaced by a short placeholder naming how to recall it.

A trim keeps the newest messages that fit, one after another from the end; a message larger than all the room the
budget leaves beside what must stay (an old paste over the window) would stop it there, and every request after it
would drop all older work. Such a message is replaced by a placeholder of its side that says what it was and gives
its recall handle (its id, else ``#position``), and the trim goes on with what is older.
"""

from __future__ import annotations

from ctxwin._plural import plural
from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.strategies._base import Change, Counts

PLACEHOLDER = ("[ctxwin: {what} of {tokens:,} tokens left out, larger than the room the budget leaves; recall it by "
               "{handle}]")
# No text of fewer characters than this share of a token limit counts more than the limit (a token takes a character
# at least, but for a few scripts' rare characters, up to three): only longer ones are counted to find out.
CHARS_PER_TOKEN_FLOOR = 1 / 3


def placeholder(message: BaseMessage, position: int, tokens: int) -> BaseMessage:
    """A copy of ``message`` whose text says what it was and how to get it back (an assistant's tool calls stay, so
    their results keep their call)."""
    what = "a tool result" if message.type == "tool" else f"a {message.type} message"
    handle = message.id or f"#{position}"
    text = PLACEHOLDER.format(what=what, tokens=tokens, handle=handle)
    update: dict[str, object] = {"content": text}
    if isinstance(message, AIMessage):
        update["invalid_tool_calls"] = []
    return message.model_copy(update=update)


def replace_oversize(
    messages: list[BaseMessage], protected: set[int], room: int, counts: Counts
) -> tuple[list[BaseMessage], Change | None, list[str]]:
    """``messages`` with every unprotected message counting more than ``room`` replaced by its placeholder, the
    change, and a note naming them (the same list, None and no note when there is none)."""
    long_enough = room * CHARS_PER_TOKEN_FLOOR
    found = [i for i, message in enumerate(messages) if i not in protected and _chars(message) >= long_enough
             and counts.count(message) > room]
    if not found:
        return messages, None, []
    out = list(messages)
    originals: list[BaseMessage] = []
    copies: list[BaseMessage] = []
    for i in found:
        tokens = counts.count(messages[i])
        out[i] = placeholder(messages[i], i, tokens)
        originals.append(messages[i])
        copies.append(out[i])
    named = ", ".join(m.id or f"#{i}" for i, m in zip(found, originals, strict=True))
    note = (f"replaced {plural(len(found), 'message')} too large to keep whole ({named}) by a placeholder with its "
            f"recall handle; older messages are kept around it")
    return out, Change("replaced", originals, copies), [note]


def _chars(message: BaseMessage) -> int:
    content = message.content
    return len(content) if isinstance(content, str) else len(str(content)) + sum(
        len(str(call.get("args"))) for call in getattr(message, "tool_calls", ()))

