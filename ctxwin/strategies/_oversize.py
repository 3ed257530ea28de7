"""Messages too large to keep whole (an old paste over the window) replaced by a placeholder naming their recall
handle, so a trim goes on with what is older instead of stopping there."""

from __future__ import annotations

from collections.abc import Sequence

from ctxwin._plural import plural
from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.strategies._base import Counts

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


def oversize_at_cut(
    messages: list[BaseMessage], kept: list[int], protected: set[int], budget: int, room: int, counts: Counts
) -> tuple[list[BaseMessage], int] | None:
    """When the newest messages kept (``kept``, indexes) stop at a message larger than the whole ``budget`` with
    older messages before it, ``messages`` with that message replaced by its placeholder, and its index; None when
    they stop for another reason or the placeholder would not fit in ``room`` (the budget less what must stay)
    beside them either. Only that message is counted."""
    older = [i for i in kept if i not in protected]
    start = older[0] if older else next((i for i in sorted(protected, reverse=True)), len(messages))
    cut = start - 1
    while cut >= 0 and cut in protected:
        cut -= 1
    if not any(i not in protected for i in range(cut)):  # nothing older to keep: no placeholder is worth it
        return None
    if _chars(messages[cut]) < budget * CHARS_PER_TOKEN_FLOOR or counts.count(messages[cut]) <= budget:
        return None
    copy = placeholder(messages[cut], cut, counts.count(messages[cut]))
    used = sum(counts.each([messages[i] for i in older]))
    if counts.count(copy) > room - used:
        return None
    return [*messages[:cut], copy, *messages[cut + 1:]], cut


def oversize_note(messages: Sequence[BaseMessage], replaced: Sequence[int]) -> str:
    """The note naming the messages replaced by their placeholders."""
    named = ", ".join(messages[i].id or f"#{i}" for i in replaced)
    return (f"replaced {plural(len(replaced), 'message')} too large to keep whole ({named}) by a placeholder with "
            f"its recall handle; older messages are kept around it")


def _chars(message: BaseMessage) -> int:
    content = message.content
    return len(content) if isinstance(content, str) else len(str(content)) + sum(
        len(str(call.get("args"))) for call in getattr(message, "tool_calls", ()))
