"""Merging of streamed chunk fields (content, dicts, lists of indexed items) as LangChain's ``merge_content``/
``merge_dicts``/``merge_lists`` do, but in one pass over all the values: folding pairwise is quadratic.
"""

from __future__ import annotations

import heapq
from typing import Any

from ctxwin._errors import InvalidInputError, InvalidTypeError

# String keys that identify an item rather than accumulate: equal repeats are not concatenated.
_STRING_IDENTITY_KEYS = frozenset({"id", "output_version", "model_provider"})
# Int keys where the later value replaces the earlier one instead of adding up.
_INT_REPLACE_KEYS = frozenset({"index", "created", "timestamp"})

Content = str | list[str | dict[str, Any]]


def merge_dicts(left: dict[str, Any], *others: dict[str, Any]) -> dict[str, Any]:
    """Merge dicts field by field: strings concatenate, dicts recurse, lists merge by ``index``, ints add."""
    values: dict[str, list[Any]] = {}
    for item in (left, *others):
        for key, value in item.items():
            bucket = values.get(key)
            if bucket is None:
                values[key] = [value]
            else:
                bucket.append(value)
    return {key: _merge_values(key, bucket) for key, bucket in values.items()}


def _merge_values(key: str, values: list[Any]) -> Any:
    """What ``merge_dicts`` gives for ``key`` holding ``values`` in turn: the first value that is not None, merged
    with the later ones that are not None."""
    present = [v for v in values if v is not None]
    if len(present) < 2:
        return present[0] if present else values[0]
    first = present[0]
    for value in present:
        if type(value) is not type(first):
            raise InvalidTypeError(
                f'additional_kwargs["{key}"] already exists in this message, but with a different type.'
            )
    if isinstance(first, str):
        return _merge_strings(key, present)
    if isinstance(first, dict):
        return merge_dicts(*present)
    if isinstance(first, list):
        return merge_lists(*present)
    current = first
    for value in present[1:]:
        if current == value:
            continue
        if isinstance(current, int) and not isinstance(current, bool):
            current = value if key in _INT_REPLACE_KEYS else current + value
        else:
            raise InvalidTypeError(
                f"Additional kwargs key {key} already exists in left dict and value has unsupported type "
                f"{type(current)}."
            )
    return current


def _merge_strings(key: str, strings: list[str]) -> str:
    """Strings concatenate, except that an ``lc_`` index stays as it is and an identity key is not repeated."""
    if key == "index":
        current, rest = strings[0], 1
        while rest < len(strings) and len(current) < 3:  # too short to start with "lc_" yet
            current, rest = current + strings[rest], rest + 1
        return current if current.startswith("lc_") else current + "".join(strings[rest:])
    if key not in _STRING_IDENTITY_KEYS:
        return "".join(strings)
    pieces, size = [strings[0]], len(strings[0])
    for value in strings[1:]:
        if len(value) == size:  # could equal what is merged so far: only then is it joined to compare
            pieces = ["".join(pieces)]
            if pieces[0] == value:
                continue
        pieces.append(value)
        size += len(value)
    return "".join(pieces)


def _key(value: Any) -> Any:
    """A dict key standing for ``value``; unhashable values by their type and repr."""
    try:
        hash(value)
    except TypeError:
        return ("unhashable", type(value).__name__, repr(value))
    return value


def _is_empty_id(value: Any) -> bool:
    return value is None or value == ""


