"""``truncate_tool_output``: shorten large tool results to their head and tail, the part a model needs least going
first; the full value goes to the ToolMessage's ``artifact``, which providers never see.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin._plural import plural
from ctxwin.messages import BaseMessage, ToolMessage
from ctxwin.strategies._base import BaseStrategy, Change, Counts, StepContext, StepKeeps, StepResult
from ctxwin.strategies._fitting import fitting_search, run_in_step
from ctxwin.strategies._pins import is_pinned
from ctxwin.strategies._shrink import shrink_until_fits

MARKER = "\n[… {cut} tokens of tool output cut by ctxwin …]\n"
# Head and tail stop searching within 1/SLACK of their share: a cut log needs no exact last token, and the marker
# still reports the exact number of tokens cut.
SLACK = 10
# ... but never more than this many tokens: an output cut by just what the budget needs stays long, and a tenth of it
# would leave thousands of tokens of the budget unused.
MAX_SLACK = 128
def _cut(text: str, total: int, max_tokens: int, head_share: float) -> Generator[str, int, tuple[str, int]]:
    """``head_and_tail`` for one text as a generator of the pieces it counts (see ``_run``)."""
    if total <= max_tokens:
        return text, 0
    chars_per_token = len(text) / max(total, 1)
    head_limit = int(max_tokens * head_share)
    head_size, head_tokens = yield from fitting_search(
        len(text), int(head_limit * chars_per_token), head_limit, _slack(head_limit), lambda k: text[:k]
    )
    head, rest = text[:head_size], text[head_size:]
    tail_limit = max_tokens - head_tokens
    tail_size, tail_tokens = yield from fitting_search(
        len(rest), int(tail_limit * chars_per_token), tail_limit, _slack(tail_limit), lambda k: rest[len(rest) - k :]
    )
    tail = rest[len(rest) - tail_size :] if tail_size else ""
    cut = total - head_tokens - tail_tokens
    return head + MARKER.format(cut=cut) + tail, cut


def _slack(limit: int) -> int:
    return min(limit // SLACK, MAX_SLACK)


def heads_and_tails(
    texts: Sequence[tuple[str, int]], max_tokens: int | Sequence[int], counts: Counts, head_share: float = 2 / 3
) -> list[tuple[str, int]]:
    """Each ``(text, total)`` (``total`` its tokens) cut to about ``max_tokens`` (one limit, or one per text): head,
    a marker naming the cut, tail; and the tokens cut. The texts are searched in step, so each round's probes are
    tokenized in one batch."""
    limits = [max_tokens] * len(texts) if isinstance(max_tokens, int) else list(max_tokens)
    searches = [_cut(text, total, limit, head_share) for (text, total), limit in zip(texts, limits, strict=True)]
    return run_in_step(searches, counts.texts)


def head_and_tail(
    text: str, total: int, max_tokens: int, counts: Counts, head_share: float = 2 / 3
) -> tuple[str, int]:
    """``heads_and_tails`` for one text."""
    return heads_and_tails([(text, total)], max_tokens, counts, head_share)[0]


def cap_tool_outputs(messages: Sequence[BaseMessage], max_tokens: int, counts: Counts) -> list[BaseMessage]:
    """``messages`` with each unpinned ToolMessage whose text counts more than ``max_tokens`` cut to head + marker +
    tail of about ``max_tokens`` (the full content moved as ``with_text`` moves it); the others are the same
    objects. What a cache-stable session does to an output once, when it arrives (``PlanSession``)."""
    out = list(messages)
    long = [
        (i, tokens) for i, message in enumerate(messages)
        if isinstance(message, ToolMessage) and not is_pinned(message) and counts.count(message) > max_tokens
        and (tokens := content_tokens(counts, message)) > max_tokens
    ]
    cut = heads_and_tails([(messages[i].text, tokens) for i, tokens in long], max_tokens, counts)
    for (i, _), (short, tokens_cut) in zip(long, cut, strict=True):
        if tokens_cut:
            out[i] = with_text(messages[i], short)
    return out


def content_tokens(counts: Counts, message: BaseMessage) -> int:
    """The tokens a message's text content adds to it, from its count and that of an empty copy, so a large text is
    not tokenized a second time (for the built-in counters: exactly its text's tokens)."""
    if not isinstance(message.content, str):
        return counts.text(message.text)
    return counts.count(message) - counts.count(message.model_copy(update={"content": ""}))


@dataclass
class TruncateToolOutput(BaseStrategy):
    """Shorten ToolMessages whose content counts more than ``max_tokens`` to head + marker + tail, each by about
    what the budget needs (never below ``max_tokens``)."""

    max_tokens: int = 1000
    name: str = "truncate_tool_output"
    # The outputs of the tool step where a later trim's cut falls may go down to this, so that the step fills the
    # room the newer messages leave instead of being dropped whole (see ``shrink_until_fits``'s ``floor_at_cut``);
    # never above ``max_tokens``.
    min_tokens: int = 100

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise InvalidInputError(f"truncate_tool_output max_tokens must be at least 1, got {self.max_tokens}")
        if self.min_tokens < 1:
            raise InvalidInputError(f"truncate_tool_output min_tokens must be at least 1, got {self.min_tokens}")

    @property
    def keeps(self) -> StepKeeps:
        return "all"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        counts = context.counts
        marker_tokens = counts.text(MARKER.format(cut=10**6))
        least = min(self.min_tokens, self.max_tokens)
        text_tokens: dict[int, int] = {}  # of the outputs that may be cut
        cuts: dict[int, int] = {}

        pinned = set(context.pinned(messages))

        def wanted(i: int) -> bool:
            return isinstance(messages[i], ToolMessage) and i not in pinned

        def over(i: int, least: int) -> bool:
            """Whether output ``i``'s text is over ``least`` tokens; the cached message count bounds its text's, so
            most outputs are never tokenized again."""
            message = messages[i]
            if counts.count(message) <= least:
                return False
            if i not in text_tokens:
                text_tokens[i] = content_tokens(counts, message)
            return text_tokens[i] > least

        def floor(i: int, least: int = self.max_tokens) -> int:
            count = counts.count(messages[i])
            return count - text_tokens[i] + least + marker_tokens if over(i, least) else count

        def shorten(indexes: list[int], targets: list[int | None]) -> list[BaseMessage | None]:
            """Cut each output to its target count (None: to ``max_tokens``), from the original text; the search
            gives no target below ``floor`` (``least`` only at the later step's cut)."""
            long = [
                (i, t) for i, t in zip(indexes, targets, strict=True)
                if over(i, self.max_tokens if t is None else least)
            ]
            limits = [
                self.max_tokens if t is None
                else max(text_tokens[i] - (counts.count(messages[i]) - t) - marker_tokens, least)
                for i, t in long
            ]
            cut = heads_and_tails([(messages[i].text, text_tokens[i]) for i, _ in long], limits, counts)
            short = dict(zip((i for i, _ in long), cut, strict=True))
            cuts.update((i, tokens) for i, (_, tokens) in short.items())
            return [with_text(messages[i], short[i][0]) if i in short and short[i][1] else None for i in indexes]

        shrunk = shrink_until_fits(messages, wanted, shorten, context, floor, lambda i: floor(i, least))
        out = list(messages) if shrunk.replacements else messages
        result = StepResult(out)
        if shrunk.replacements:
            indexes = sorted(shrunk.replacements)
            for i in indexes:
                out[i] = shrunk.replacements[i]
            result.changes.append(Change("truncated", [messages[i] for i in indexes], [out[i] for i in indexes]))
            cut = sum(cuts[i] for i in indexes)
            result.notes.append(f"cut {plural(cut, 'token')} from {plural(len(indexes), 'tool output')}")
        if shrunk.note:
            result.notes.append(shrunk.note)
        return result


def with_text(message: BaseMessage, short: str) -> BaseMessage:
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
