# The scan for messages with additional kwargs or response metadata in C (ctxwin/strategies/_flagged.c); _pins.py
# holds the Python one.
from collections.abc import Sequence
from typing import Any

def flagged(messages: Sequence[Any], /) -> list[int] | None: ...
