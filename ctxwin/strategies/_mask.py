"""``mask_tool_outputs``: replace old tool outputs by a placeholder naming the handle the recall tool reads them back
with; the full output stays in the message's ``artifact`` (docs/recall.md, "Masking with a handle").
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxwin._errors import InvalidInputError
from ctxwin._plural import plural
from ctxwin.messages import AIMessage, BaseMessage, ToolMessage
from ctxwin.strategies._base import BaseStrategy, Change, StepContext, StepKeeps, StepResult
from ctxwin.strategies._truncate import with_text

PLACEHOLDER = ("[ctxwin: the output of {tool} ({tokens} tokens) is hidden to save room; "
               'call recall_conversation with {{"handle": "{handle}"}} to read it]')
MASKED_KEY = "ctxwin_masked"


def is_masked(message: BaseMessage) -> bool:
    """Whether ``message`` is a tool output this step masked."""
    return isinstance(message, ToolMessage) and MASKED_KEY in message.response_metadata


@dataclass
class MaskToolOutputs(BaseStrategy):
    """Mask tool outputs older than the last ``keep_rounds`` tool rounds, oldest first, until the conversation fits;
    outputs of at most ``min_tokens`` tokens are left as they are (a placeholder would not save much)."""

    keep_rounds: int = 3
    min_tokens: int = 100
    name: str = "mask_tool_outputs"

    def __post_init__(self) -> None:
        for option in ("keep_rounds", "min_tokens"):
            value = getattr(self, option)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"mask_tool_outputs {option} must be a non-negative int, got {value!r}")

    @property
    def keeps(self) -> StepKeeps:
        return "all"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        rounds = [i for i, m in enumerate(messages) if isinstance(m, AIMessage) and m.tool_calls]
        if not self.keep_rounds:
            protected = len(messages)
        else:  # the first message of the kept rounds: outputs before it may go
            protected = rounds[-self.keep_rounds] if len(rounds) >= self.keep_rounds else 0
        counts = context.counts
        pinned = set(context.pinned(messages))
        over = counts.total(messages) - context.budget.messages_budget
        out = messages
        masked: list[int] = []
        saved = 0
        for i in range(protected):
            if over <= 0:
                break
            message = messages[i]
            if not isinstance(message, ToolMessage) or i in pinned or is_masked(message):
                continue
            tokens = counts.count(message)
            if tokens <= self.min_tokens:
                continue
            text = PLACEHOLDER.format(tool=message.name or "a tool", tokens=tokens, handle=message.tool_call_id)
            copy = with_text(message, text)
            copy = copy.model_copy(update={"response_metadata": {**copy.response_metadata,
                                                                 MASKED_KEY: message.tool_call_id}})
            if out is messages:
                out = list(messages)
            out[i] = copy
            masked.append(i)
            gain = tokens - counts.count(copy)
            saved += gain
            over -= gain
        result = StepResult(out)
        if masked:
            result.changes.append(Change("truncated", [messages[i] for i in masked], [out[i] for i in masked]))
            result.notes.append(f"masked {plural(len(masked), 'tool output')} ({plural(saved, 'token')} saved)")
        return result
