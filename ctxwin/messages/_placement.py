"""Non-text parts where the target API takes them: a part a message cannot hold moves to a user message inserted after
that message's unit, so tool calls stay next to their results and the model still sees it (docs/interop.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxwin._plural import plural
from ctxwin.messages._base import BaseMessage
from ctxwin.messages._content import image_detail, without_detail
from ctxwin.messages._human import HumanMessage
from ctxwin.messages._openai_format import openai_role
from ctxwin.messages._system import SystemMessage
from ctxwin.messages._tool import ToolMessage

if TYPE_CHECKING:
    from ctxwin.messages._request_forms.form import RequestForm

_IMAGES = frozenset({"image", "image_url", "input_image"})
AUDIO = frozenset({"audio", "input_audio"})
_FILES = frozenset({"file", "input_file", "document"})
VIDEO = frozenset({"video"})
MEDIA = _IMAGES | AUDIO | _FILES | VIDEO
# Marks a user message ``place_media`` inserted to carry moved media: part of the unit it was moved out of, not a
# user turn (never "the last user message" a plan must keep).
MOVED_MEDIA = "__ctxwin_moved_media__"


# The tool calls whose results the moved media came from (its note names them): without their results in the
# request, the message is stray (``strategies._pairs``).
MOVED_FROM = "__ctxwin_moved_from__"


def is_moved_media(message: BaseMessage) -> bool:
    """Whether ``message`` is a user message ``place_media`` inserted for moved media."""
    return bool(message.additional_kwargs.get(MOVED_MEDIA))


def _moved(parts: list[Any], calls: list[str]) -> HumanMessage:
    return HumanMessage(parts, additional_kwargs={MOVED_MEDIA: True, **({MOVED_FROM: calls} if calls else {})})


def _kind(block: Any) -> str | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind is None and isinstance(block.get("image"), dict):  # Bedrock's image block
        return "image"
    return kind if isinstance(kind, str) and kind in MEDIA else None


def _label(kind: str) -> str:
    return "image" if kind in _IMAGES else "audio" if kind in AUDIO else "video" if kind in VIDEO else "file"


@dataclass
class Placed:
    """The messages with every part where the API takes it, and what was changed."""

    messages: list[BaseMessage]
    replaced: list[tuple[BaseMessage, BaseMessage]] = field(default_factory=list)
    added: list[BaseMessage] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _where(message: BaseMessage, index: int) -> str:
    if isinstance(message, ToolMessage):
        return f"the result of tool call {message.tool_call_id}"
    return f"the {openai_role(message)} message #{index}"


def _unit_end(messages: list[BaseMessage], index: int) -> int:
    """The index after the unit of ``messages[index]``: a tool result or a tool-calling assistant message with the
    results that follow it, a leading system message with the system messages after it."""
    end = index + 1
    same = SystemMessage if isinstance(messages[index], SystemMessage) else ToolMessage
    while end < len(messages) and isinstance(messages[end], same):
        end += 1
    return end


def place_media(messages: list[BaseMessage], form: RequestForm) -> Placed:
    """``messages`` with each media part in a message the ``form``'s API takes it in (see the module); the input
    is never mutated, and ``Placed.messages is messages`` when nothing had to change."""
    rules = form.media
    if rules is None:
        return Placed(messages)
    roles, nowhere, output = rules.roles, rules.nowhere, form.name
    placed = Placed(messages)
    inserts: dict[int, list[Any]] = {}  # unit end -> the parts moved there, with their notes
    calls: dict[int, list[str]] = {}  # unit end -> the tool calls whose results they came from
    sources = 0  # messages whose media moved
    details = 0  # images whose detail the API does not take
    out = list(messages)
    changed = False
    for index, message in enumerate(messages):
        if not isinstance(message.content, list) or not any(map(_kind, message.content)):
            continue
        takes = openai_role(message) in roles
        content: list[Any] = []
        moved: list[Any] = []
        for block in message.content:
            kind = _kind(block)
            if kind in _IMAGES and not rules.image_detail and isinstance(block, dict) and image_detail(block):
                block = without_detail(block)  # counted as sent
                details += 1
            if kind is None or (takes and kind not in nowhere):
                content.append(block)
            elif kind in nowhere:
                label = _label(kind)
                content.append({"type": "text", "text": f"[{label} removed: the {output} API takes no {label}]"})
                article = "an" if label[0] in "aeiou" else "a"
                placed.warnings.append(f"{_where(message, index)}: {article} {label} part has no place in the "
                                       f"{output} API; replaced by a note")
            else:
                content.append({"type": "text", "text": f"[{_label(kind)} moved to the next user message]"})
                moved.append(block)
        if content == message.content:
            continue
        copy = message.model_copy(update={"content": content})
        out[index] = copy
        placed.replaced.append((message, copy))
        changed = True
        if moved:
            sources += 1
            end = _unit_end(messages, index)  # a user message takes media: only other roles move theirs
            note = {"type": "text", "text": f"[{plural(len(moved), 'part')} from {_where(message, index)}]"}
            inserts.setdefault(end, []).extend([note, *moved])
            if isinstance(message, ToolMessage):
                calls.setdefault(end, []).append(message.tool_call_id)
    if not changed:
        return placed
    result: list[BaseMessage] = []
    for index, message in enumerate(out):
        if index in inserts:
            result.append(_moved(inserts.pop(index), calls.get(index, [])))
            placed.added.append(result[-1])
        result.append(message)
    for end, parts in inserts.items():  # the unit ends the conversation
        result.append(_moved(parts, calls.get(end, [])))
        placed.added.append(result[-1])
    placed.messages = result
    if placed.added:
        placed.notes.append(f"moved media out of {plural(sources, 'message')} into "
                            f"{plural(len(placed.added), 'user message')} right after them (the {output} API takes "
                            "it there)")
    if details:
        placed.notes.append(f"dropped the detail of {plural(details, 'image')} (the {output} API takes none: "
                            "counted at the size sent)")
    if placed.warnings:
        placed.notes.append(f"replaced {plural(len(placed.warnings), 'part')} the {output} API takes nowhere by a "
                            "note")
    return placed
