"""``truncate_tool_output``: shorten large tool results to their head and tail.

Tool outputs (search results, logs, file dumps) are the usual reason an agent's context overflows, and their middle
is the part a model needs least. The full value is never lost: it goes to the ToolMessage's ``artifact`` (which
providers never see), or, when the tool already set an artifact, to ``response_metadata["ctxwin_full_content"]``.
Oldest outputs are shortened first, and shortening stops as soon as the conversation fits (outputs a later trim
drops anyway are left alone: see ``shrink``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ctxwin.messages import BaseMessage, ToolMessage
from ctxwin.strategies.base import Budget, StepResult, is_pinned
from ctxwin.strategies.meter import Meter
from ctxwin.strategies.shrink import shrink_until_fits

MARKER = "\n[… {cut} tokens of tool output cut by ctxwin …]\n"
# Head and tail stop searching within 1/SLACK of their share: a cut log needs no exact last token, and the marker
# still reports the exact number of tokens cut.
SLACK = 20
# A bracket this narrow is a token or two wide: the token estimate closes it in a probe or two, without bisecting.
_CREEP = 32


def longest_fitting(
    length: int, guess: int, count: Callable[[int], int], limit: int, slack: int = 0
) -> tuple[int, int]:
    """A ``k <= length`` with ``count(k) <= limit`` (``count(0) == 0``), and ``count(k)``: the largest such ``k`` when
    ``count`` grows with ``k``, or the first found within ``slack`` tokens of the limit (each probe saved is a piece
    not tokenized).

    ``count(k)`` is the tokens of a ``k``-character piece. Token counts grow about linearly with text, so each probe
    aims where the last one's count puts the limit: with a slack, at the middle of the accepted window, which the
    local density usually hits at the second probe; without one, a little past the limit while no probe has failed,
    to bracket the answer. When two probes in a row leave more than half of a wide bracket, the next one bisects
    it. Only pieces about as long as the answer are tokenized, a handful of times, so cutting a megabyte log to
    1,000 tokens stays cheap.
    """
    lo, hi = 0, length + 1  # count(lo) <= limit; hi fails, or lies past the end
    lo_tokens = 0
    windowed = 0 < slack < limit
    target = limit - slack // 2 if windowed else limit
    k = min(max(guess * target // limit if windowed else guess, 1), length)
    slow = 0  # probes in a row that did not halve the bracket
    while k > lo:
        width = hi - lo
        tokens = count(k)
        if tokens <= limit:
            lo, lo_tokens = k, tokens
            if windowed and limit - tokens <= slack:
                break
        else:
            hi = k
        if hi - lo <= 1:
            break
        slow = slow + 1 if 2 * (hi - lo) > width else 0
        aim = k * target // max(tokens, 1)
        if hi > length and not windowed:  # nothing has failed yet: overshoot, so the next probe brackets the answer
            aim = min(max(aim + aim // 16 + 1, lo + 1), length)
        elif slow >= 2 and hi - lo > _CREEP:
            aim, slow = (lo + hi) // 2, 0
        k = min(max(aim, lo + 1), hi - 1)
    return lo, lo_tokens


def head_and_tail(text: str, total: int, max_tokens: int, meter: Meter, head_share: float = 2 / 3) -> tuple[str, int]:
    """``text`` (``total`` tokens) cut to about ``max_tokens``: head, a marker naming the cut, tail; and tokens cut."""
    if total <= max_tokens:
        return text, 0
    chars_per_token = len(text) / max(total, 1)
    head_limit = int(max_tokens * head_share)
    head_size, head_tokens = longest_fitting(
        len(text), int(head_limit * chars_per_token), lambda k: meter.text(text[:k]), head_limit, head_limit // SLACK
    )
    head, rest = text[:head_size], text[head_size:]
    tail_limit = max_tokens - head_tokens
    tail_size, tail_tokens = longest_fitting(
        len(rest),
        int(tail_limit * chars_per_token),
        lambda k: meter.text(rest[len(rest) - k :]),
        tail_limit,
        tail_limit // SLACK,
    )
    tail = rest[len(rest) - tail_size :] if tail_size else ""
    cut = total - head_tokens - tail_tokens
    return head + MARKER.format(cut=cut) + tail, cut


@dataclass
class TruncateToolOutput:
    """Shorten ToolMessages whose content counts more than ``max_tokens`` to head + marker + tail."""

    keeps: ClassVar[str] = "all"  # see Strategy

    max_tokens: int = 1000
    name: str = "truncate_tool_output"

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"truncate_tool_output max_tokens must be at least 1, got {self.max_tokens}")

    def apply(self, messages: list[BaseMessage], budget: Budget, meter: Meter) -> StepResult:
        candidates = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage) and not is_pinned(m)]
        marker_tokens = meter.text(MARKER.format(cut=10**6))
        text_tokens: dict[int, int] = {}  # of the outputs over the limit
        cuts: dict[int, int] = {}

        def over(i: int) -> bool:
            """Whether output ``i`` is over the limit; the cached message count bounds its text's, so most outputs
            are never tokenized again."""
            if i not in text_tokens:
                message = messages[i]
                text_tokens[i] = meter.content_tokens(message) if meter.count(message) > self.max_tokens else 0
            return text_tokens[i] > self.max_tokens

        def estimate(i: int) -> int:
            count = meter.count(messages[i])
            return count - text_tokens[i] + self.max_tokens + marker_tokens if over(i) else count

        def shorten(i: int) -> BaseMessage | None:
            if not over(i):
                return None
            message = messages[i]
            short, cuts[i] = head_and_tail(message.text, text_tokens[i], self.max_tokens, meter)
            return _with_text(message, short)

        shrunk = shrink_until_fits(messages, candidates, shorten, budget.messages_budget, meter, estimate)
        out = list(messages)
        result = StepResult(out)
        for i, short in sorted(shrunk.replacements.items()):
            out[i] = short
            result.origins[id(short)] = messages[i]
            result.truncated.append(messages[i])
        if result.truncated:
            cut = sum(cuts[i] for i in shrunk.replacements)
            result.notes.append(f"cut {cut} tokens from {len(result.truncated)} tool outputs")
        if shrunk.note:
            result.notes.append(shrunk.note)
        return result


def _with_text(message: BaseMessage, short: str) -> BaseMessage:
    """``message`` with its text replaced by ``short``; the full content moves to ``artifact`` (or metadata)."""
    if isinstance(message.content, list):
        extra = [b for b in message.content if not (isinstance(b, str) or b.get("type") == "text")]
        content: str | list[str | dict[str, object]] = [{"type": "text", "text": short}, *extra]
    else:
        content = short
    update: dict[str, Any]
    if getattr(message, "artifact", None) is None:
        update = {"content": content, "artifact": message.content}
    else:
        metadata = {**message.response_metadata, "ctxwin_full_content": message.content}
        update = {"content": content, "response_metadata": metadata}
    return message.model_copy(update=update)
