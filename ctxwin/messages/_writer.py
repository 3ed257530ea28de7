"""The one change detector: a message object written as bytes, exact about types all the way down, so that writing it
again later tells whether it still holds what it held. A C writer where built, else ``marshal`` (docs/architecture.md).
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable, Sequence
from itertools import compress
from typing import Any, NamedTuple

# marshal format 2: no back-references, whose flags follow reference counts and would make equal content differ.
_dumps = marshal.dumps
_LIST_HEADER = len(_dumps([], 2))  # a list's type code and length, before its items


class Writer(NamedTuple):
    """How messages are written: ``write`` one message (ValueError: it cannot be), ``keys`` of many (ValueError if
    any cannot be), ``all_noted`` (whether each message is written as its note; False where one cannot be written or
    its note is not bytes), ``recalled`` (for each message and its note, None or ``(note, value)``: the value where
    the message is written as the note, else None). Equal bytes mean the same class and equal values of the same
    types."""

    write: Callable[[Any], bytes]
    keys: Callable[[Sequence[Any]], list[bytes]]
    all_noted: Callable[[Sequence[Any], Sequence[object]], bool]
    recalled: Callable[[Sequence[Any], Sequence[tuple[object, Any] | None]], list[Any]]


def _py_write(m: Any) -> bytes:
    return _dumps((id(type(m)), *m.__dict__.values(), m.__pydantic_extra__, m.__pydantic_private__), 2)


def _py_keys(messages: Sequence[Any]) -> list[bytes]:
    return [_dumps((id(type(m)), *m.__dict__.values(), m.__pydantic_extra__, m.__pydantic_private__), 2)  # inline
            for m in messages]


def _py_all_noted(messages: Sequence[Any], notes: Sequence[object]) -> bool:
    """Checked in one marshal call for all the messages (saving the calls' own cost): a value's serialization is
    self-delimiting, so the list's equals the list header followed by the notes joined only if each message's
    equals its own. A list one level deeper than its messages can exceed marshal's depth limit: then each message
    is written on its own."""
    try:
        noted = b"".join(notes)  # type: ignore[arg-type]
    except TypeError:  # a note that is not bytes (the count cache's key made of reprs): never equal
        return False
    try:
        written = _dumps([(id(type(m)), *m.__dict__.values(), m.__pydantic_extra__, m.__pydantic_private__)
                          for m in messages], 2)
    except ValueError:
        try:
            return b"".join(map(_py_write, messages)) == noted
        except ValueError:  # a message that cannot be written
            return False
    return len(written) == _LIST_HEADER + len(noted) and written.endswith(noted)


def _py_recalled(messages: Sequence[Any], notes: Sequence[tuple[object, Any] | None]) -> list[Any]:
    """The messages with a note checked in one ``all_noted`` call; only where that differs (something changed),
    one by one."""
    noted = list(compress(messages, notes))
    held: list[tuple[object, Any]] = list(filter(None, notes))
    if _py_all_noted(noted, [note for note, _ in held]):
        return [None if note is None else note[1] for note in notes]
    return [None if note is None or not _py_all_noted([m], [note[0]]) else note[1]
            for m, note in zip(messages, notes, strict=True)]


PY_WRITER = Writer(_py_write, _py_keys, _py_all_noted, _py_recalled)


def _c_writer() -> Writer | None:
    """The C writer where it is built and not turned off with ``CTXWIN_NO_ACCELERATOR=1``."""
    if os.environ.get("CTXWIN_NO_ACCELERATOR"):
        return None
    try:
        from ctxwin.messages import _written as written
    except ImportError:  # not built: no C compiler when the package was installed
        return None
    return Writer(written.write, written.keys, written.all_noted, written.recalled)


C_WRITER = _c_writer()
WRITER = C_WRITER or PY_WRITER  # the writer of this process


def note_of(obj: Any, writer: Writer = WRITER) -> bytes | None:
    """``obj`` written, or None when it holds a value no writer writes or is no pydantic model (a duck-typed
    LangChain message): a change in it could not be seen."""
    try:
        return writer.write(obj)
    except (ValueError, AttributeError, TypeError):
        return None


def notes_of(objects: Sequence[Any], writer: Writer = WRITER) -> list[bytes | None]:
    """``note_of`` each object, in one writer call where every one can be written."""
    try:
        return list(writer.keys(objects))
    except (ValueError, AttributeError, TypeError):
        return [note_of(obj, writer) for obj in objects]
