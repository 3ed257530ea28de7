"""``filter``: drop messages by type, name or id, and the expensive leftovers of earlier turns.

Reasoning blocks and images from before the last user message are what a model needs least and costs most, so
they go first (oldest first, stopping once the conversation fits): reasoning blocks are removed, an image becomes a
short ``[image removed]`` text block so the model still knows one was there. Explicit exclusions always apply.
Dropping one side of a tool call/result pair drops the other, so no provider sees an orphan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxwin.engine.tool_calls import keep_tool_calls
from ctxwin.engine.tool_pairs import ToolPairs
from ctxwin.messages import AIMessage, BaseMessage
from ctxwin.strategies.base import Budget, StepResult, is_pinned, last_user_index, must_keep
from ctxwin.strategies.meter import Meter

REASONING_BLOCKS = frozenset({"reasoning", "thinking", "redacted_thinking"})
IMAGE_BLOCKS = frozenset({"image", "image_url", "input_image"})
IMAGE_PLACEHOLDER = {"type": "text", "text": "[image removed]"}


def _without_blocks(message: BaseMessage, kinds: frozenset[str], replacement: dict[str, Any] | None) -> BaseMessage:
    if not isinstance(message.content, list):
        return message
    content: list[str | dict[str, Any]] = []
    changed = False
    for block in message.content:
        if isinstance(block, dict) and block.get("type") in kinds:
            changed = True
            if replacement is not None:
                content.append(dict(replacement))
        else:
            content.append(block)
    return message.model_copy(update={"content": content}) if changed else message


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


@dataclass
class FilterMessages:
    """Explicit exclusions plus removal of old reasoning blocks and old images (pinned messages are untouched)."""

    exclude_types: Sequence[str] = ()
    exclude_names: Sequence[str] = ()
    exclude_ids: Sequence[str] = ()
    drop_old_reasoning: bool = True
    drop_old_images: bool = True
    name: str = field(default="filter")

    def _excluded(self, message: BaseMessage) -> bool:
        return (
            message.type in self.exclude_types
            or (message.name is not None and message.name in self.exclude_names)
            or (message.id is not None and message.id in self.exclude_ids)
        )

    def apply(self, messages: list[BaseMessage], budget: Budget, meter: Meter) -> StepResult:
        protected = set(must_keep(messages))
        excluding = self.exclude_types or self.exclude_names or self.exclude_ids
        drop = {i for i, m in enumerate(messages) if i not in protected and self._excluded(m)} if excluding else set()
        kept, removed = drop_with_partners(messages, drop) if drop else (list(messages), [])
        result = StepResult(kept, dropped=[messages[i] for i in removed])
        if removed:
            result.notes.append(f"excluded {len(removed)} messages by type, name or id (with their tool partners)")
        gone = set(removed)
        origins = [m for i, m in enumerate(messages) if i not in gone]  # kept[i] stands for origins[i]
        result.origins.update((id(k), o) for k, o in zip(kept, origins, strict=True) if k is not o)
        last_user = last_user_index(kept)
        old = [i for i in range(last_user or 0) if isinstance(kept[i].content, list) and not is_pinned(kept[i])]
        passes = [
            (self.drop_old_reasoning, REASONING_BLOCKS, None, "reasoning blocks"),
            (self.drop_old_images, IMAGE_BLOCKS, IMAGE_PLACEHOLDER, "images"),
        ]
        total = meter.total(kept)
        for enabled, kinds, replacement, label in passes:
            changed = 0
            for i in old if enabled else ():
                if total <= budget.messages_budget:
                    break
                slimmer = _without_blocks(kept[i], kinds, replacement)
                if slimmer is not kept[i]:
                    total += meter.count(slimmer) - meter.count(kept[i])
                    if all(origins[i] is not t for t in result.truncated):
                        result.truncated.append(origins[i])
                    kept[i] = slimmer
                    result.origins[id(slimmer)] = origins[i]
                    changed += 1
            if changed:
                result.notes.append(f"removed old {label} from {changed} messages")
        return result
