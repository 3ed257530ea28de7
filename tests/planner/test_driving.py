"""The planner and the session write their logic once, as a generator that yields what it needs done; ``drive`` and
``adrive`` run it, sync and async. The two give the same results, and an exception from a request reaches the
routine where it yielded (so its ``with`` blocks, the tracing spans, see it)."""

from __future__ import annotations

import asyncio
from collections.abc import Generator

import pytest

from ctxwin.planner._driving import adrive, drive


def doubling(values: list[int], seen: list[str]) -> Generator[int, int, list[int]]:
    """Asks for each value to be doubled; notes what reached its ``try`` blocks."""
    out = []
    for value in values:
        try:
            out.append((yield value))
        except ValueError as exc:
            seen.append(f"caught {exc}")
            out.append(-1)
        finally:
            seen.append(f"left {value}")
    return out


def double(value: int) -> int:
    if value == 3:
        raise ValueError("three")
    return 2 * value


async def adouble(value: int) -> int:
    await asyncio.sleep(0)
    return double(value)


@pytest.mark.parametrize("values", [[], [1], [1, 2, 4], [1, 3, 5]])
def test_sync_and_async_runs_agree(values: list[int]) -> None:
    seen_sync: list[str] = []
    seen_async: list[str] = []
    expected = [-1 if v == 3 else 2 * v for v in values]
    assert drive(doubling(values, seen_sync), double) == expected
    assert asyncio.run(adrive(doubling(values, seen_async), adouble)) == expected
    assert seen_sync == seen_async
    assert seen_sync.count("caught three") == values.count(3)


def test_an_exception_the_routine_does_not_catch_leaves_through_its_blocks() -> None:
    def routine(seen: list[str]) -> Generator[int, int, int]:
        try:
            yield 3
        finally:
            seen.append("span closed")
        return 0

    seen: list[str] = []
    with pytest.raises(ValueError, match="three"):
        drive(routine(seen), double)
    assert seen == ["span closed"]
    seen.clear()
    with pytest.raises(ValueError, match="three"):
        asyncio.run(adrive(routine(seen), adouble))
    assert seen == ["span closed"]
