"""Stamps: what a message object holds, recorded so that one later comparison tells whether it still holds it.

A stamp is the object's class and field values with every list and dict copied and every string shared (by
reference, never copied). Comparing it with the object's fields is one comparison in C, where a string that is the
same object is equal without being read: a reassigned field, a nested value changed in place, or a container that
grew or shrank shows as a difference. Numbers are equal only to one of their own type (``1``, ``1.0`` and ``True``
are equal in Python, but count and convert differently). Objects holding anything but JSON-like values (str,
numbers, None, lists and dicts) get no stamp: a change inside an arbitrary object would not show.

Works for any pydantic model: ctxwin's messages (the count cache) and LangChain's (``forms``).
"""

from __future__ import annotations

from typing import Any

_ATOMS = frozenset({str, int, float, bool, type(None)})
_MAX_DEPTH = 200  # deeper than any message passes validation (MAX_NESTING_DEPTH); deeper ones get no stamp


class _Exact:
    """A number or bool in a stamp: equal only to a value of the same type."""

    __slots__ = ("value",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, value: object) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return other.__class__ is self.value.__class__ and other == self.value


class _NotJSON(Exception):
    pass


def _skeleton(value: Any, depth: int) -> Any:
    kind = value.__class__
    if kind is str or value is None:
        return value
    if kind is dict:
        if depth > _MAX_DEPTH:
            raise _NotJSON
        return {k: _skeleton(v, depth + 1) for k, v in value.items()} if value else {}
    if kind is list:
        if depth > _MAX_DEPTH:
            raise _NotJSON
        return [_skeleton(v, depth + 1) for v in value] if value else []
    if kind in _ATOMS:
        return _Exact(value)
    raise _NotJSON


def fields_of(obj: Any) -> tuple[Any, ...]:
    """What a stamp is compared with: the class, the field values, the pydantic extras."""
    return (obj.__class__, *obj.__dict__.values(), getattr(obj, "__pydantic_extra__", None))


def stamp_of(obj: Any) -> tuple[Any, ...] | None:
    """The object's stamp, or None when it holds something other than JSON-like values."""
    fields = fields_of(obj)
    try:
        return (fields[0], *(_skeleton(value, 1) for value in fields[1:]))
    except _NotJSON:
        return None


def unchanged(stamp: tuple[Any, ...], obj: Any) -> bool:
    """Whether the object still holds what ``stamp`` recorded."""
    try:
        return bool(stamp == fields_of(obj))
    except Exception:  # a value changed in place into something whose comparison raises, or nested too deep
        return False
