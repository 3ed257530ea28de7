"""``filter``: drop messages by type, name or id, and the images of earlier turns (oldest first, until the conversation
fits), leaving an ``[image removed]`` note; dropping one side of a tool pair drops the other.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxwin._plural import plural
from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.strategies._base import (
    BaseStrategy,
    Change,
    StepContext,
    StepKeeps,
    StepResult,
    last_user_index,
    must_keep,
    without,
)
from ctxwin.strategies._shrink import shrink_until_fits
from ctxwin.trim._tool_pairs import ToolPairs, keep_tool_calls

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
    """Explicit exclusions plus removal of old images (pinned messages are untouched)."""

    exclude_types: Sequence[str] = ()
    exclude_names: Sequence[str] = ()
    exclude_ids: Sequence[str] = ()
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
        truncated: list[int] = []
        if self.drop_old_images:
            current = kept
            pinned = set(context.pinned(current))

            def old(i: int) -> bool:
                return i < last_user and isinstance(current[i].content, list) and i not in pinned

            slim = functools.partial(_slim, current, IMAGE_BLOCKS, IMAGE_PLACEHOLDER)
            shrunk = shrink_until_fits(current, old, slim, context)
            if shrunk.replacements and kept is messages:
                kept = list(messages)  # never write into the input
            for i, slimmer in shrunk.replacements.items():
                kept[i] = slimmer
            truncated = sorted(shrunk.replacements)
            changed.update(truncated)
            if truncated:
                notes.append(f"removed old images from {plural(len(truncated), 'message')}")
            if shrunk.note:
                notes.append(shrunk.note)
        result = StepResult(kept, notes, [Change("dropped", dropped)] if dropped else [])
        slimmed, other = truncated, sorted(changed - set(truncated))
        if slimmed:
            result.changes.append(Change("truncated", [origins[i] for i in slimmed], [kept[i] for i in slimmed]))
        if other:
            result.changes.append(Change("replaced", [origins[i] for i in other], [kept[i] for i in other]))
        return result
