"""Merging of streamed chunk fields: content, dicts and lists of indexed items.

These follow LangChain's ``merge_content``/``merge_dicts``/``merge_lists`` so that chunks streamed by a provider
add up to the same message in both libraries. Inputs are never mutated.
"""

from __future__ import annotations

from typing import Any

# String keys that identify an item rather than accumulate: equal repeats are not concatenated.
_STRING_IDENTITY_KEYS = frozenset({"id", "output_version", "model_provider"})
# Int keys where the later value replaces the earlier one instead of adding up.
_INT_REPLACE_KEYS = frozenset({"index", "created", "timestamp"})

Content = str | list[str | dict[str, Any]]


def merge_dicts(left: dict[str, Any], *others: dict[str, Any]) -> dict[str, Any]:
    """Merge dicts field by field: strings concatenate, dicts recurse, lists merge by ``index``, ints add."""
    merged = dict(left)
    for right in others:
        value: Any
        for key, value in right.items():
            current: Any = merged.get(key)
            if key not in merged or (value is not None and current is None):
                merged[key] = value
            elif value is None:
                continue
            elif type(current) is not type(value):
                raise TypeError(
                    f'additional_kwargs["{key}"] already exists in this message, but with a different type.'
                )
            elif isinstance(current, str):
                if (key == "index" and current.startswith("lc_")) or (
                    key in _STRING_IDENTITY_KEYS and current == value
                ):
                    continue
                merged[key] = current + value
            elif isinstance(current, dict):
                merged[key] = merge_dicts(current, value)
            elif isinstance(current, list):
                merged[key] = merge_lists(current, value)
            elif current == value:
                continue
            elif isinstance(current, int) and not isinstance(current, bool):
                merged[key] = value if key in _INT_REPLACE_KEYS else current + value
            else:
                raise TypeError(
                    f"Additional kwargs key {key} already exists in left dict and value has unsupported type "
                    f"{type(current)}."
                )
    return merged


def _same_item(left: Any, right: dict[str, Any]) -> bool:
    return (
        isinstance(left, dict)
        and left.get("index") == right["index"]
        and (
            left.get("id") in (None, "") or right.get("id") in (None, "") or left.get("id") == right.get("id")
        )
    )


def merge_lists(left: list[Any] | None, *others: list[Any] | None) -> list[Any] | None:
    """Concatenate lists, merging dict items that share an ``index`` (streamed tool-call and block pieces)."""
    merged = list(left) if left is not None else None
    for other in others:
        if other is None:
            continue
        if merged is None:
            merged = list(other)
            continue
        for item in other:
            if isinstance(item, dict) and "index" in item:
                position = next((i for i, existing in enumerate(merged) if _same_item(existing, item)), None)
                if position is not None:
                    # The first piece fixed the item's type; later pieces only add to its fields.
                    rest = {k: v for k, v in item.items() if k != "type"}
                    merged[position] = merge_dicts(merged[position], rest)
                    continue
            merged.append(item)
    return merged


def merge_content(first: Content, *contents: Content) -> Content:
    """Merge message contents: strings concatenate, lists merge, a string joins the list's trailing string."""
    merged: Content = first if isinstance(first, str) else list(first)
    for content in contents:
        if isinstance(merged, str):
            # LangChain keeps an empty leading string here; so do we, so merged chunks compare equal.
            merged = merged + content if isinstance(content, str) else [merged, *content]
        elif isinstance(content, list):
            merged = merge_lists(merged, content) or []
        elif merged and isinstance(merged[-1], str):
            merged = [*merged[:-1], merged[-1] + content]
        elif content:
            # LangChain drops a string added to an empty list; that loses text, so ctxwin appends it.
            merged = [*merged, content]
    return merged


def merge_obj(left: Any, right: Any) -> Any:
    """Merge two values of the same type (a tool chunk's ``artifact``); ``None`` yields to the other side."""
    if left is None or right is None:
        return left if left is not None else right
    if type(left) is not type(right):
        raise TypeError(
            f"left and right are of different types. Left type: {type(left)}. Right type: {type(right)}."
        )
    if isinstance(left, str):
        return left + right
    if isinstance(left, dict):
        return merge_dicts(left, right)
    if isinstance(left, list):
        return merge_lists(left, right)
    if left == right:
        return left
    raise ValueError(
        f"Unable to merge {left=} and {right=}. Both must be of type str, dict, or list, or equal."
    )
