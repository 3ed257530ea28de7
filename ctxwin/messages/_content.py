"""Standard content blocks (LangChain 1.x's shapes) and the translation of provider block formats into them.
Unlike LangChain, factories invent no ``lc_`` ids, so converting the same conversation twice yields equal messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

from typing_extensions import NotRequired, TypedDict

from ctxwin._errors import InvalidInputError
from ctxwin.messages._data_url import parse_data_url
from ctxwin.messages._tool_calls import InvalidToolCall, ToolCall, invalid_tool_call, tool_call


class TextContentBlock(TypedDict):
    type: Literal["text"]
    text: str
    id: NotRequired[str]
    annotations: NotRequired[list[dict[str, Any]]]
    index: NotRequired[int | str]
    extras: NotRequired[dict[str, Any]]


class _DataBlock(TypedDict):
    id: NotRequired[str]
    url: NotRequired[str]
    base64: NotRequired[str]
    file_id: NotRequired[str]
    mime_type: NotRequired[str]
    index: NotRequired[int | str]
    extras: NotRequired[dict[str, Any]]


class ImageContentBlock(_DataBlock):
    type: Literal["image"]


class AudioContentBlock(_DataBlock):
    type: Literal["audio"]


class VideoContentBlock(_DataBlock):
    type: Literal["video"]


class FileContentBlock(_DataBlock):
    type: Literal["file"]


class PlainTextContentBlock(_DataBlock):
    type: Literal["text-plain"]
    text: NotRequired[str]
    title: NotRequired[str]
    context: NotRequired[str]


class ReasoningContentBlock(TypedDict):
    type: Literal["reasoning"]
    reasoning: NotRequired[str]
    id: NotRequired[str]
    index: NotRequired[int | str]
    extras: NotRequired[dict[str, Any]]


class NonStandardContentBlock(TypedDict):
    """A provider block with no standard equivalent, kept whole under ``value``."""

    type: Literal["non_standard"]
    value: dict[str, Any]
    id: NotRequired[str]
    index: NotRequired[int | str]


DataContentBlock = (
    ImageContentBlock | AudioContentBlock | VideoContentBlock | FileContentBlock | PlainTextContentBlock
)
ContentBlock = (
    TextContentBlock
    | DataContentBlock
    | ReasoningContentBlock
    | NonStandardContentBlock
    | ToolCall
    | InvalidToolCall
)

DATA_BLOCK_TYPES = frozenset({"image", "audio", "video", "file", "text-plain"})
STANDARD_BLOCK_TYPES = DATA_BLOCK_TYPES | {
    "text",
    "reasoning",
    "non_standard",
    "tool_call",
    "invalid_tool_call",
}


def _optional(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def create_text_block(
    text: str, *, id: str | None = None, annotations: list[dict[str, Any]] | None = None, **extras: Any
) -> TextContentBlock:
    block = cast(TextContentBlock, {"type": "text", "text": text, **_optional(id=id, annotations=annotations)})
    if extras := _optional(**extras):
        block["extras"] = extras
    return block


def _data_block(
    kind: str,
    *,
    url: str | None,
    base64: str | None,
    file_id: str | None,
    mime_type: str | None,
    id: str | None,
    extras: dict[str, Any],
) -> dict[str, Any]:
    if not any([url, base64, file_id]):
        raise InvalidInputError("Must provide one of: url, base64, or file_id")
    if base64 is not None and mime_type is None:
        raise InvalidInputError(f"mime_type is required for a base64 {kind} block")
    block = {"type": kind, **_optional(id=id, url=url, base64=base64, file_id=file_id, mime_type=mime_type)}
    if extras := _optional(**extras):
        block["extras"] = extras
    return block


def create_image_block(
    *,
    url: str | None = None,
    base64: str | None = None,
    file_id: str | None = None,
    mime_type: str | None = None,
    id: str | None = None,
    **extras: Any,
) -> ImageContentBlock:
    return _data_block(
        "image", url=url, base64=base64, file_id=file_id, mime_type=mime_type, id=id, extras=extras
    )  # type: ignore[return-value]


def create_audio_block(
    *,
    url: str | None = None,
    base64: str | None = None,
    file_id: str | None = None,
    mime_type: str | None = None,
    id: str | None = None,
    **extras: Any,
) -> AudioContentBlock:
    return _data_block(
        "audio", url=url, base64=base64, file_id=file_id, mime_type=mime_type, id=id, extras=extras
    )  # type: ignore[return-value]


def create_video_block(
    *,
    url: str | None = None,
    base64: str | None = None,
    file_id: str | None = None,
    mime_type: str | None = None,
    id: str | None = None,
    **extras: Any,
) -> VideoContentBlock:
    return _data_block(
        "video", url=url, base64=base64, file_id=file_id, mime_type=mime_type, id=id, extras=extras
    )  # type: ignore[return-value]


def create_file_block(
    *,
    url: str | None = None,
    base64: str | None = None,
    file_id: str | None = None,
    mime_type: str | None = None,
    id: str | None = None,
    **extras: Any,
) -> FileContentBlock:
    return _data_block(
        "file", url=url, base64=base64, file_id=file_id, mime_type=mime_type, id=id, extras=extras
    )  # type: ignore[return-value]


def create_reasoning_block(
    reasoning: str | None = None, *, id: str | None = None, **extras: Any
) -> ReasoningContentBlock:
    block = cast(ReasoningContentBlock, {"type": "reasoning", **_optional(reasoning=reasoning, id=id)})
    if extras := _optional(**extras):
        block["extras"] = extras
    return block


def create_non_standard_block(value: dict[str, Any], *, id: str | None = None) -> NonStandardContentBlock:
    return cast(NonStandardContentBlock, {"type": "non_standard", "value": value, **_optional(id=id)})


def is_data_content_block(block: object) -> bool:
    """True for a standard multimodal block (image, audio, video, file, text-plain) with a data source."""
    return (
        isinstance(block, dict)
        and block.get("type") in DATA_BLOCK_TYPES
        and any(key in block for key in ("url", "base64", "file_id", "text"))
    )


def _from_data_url(url: str) -> tuple[str | None, str | None]:
    """A base64 ``data:`` URL (``ctxwin.messages._data_url``) -> (mime, data); anything else -> (None, None)."""
    inline = parse_data_url(url)
    return (None, None) if inline is None else (inline.media_type or None, inline.data)


def _source_block(kind: str, url: str | None = None, **rest: Any) -> dict[str, Any]:
    mime, data = _from_data_url(url) if url else (None, None)
    if data is not None:
        return {"type": kind, "base64": data, **_optional(mime_type=mime), **rest}
    return {"type": kind, **_optional(url=url), **rest}


def _extras(block: dict[str, Any], *known: str) -> dict[str, Any]:
    extra = {k: v for k, v in block.items() if k not in known and k != "type"}
    return {"extras": extra} if extra else {}


def _translate(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind in STANDARD_BLOCK_TYPES and not isinstance(block.get("source"), dict):
        return block
    if kind == "image_url":  # OpenAI chat completions
        image: Any = block.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        detail = image.get("detail") if isinstance(image, dict) else None
        return _source_block(
            "image",
            url if isinstance(url, str) else None,
            **({"extras": {"detail": detail}} if detail else {}),
        )
    if kind == "input_audio":  # OpenAI chat completions
        audio = block.get("input_audio") or {}
        fmt = audio.get("format")
        return {
            "type": "audio",
            **_optional(base64=audio.get("data"), mime_type=f"audio/{fmt}" if fmt else None),
        }
    if kind in ("file", "input_file"):
        file: dict[str, Any] = block["file"] if isinstance(block.get("file"), dict) else block
        mime, data = _from_data_url(file.get("file_data") or "")
        out = {"type": "file", **_optional(file_id=file.get("file_id"), base64=data, mime_type=mime)}
        if file.get("filename"):
            out["extras"] = {"filename": file["filename"]}
        return out
    if kind in ("image", "document") and isinstance(block.get("source"), dict):  # Anthropic
        source = block["source"]
        target = "image" if kind == "image" else "file"
        if source.get("type") == "base64":
            return {
                "type": target,
                **_optional(base64=source.get("data"), mime_type=source.get("media_type")),
            }
        if source.get("type") == "url":
            return {"type": target, **_optional(url=source.get("url"))}
        if source.get("type") == "file":
            return {"type": target, **_optional(file_id=source.get("file_id"))}
        if source.get("type") == "text":
            return {
                "type": "text-plain",
                **_optional(text=source.get("data"), mime_type=source.get("media_type")),
            }
    if kind == "thinking":  # Anthropic extended thinking
        return {
            "type": "reasoning",
            **_optional(reasoning=block.get("thinking")),
            **_extras(block, "thinking"),
        }
    if kind == "reasoning" and "summary" in block:  # OpenAI Responses
        summary = block.get("summary") or []
        text = "".join(s.get("text", "") for s in summary if isinstance(s, dict))
        return {"type": "reasoning", "reasoning": text, **_optional(id=block.get("id"))}
    if kind == "tool_use" and isinstance(block.get("input"), dict):  # Anthropic
        return dict(tool_call(name=block.get("name") or "", args=block["input"], id=block.get("id")))
    return {"type": "non_standard", "value": block}


def image_detail(block: dict[str, Any]) -> str | None:
    """The ``detail`` an image block asks for (OpenAI's ``low``/``high``/``auto``): in the block, in its
    ``image_url`` (chat completions) or in its ``extras`` (LangChain); None when it names none. Counters charge it
    and the OpenAI writers send it, by this one rule."""
    detail = block.get("detail")
    image_url = block.get("image_url")
    if detail is None and isinstance(image_url, dict):
        detail = image_url.get("detail")
    extras = block.get("extras")
    if detail is None and isinstance(extras, dict):
        detail = extras.get("detail")
    return None if detail is None else str(detail)


def without_detail(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` without the ``detail`` it asks for (a copy; the block itself when it names none), for an API that
    takes none (Anthropic), so that it counts as sent."""
    if image_detail(block) is None:
        return block
    out = {key: value for key, value in block.items() if key != "detail"}
    for key in ("image_url", "extras"):
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k != "detail"}
    return out


