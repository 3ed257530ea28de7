"""BaseMessage and BaseMessageChunk: the pydantic models every message type derives from, with
``langchain_core.messages``' field names, defaults and positional ``content`` so LangChain code keeps working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from typing_extensions import Self

from ctxwin._errors import InvalidTypeError
from ctxwin.messages._limits import check_nesting
from ctxwin.messages._merge import merge_content, merge_dicts

if TYPE_CHECKING:
    from ctxwin.messages._content import ContentBlock

Content = str | list[str | dict[str, Any]]

# Streaming frameworks give chunks provisional run ids; a provider's own id wins when chunks are merged.
_PROVISIONAL_ID_PREFIXES = ("run-", "lc_run-")


class TextAccessor(str):
    """The message text; also callable, because LangChain 0.x exposed ``.text()`` as a method."""

    __slots__ = ()

    def __call__(self) -> str:
        return str(self)


def text_of(content: Content) -> str:
    """Concatenate the text of string content or of the string and ``text`` blocks of list content."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def get_msg_title_repr(title: str) -> str:
    """An 80-column ``=== Title ===`` banner, as LangChain prints it."""
    padded = f" {title} "
    side = "=" * ((80 - len(padded)) // 2)
    return f"{side}{padded}{side}{'=' if len(padded) % 2 else ''}"


class BaseMessage(BaseModel):
    """A chat message: content plus the metadata LangChain messages carry.

    Library functions never mutate a message; they return copies (``model_copy``).
    """

    model_config = ConfigDict(extra="allow")

    content: Content
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)
    response_metadata: dict[str, Any] = Field(default_factory=dict)
    type: str
    name: str | None = None
    id: str | None = None

    def __init__(
        self,
        content: Content = "",
        content_blocks: Sequence[ContentBlock] | None = None,
        **kwargs: Any,
    ) -> None:
        if content_blocks is not None:
            content = [dict(block) for block in content_blocks]
        super().__init__(content=content, **kwargs)
        # Values nested past MAX_NESTING_DEPTH are refused here (``model_validate`` comes through here too), so
        # nothing done to a message later (copies, cache keys, JSON, merging) can run out of stack.
        check_nesting(self.__dict__, self.__pydantic_extra__)

    def __eq__(self, other: object) -> bool:
        # Private attributes hold caches (such as tool-call text as received), not part of a message's value.
        if not isinstance(other, BaseModel):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and self.__pydantic_extra__ == other.__pydantic_extra__
        )

    @field_validator("id", mode="before")
    @classmethod
    def _id_to_str(cls, value: Any) -> Any:
        return str(value) if value is not None else None

    @property
    def text(self) -> TextAccessor:
        """The text of the message: string content, or the text blocks of list content joined."""
        return TextAccessor(text_of(self.content))

    @property
    def content_blocks(self) -> list[ContentBlock]:
        """The content as standard content blocks, translated from OpenAI and Anthropic formats."""
        from ctxwin.messages._content import to_content_blocks

        return to_content_blocks(self.content)

    def pretty_repr(self, html: bool = False) -> str:
        """A readable rendering with a title banner; ``html`` is accepted for LangChain compatibility."""
        title = get_msg_title_repr(self.type.title() + " Message")
        if self.name is not None:
            title += f"\nName: {self.name}"
        return f"{title}\n\n{self.text if isinstance(self.content, str) else self.content}"

    def pretty_print(self) -> None:
        print(self.pretty_repr())


def merge_ids(*ids: str | None) -> str | None:
    """The first provider id among merged chunks, else the first id of any kind."""
    present = [i for i in ids if i]
    real = [i for i in present if not i.startswith(_PROVISIONAL_ID_PREFIXES)]
    return real[0] if real else (present[0] if present else None)


class BaseMessageChunk(BaseMessage):
    """A streamed piece of a message; ``chunk + chunk`` (or ``chunk + [chunks]``) merges them."""

    def __add__(self, other: Any) -> Self:
        if isinstance(other, BaseMessageChunk):
            others: list[BaseMessageChunk] = [other]
        elif isinstance(other, list) and all(isinstance(o, BaseMessageChunk) for o in other):
            others = other
        else:
            raise InvalidTypeError(
                f'unsupported operand type(s) for +: "{type(self).__name__}" and "{type(other).__name__}"'
            )
        return type(self)(**self._merged_fields(others))

    def _merged_fields(self, others: Sequence[BaseMessageChunk]) -> dict[str, Any]:
        """The constructor arguments of the merged chunk; subclasses add their own fields."""
        return {
            "content": merge_content(self.content, *(o.content for o in others)),
            "additional_kwargs": merge_dicts(self.additional_kwargs, *(o.additional_kwargs for o in others)),
            "response_metadata": merge_dicts(self.response_metadata, *(o.response_metadata for o in others)),
            "id": merge_ids(self.id, *(o.id for o in others)),
            "name": next((m.name for m in (self, *others) if m.name is not None), None),
        }
