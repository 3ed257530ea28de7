# The tool-pair index's walk in C (ctxwin/trim/_pairscan.c); _tool_pairs.py holds the pure-Python one.
from collections.abc import Sequence
from typing import Any

def scan(
    messages: Sequence[Any], start: int, roles: dict[type, str], result: str, caller: str, /
) -> tuple[dict[int, int], dict[str, int]] | None: ...