class _ListMerge:
    """A list being merged: its items, the pieces each dict item is still to be merged with, and a lookup of the
    dict items by their current ``index`` and ``id`` (what the pieces merged so far made of them).

    The lookup keeps, per index, heaps of positions: all of them, those without an id, and those per id. An entry
    is current while its position's version is; a position whose index or id changes is pushed again under a new
    version, so stale entries are dropped when they reach the top.
    """

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.text_tail: list[str] = []  # strings still to be added to a trailing string item
        self._pending: dict[int, list[dict[str, Any]]] = {}
        self._state: dict[int, tuple[Any, Any, int]] = {}  # position -> (index, id, version)
        self._slots: dict[Any, tuple[list[tuple[int, int]], list[tuple[int, int]], dict[Any, Any]]] = {}
        for position, item in enumerate(items):
            if isinstance(item, dict):
                self._register(position, item.get("index"), item.get("id"), 0)

    def _register(self, position: int, index: Any, item_id: Any, version: int) -> None:
        self._state[position] = (index, item_id, version)
        every, without_id, by_id = self._slots.setdefault(_key(index), ([], [], {}))
        entry = (position, version)
        heapq.heappush(every, entry)
        if _is_empty_id(item_id):
            heapq.heappush(without_id, entry)
        else:
            heapq.heappush(by_id.setdefault(_key(item_id), []), entry)

    def _first(self, heap: list[tuple[int, int]] | None) -> int | None:
        while heap:
            position, version = heap[0]
            if self._state[position][2] == version:
                return position
            heapq.heappop(heap)
        return None

    def _find(self, index: Any, item_id: Any) -> int | None:
        """The first dict item whose index equals ``index`` and whose id is ``item_id``, or either is empty."""
        slots = self._slots.get(_key(index))
        if slots is None:
            return None
        every, without_id, by_id = slots
        if _is_empty_id(item_id):
            found = self._first(every)
        else:
            candidates = [self._first(without_id), self._first(by_id.get(_key(item_id)))]
            found = min((p for p in candidates if p is not None), default=None)
        if found is None or self._state[found][0] != index:  # equal keys, unequal values (NaN)
            return None
        return found

    def extend(self, other: list[Any]) -> None:
        """Add ``other``'s items: a dict with an ``index`` joins the first matching item, anything else is
        appended."""
        for item in other:
            if isinstance(item, dict) and "index" in item:
                index, item_id = item["index"], item.get("id")
                position = self._find(index, item_id)
                if position is not None:
                    # The first piece fixed the item's type; later pieces only add to its fields.
                    self._pending.setdefault(position, []).append({k: v for k, v in item.items() if k != "type"})
                    if _is_empty_id(item_id) and not isinstance(index, (str, list, dict)):
                        continue  # the usual streamed piece: the item keeps its index and id
                    old_index, old_id, version = self._state[position]
                    try:
                        new_index = _merge_values("index", [old_index, index])
                        new_id = _merge_values("id", [old_id, item_id])
                    except TypeError:  # raised again when the pieces are merged
                        continue
                    if not (new_index is old_index and new_id is old_id):
                        self._register(position, new_index, new_id, version + 1)
                    continue
            self._append(item)

    def add_text(self, text: str) -> None:
        """A string added to list content: it joins a trailing string item, else (if not empty) is appended."""
        if self.items and isinstance(self.items[-1], str):
            self.text_tail.append(text)
        elif text:
            self._append(text)

    def _append(self, item: Any) -> None:
        self._flush_text()
        self.items.append(item)
        if isinstance(item, dict):
            self._register(len(self.items) - 1, item.get("index"), item.get("id"), 0)

    def _flush_text(self) -> None:
        if self.text_tail:
            self.items[-1] += "".join(self.text_tail)
            self.text_tail = []

    def result(self) -> list[Any]:
        self._flush_text()
        for position, pieces in self._pending.items():
            self.items[position] = merge_dicts(self.items[position], *pieces)
        self._pending = {}
        return self.items


def merge_lists(left: list[Any] | None, *others: list[Any] | None) -> list[Any] | None:
    """Concatenate lists, merging dict items that share an ``index`` (streamed tool-call and block pieces)."""
    merging = _ListMerge(list(left)) if left is not None else None
    for other in others:
        if other is None:
            continue
        if merging is None:
            merging = _ListMerge(list(other))
        else:
            merging.extend(other)
    return merging.result() if merging is not None else None


def merge_content(first: Content, *contents: Content) -> Content:
    """Merge message contents: strings concatenate, lists merge, a string joins the list's trailing string."""
    rest = 0
    if isinstance(first, str):
        while rest < len(contents) and isinstance(contents[rest], str):
            rest += 1
        text = first + "".join(contents[:rest])  # type: ignore[arg-type]  # all strings, checked above
        if rest == len(contents):
            return text
        # LangChain keeps an empty leading string here; so do we, so merged chunks compare equal.
        merging = _ListMerge([text, *contents[rest]])
        rest += 1
    else:
        merging = _ListMerge(list(first))
    for content in contents[rest:]:
        if isinstance(content, list):
            merging.extend(content)
        else:
            # LangChain drops a string added to an empty list; that loses text, so ctxwin appends it.
            merging.add_text(content)
    return merging.result()


def merge_obj(left: Any, *rights: Any) -> Any:
    """Merge values of the same type (a tool chunk's ``artifact``); ``None`` yields to the others."""
    values = [v for v in (left, *rights) if v is not None]
    if len(values) < 2:
        return values[0] if values else None
    first = values[0]
    combined = isinstance(first, (str, dict, list))
    for right in values[1:]:
        if type(right) is not type(first):
            raise InvalidTypeError(
                f"left and right are of different types. Left type: {type(first)}. Right type: {type(right)}."
            )
        if not combined and right != first:
            left = first
            raise InvalidInputError(
                f"Unable to merge {left=} and {right=}. Both must be of type str, dict, or list, or equal."
            )
    if isinstance(first, str):
        return "".join(values)
    if isinstance(first, dict):
        return merge_dicts(*values)
    if isinstance(first, list):
        return merge_lists(*values)
    return first
