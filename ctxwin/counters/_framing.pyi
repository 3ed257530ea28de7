# BaseTokenCounter's message framing in C (ctxwin/counters/_framing.c); _base.py holds the Python one.
from collections.abc import Callable, Sequence
from typing import Any

def frame(
    messages: Sequence[Any], labels: dict[str, int], roles: dict[str, str], kinds: dict[type, int],
    per_message: int, per_name: int, dumps: Callable[[Any], str],
    texts_of: Callable[[Any], tuple[list[str], int]], /,
) -> tuple[list[str], list[tuple[int, int]]]: ...
