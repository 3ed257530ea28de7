"""``filter``: drop messages by type, name or id, and the expensive leftovers of earlier turns.

Reasoning blocks and images from before the last user message are what a model needs least and costs most, so
they go first (oldest first, stopping once the conversation fits, and leaving alone what a later trim drops anyway:
see ``shrink``): reasoning blocks are removed, an image becomes a
short ``[image removed]`` text block so the model still knows one was there. Explicit exclusions always apply.
Dropping one side of a tool call/result pair drops the other, so no provider sees an orphan.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.plural import plural
from ctxwin.strategies.base import (
    BaseStrategy,
    Change,
    StepContext,
    StepKeeps,
    StepResult,
    last_user_index,
    must_keep,
    without,
)
from ctxwin.strategies.pins import is_pinned
from ctxwin.strategies.shrink import shrink_until_fits
from ctxwin.trim.tool_pairs import ToolPairs, keep_tool_calls

REASONING_BLOCKS = frozenset({"reasoning", "thinking", "redacted_thinking"})
IMAGE_BLOCKS = frozenset({"image", "image_url", "input_image"})
IMAGE_PLACEHOLDER = {"type": "text", "text": "[image removed]"}


def _without_blocks(
    message: BaseMessage, kinds: frozenset[str], replacement: dict[str, Any] | None
) -> BaseMessage | None:
    """``message`` without its blocks of ``kinds`` (each replaced by ``replacement``); None if it has none."""
    if not isinstance(message.content, list):
        return None
    content: list[str | dict[str, Any]] = []
    changed = False
    for block in message.content:
        if isinstance(block, dict) and block.get("type") in kinds:
            changed = True
            if replacement is not None:
                content.append(dict(replacement))
        else:
            content.append(block)
    return message.model_copy(update={"content": content}) if changed else None


def drop_with_partners(messages: Sequence[BaseMessage], drop: set[int]) -> tuple[list[BaseMessage], list[int]]:
    """Remove the messages at ``drop`` and whatever would be left as half of a tool pair; returns kept, removed."""
    pairs = ToolPairs(messages)
    drop = set(drop)
    for result, call in pairs.call_of.items():
        if call in drop:
            drop.add(result)
    lost_results = {result for result in drop if result in pairs.call_of}
    kept: list[BaseMessage] = []
    for index, message in enumerate(messages):
        if index in drop:
            continue
        if isinstance(message, AIMessage) and index in pairs.results_of:
            lost = {cid for res, cid in pairs.results_of[index] if res in lost_results}
            if lost:
                message = keep_tool_calls(message, lambda cid, lost=lost: cid not in lost)  # type: ignore[misc]
        kept.append(message)
    return kept, sorted(drop)


def _slim(
    messages: list[BaseMessage],
    kinds: frozenset[str],
    replacement: dict[str, Any] | None,
    indexes: list[int],
    targets: list[int | None],
) -> list[BaseMessage | None]:
    """Slimmer copies of ``messages`` at ``indexes`` (all or nothing: ``targets`` do not apply)."""
    return [_without_blocks(messages[i], kinds, replacement) for i in indexes]


@dataclass
class FilterMessages(BaseStrategy):
    """Explicit exclusions plus removal of old reasoning blocks and old images (pinned messages are untouched)."""

    exclude_types: Sequence[str] = ()
    exclude_names: Sequence[str] = ()
    exclude_ids: Sequence[str] = ()
    drop_old_reasoning: bool = True
    drop_old_images: bool = True
    name: str = field(default="filter")

    @property
    def keeps(self) -> StepKeeps:
        return "all"

    def _excluded(self, message: BaseMessage) -> bool:
        return (
            message.type in self.exclude_types
            or (message.name is not None and message.name in self.exclude_names)
            or (message.id is not None and message.id in self.exclude_ids)
        )

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        drop: set[int] = set()
        if self.exclude_types or self.exclude_names or self.exclude_ids:
            protected = set(must_keep(messages, context.pinned))
            drop = {i for i, m in enumerate(messages) if i not in protected and self._excluded(m)}
        kept, removed = drop_with_partners(messages, drop) if drop else (messages, [])
        dropped = [messages[i] for i in removed]
        origins = messages  # kept[i] stands for origins[i]
        changed: set[int] = set()  # where kept holds a copy of origins
        notes: list[str] = []
        if removed:
            notes.append(f"excluded {len(removed)} messages by type, name or id (with their tool partners)")
            origins = without(messages, removed)
            changed = {i for i, (k, o) in enumerate(zip(kept, origins, strict=True)) if k is not o}
        last_user = last_user_index(kept) or 0
        blocks_seen = False

        def old(i: int) -> bool:
            nonlocal blocks_seen
            found = i < last_user and isinstance(kept[i].content, list) and not is_pinned(kept[i])
            blocks_seen |= found
            return found

        passes = [
            (self.drop_old_reasoning, REASONING_BLOCKS, None, "reasoning blocks"),
            (self.drop_old_images, IMAGE_BLOCKS, IMAGE_PLACEHOLDER, "images"),
        ]
        truncated: set[int] = set()  # positions slimmed, by either pass
        for enabled, kinds, replacement, label in passes:
            if not enabled:
                continue
            slim = functools.partial(_slim, kept, kinds, replacement)
            shrunk = shrink_until_fits(kept, old, slim, context)
            if shrunk.replacements and kept is messages:
                kept = list(messages)  # never write into the input
            for i, slimmer in shrunk.replacements.items():
                kept[i] = slimmer
            truncated.update(shrunk.replacements)
            changed.update(shrunk.replacements)
            if shrunk.replacements:
                notes.append(f"removed old {label} from {plural(len(shrunk.replacements), 'message')}")
            if shrunk.note and shrunk.note not in notes:
                notes.append(shrunk.note)
            if not blocks_seen:  # the next pass would search the same messages the same way, and find none either
                break
        result = StepResult(kept, notes, [Change("dropped", dropped)] if dropped else [])
        slimmed, other = sorted(truncated), sorted(changed - truncated)
        if slimmed:
            result.changes.append(Change("truncated", [origins[i] for i in slimmed], [kept[i] for i in slimmed]))
        if other:
            result.changes.append(Change("replaced", [origins[i] for i in other], [kept[i] for i in other]))
        return result
