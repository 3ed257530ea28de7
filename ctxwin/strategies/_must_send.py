"""What a model call cannot do without (the last user message and the newest tool round after it), and whether a
fitted request sends it."""

from __future__ import annotations

from collections.abc import Sequence

from ctxwin._plural import plural
from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.strategies._base import last_user_index


def must_send(messages: Sequence[BaseMessage]) -> tuple[list[int], str]:
    """The indexes of what a model call cannot do without, and its name: the last user message (what the model
    answers) and the newest tool round after it (the agent's latest tool calls and their results: without them the
    model would call its tools again); without a user message, the newest message alone. Older rounds of the same
    turn may go, as any older message may (an agent left to work makes one turn of many rounds)."""
    user = last_user_index(messages)
    if user is None:
        return ([len(messages) - 1] if messages else []), "the newest message (the conversation has no user message)"
    calls = next((i for i in range(len(messages) - 1, user, -1) if _calls_tools(messages[i])), None)
    if calls is None:
        return [user], "the last user message"
    needed = [user, *range(calls, len(messages))]
    if calls == user + 1:
        return needed, f"the current turn ({plural(len(needed), 'message')} from the last user message on)"
    return needed, f"the last user message and the newest tool round ({plural(len(needed), 'message')})"


def _calls_tools(message: BaseMessage) -> bool:
    return isinstance(message, AIMessage) and bool(message.tool_calls)


def sends(inputs: Sequence[BaseMessage], needed: list[int], fitted: Sequence[BaseMessage]) -> bool:
    """Whether ``fitted`` sends the messages ``must_send`` named: the user message, and the round at its end (a
    tool result may be a shortened copy)."""
    if not needed:
        return True
    user, tail = inputs[needed[0]], len(needed) - 1
    if not any(m is user or m == user for m in fitted) or len(fitted) <= tail:
        return False
    pairs = zip(fitted[len(fitted) - tail :], inputs[len(inputs) - tail :], strict=True)
    return all(type(a) is type(b) and getattr(a, "tool_call_id", None) == getattr(b, "tool_call_id", None)
               and getattr(a, "tool_calls", None) == getattr(b, "tool_calls", None) for a, b in pairs)
