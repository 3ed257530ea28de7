"""The one nesting limit messages must respect, and linear, recursion-free checks against it: deeper messages would make
``repr``, ``==``, ``json`` and pydantic raise ``RecursionError`` at a depth that depends on the caller's stack.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ctxwin._errors import InvalidInputError

MAX_NESTING_DEPTH = 100
MAX_TOOL_ARGS_DEPTH = MAX_NESTING_DEPTH - 2

_CONTAINERS = (dict, list, tuple, set, frozenset)
# Outside strings, what changes the nesting: brackets, and a quote that opens a string. Inside, a string ends at
# an unescaped quote.
_JSON_STRUCTURE = re.compile(r'[\[\]{}"]')
_JSON_STRING_END = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


class NestingError(InvalidInputError):
    """A value nested deeper than ``MAX_NESTING_DEPTH`` levels."""


def nesting_depth(values: Iterable[Any], limit: int = MAX_NESTING_DEPTH) -> int:
    """How many levels of containers (dicts, lists, tuples, sets) the values hold: 0 when none is one.

    Breadth first and without recursion; the walk stops one level past ``limit``, and a level's containers are
    visited once each, so shared and even self-containing values cost at most ``limit`` passes over them.
    """
    level = [v for v in values if isinstance(v, _CONTAINERS)]
    if not level:
        return 0
    depth = 1
    level = [c for c in level if c]  # empty containers hold nothing deeper
    while level and depth <= limit:
        below: list[Any] = []
        for container in level:
            items = container.values() if isinstance(container, dict) else container
            below += [v for v in items if isinstance(v, _CONTAINERS)]
        if not below:
            break
        depth += 1
        level = list({id(c): c for c in below if c}.values()) if len(below) > 1 else [c for c in below if c]
    return depth


def check_nesting(fields: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
    """Raise NestingError naming the first of a message's fields (declared, then ``extra``) nested deeper than
    ``MAX_NESTING_DEPTH`` levels."""
    limit = MAX_NESTING_DEPTH
    if nesting_depth(fields.values(), limit) <= limit and (not extra or nesting_depth(extra.values(), limit) <= limit):
        return
    every = {**fields, **(extra or {})}
    field = next(name for name, value in every.items() if nesting_depth((value,), limit) > limit)
    raise NestingError(f"nested deeper than {limit} levels (in {field!r})")


def json_too_deep(text: str, limit: int = MAX_NESTING_DEPTH) -> bool:
    """Whether JSON text nests brackets deeper than ``limit`` (strings skipped), in one pass without parsing.

    Malformed text is measured as far as its brackets go: what matters is that ``json.loads`` will not recurse
    deeper than this.
    """
    if text.count("[") + text.count("{") <= limit:  # the common case: two passes at C speed
        return False
    depth = 0
    position = 0
    search, string_end = _JSON_STRUCTURE.search, _JSON_STRING_END.match
    while (found := search(text, position)) is not None:
        char = found.group()
        position = found.end()
        if char == '"':
            end = string_end(text, position)
            if end is None:  # an unterminated string: no bracket follows
                return False
            position = end.end()
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False
