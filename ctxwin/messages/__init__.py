"""The message model: LangChain-compatible message classes, content blocks, tool calls and conversions."""

from ctxwin.messages._ai import (
    AIMessage,
    AIMessageChunk,
    InputTokenDetails,
    OutputTokenDetails,
    UsageMetadata,
    add_usage,
    subtract_usage,
)
from ctxwin.messages._base import BaseMessage, BaseMessageChunk, TextAccessor, get_msg_title_repr, merge_ids
from ctxwin.messages._buffer import get_buffer_string
from ctxwin.messages._chat import ChatMessage, ChatMessageChunk
from ctxwin.messages._content import (
    AudioContentBlock,
    ContentBlock,
    DataContentBlock,
    FileContentBlock,
    ImageContentBlock,
    NonStandardContentBlock,
    PlainTextContentBlock,
    ReasoningContentBlock,
    TextContentBlock,
    VideoContentBlock,
    create_audio_block,
    create_file_block,
    create_image_block,
    create_non_standard_block,
    create_reasoning_block,
    create_text_block,
    create_video_block,
    is_data_content_block,
    to_content_blocks,
)
from ctxwin.messages._convert import MessageLike, convert_to_messages, message_chunk_to_message
from ctxwin.messages._human import HumanMessage, HumanMessageChunk
from ctxwin.messages._merge import merge_content, merge_dicts, merge_lists
from ctxwin.messages._openai_cache import mark_prompt_cache
from ctxwin.messages._openai_format import convert_to_openai_messages, openai_role
from ctxwin.messages._partial_json import parse_partial_json
from ctxwin.messages._remove import REMOVE_ALL_MESSAGES, RemoveMessage
from ctxwin.messages._request_forms.anthropic import mark_cache_breakpoints
from ctxwin.messages._serialize import message_from_dict, message_to_dict, messages_from_dict, messages_to_dict
from ctxwin.messages._system import SystemMessage, SystemMessageChunk
from ctxwin.messages._tool import ToolMessage, ToolMessageChunk
from ctxwin.messages._tool_calls import (
    InvalidToolCall,
    ToolCall,
    ToolCallChunk,
    default_tool_chunk_parser,
    default_tool_parser,
    invalid_tool_call,
    tool_call,
    tool_call_chunk,
)

AnyMessage = AIMessage | HumanMessage | ChatMessage | SystemMessage | ToolMessage | RemoveMessage

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "AIMessage",
    "AIMessageChunk",
    "AnyMessage",
    "AudioContentBlock",
    "BaseMessage",
    "BaseMessageChunk",
    "ChatMessage",
    "ChatMessageChunk",
    "ContentBlock",
    "DataContentBlock",
    "FileContentBlock",
    "HumanMessage",
    "HumanMessageChunk",
    "ImageContentBlock",
    "InputTokenDetails",
    "InvalidToolCall",
    "MessageLike",
    "NonStandardContentBlock",
    "OutputTokenDetails",
    "PlainTextContentBlock",
    "ReasoningContentBlock",
    "RemoveMessage",
    "SystemMessage",
    "SystemMessageChunk",
    "TextAccessor",
    "TextContentBlock",
    "ToolCall",
    "ToolCallChunk",
    "ToolMessage",
    "ToolMessageChunk",
    "UsageMetadata",
    "VideoContentBlock",
    "add_usage",
    "convert_to_messages",
    "convert_to_openai_messages",
    "create_audio_block",
    "create_file_block",
    "create_image_block",
    "create_non_standard_block",
    "create_reasoning_block",
    "create_text_block",
    "create_video_block",
    "default_tool_chunk_parser",
    "default_tool_parser",
    "get_buffer_string",
    "get_msg_title_repr",
    "invalid_tool_call",
    "is_data_content_block",
    "mark_cache_breakpoints",
    "mark_prompt_cache",
    "merge_content",
    "merge_dicts",
    "merge_ids",
    "merge_lists",
    "message_chunk_to_message",
    "message_from_dict",
    "message_to_dict",
    "messages_from_dict",
    "messages_to_dict",
    "openai_role",
    "parse_partial_json",
    "subtract_usage",
    "to_content_blocks",
    "tool_call",
    "tool_call_chunk",
]
