# The C accelerator's interface (ctxwin/counters/_approximate/speedups.c); configured by accelerator.py.
from collections.abc import Callable, Sequence
from typing import Any

def configure(*tables: Any) -> None: ...
def configure_safe(*tables: Any) -> None: ...
def text_parts(text: str, /) -> tuple[tuple[int, int, int, int, int, int, int], list[tuple[int, int]], int]: ...
def safe_parts(
    text: str, /
) -> tuple[tuple[int, int, int, int, int, int, int], list[tuple[int, int]], int, list[int]]: ...

class Model:
    def __init__(
        self,
        weights: Sequence[float],
        floor: Sequence[float],
        digit_floor: float,
        other_floor: float,
        bounds: Sequence[tuple[Sequence[float], float, float]] | None,
        pieces: Sequence[str] | None = None,
        latin: Sequence[str] | Callable[[], Sequence[str]] | None = None,
        /,
    ) -> None: ...
    def estimate(self, text: str, /) -> int: ...
    def safe(self, text: str, /) -> int: ...
