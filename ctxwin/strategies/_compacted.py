"""``drop_compacted``: what a provider's compaction block stands for (every message before the newest one) goes
first, as the provider itself drops it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxwin._plural import plural
from ctxwin.counters._compaction import newest_compaction
from ctxwin.messages import BaseMessage
from ctxwin.strategies._base import BaseStrategy, Change, StepContext, StepKeeps, StepResult, leading_system_count


@dataclass
class DropCompacted(BaseStrategy):
    """The messages a provider's compaction block stands for, dropped first.

    An OpenAI Responses ``compaction`` item stands for every item before it (developers.openai.com/api/docs/guides/
    compaction: items before the newest one can be dropped), and Anthropic drops every block before the newest
    ``compaction`` block of a request itself (platform.claude.com/docs/en/build-with-claude/compaction); ctxwin
    holds either as a content block of type ``"compaction"`` in an assistant message. Over budget, this step drops
    every message before the newest such message, at once, except the leading system messages and pinned ones (a
    session's head among them), which stay outside the opaque block. The block itself is never changed.
    """

    name: str = field(default="drop_compacted")

    @property
    def keeps(self) -> StepKeeps:
        return "last"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        newest = newest_compaction(messages)
        if not newest:
            return StepResult(messages)  # nothing to do: not reported
        kept = set(range(leading_system_count(messages))) | set(context.pinned(messages))
        dropped = [messages[i] for i in range(newest) if i not in kept]
        if not dropped:
            return StepResult(messages)
        out = [messages[i] for i in range(newest) if i in kept] + messages[newest:]
        note = f"dropped {plural(len(dropped), 'message')} a provider's compaction stands for (it drops them too)"
        return StepResult(out, [note], [Change("dropped", dropped)])