def block_text(block: dict[str, Any]) -> str | None:
    """The text a model reads in a content block that carries text (a text part, Responses reasoning summaries,
    Anthropic thinking, a refusal), so counters count it as text; None for other blocks (images, files, ...)."""
    kind = block.get("type")
    key = _TEXT_KEYS.get(kind) if isinstance(kind, str) else None
    if key is not None and isinstance(block.get(key), str):
        return block[key]  # type: ignore[no-any-return]
    if kind == "reasoning" and isinstance(block.get("summary"), list):  # a Responses reasoning item
        return "".join(s["text"] for s in block["summary"] if isinstance(s, dict) and isinstance(s.get("text"), str))
    return None


_TEXT_KEYS = {"text": "text", "reasoning": "reasoning", "thinking": "thinking", "refusal": "refusal"}


def to_content_blocks(
    content: str | Sequence[str | dict[str, Any]],
    tool_calls: Sequence[ToolCall] = (),
    invalid_tool_calls: Sequence[InvalidToolCall] = (),
) -> list[ContentBlock]:
    """Translate message content (and an AIMessage's tool calls) into standard content blocks."""
    if isinstance(content, str):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
    else:
        blocks = [
            {"type": "text", "text": item} if isinstance(item, str) else _translate(item)
            for item in content
            if not (isinstance(item, str) and not item)
        ]
    present = {b.get("id") for b in blocks if b.get("type") in ("tool_call", "invalid_tool_call")}
    blocks.extend(
        dict(call) for call in tool_calls if call.get("id") is None or call.get("id") not in present
    )
    blocks.extend(
        dict(invalid_tool_call(name=c.get("name"), args=c.get("args"), id=c.get("id"), error=c.get("error")))
        for c in invalid_tool_calls
        if c.get("id") is None or c.get("id") not in present
    )
    return blocks  # type: ignore[return-value]
