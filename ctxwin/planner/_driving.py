"""One implementation for sync and async: a planning routine is a generator that yields what it needs done and is
sent the result; ``drive`` does each request by a plain call, ``adrive`` awaits it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import TypeVar

Request = TypeVar("Request")
Result = TypeVar("Result")
Returned = TypeVar("Returned")


def drive(routine: Generator[Request, Result, Returned], do: Callable[[Request], Result]) -> Returned:
    """Run ``routine`` to its return value, doing each request it yields with ``do``. An exception from ``do`` is
    thrown into the generator where it yielded, so its ``with`` blocks (tracing spans) see it as straight-line code
    would."""
    try:
        request = next(routine)
        while True:
            try:
                result = do(request)
            except BaseException as exc:
                request = routine.throw(exc)
            else:
                request = routine.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def adrive(
    routine: Generator[Request, Result, Returned], do: Callable[[Request], Awaitable[Result]]
) -> Returned:
    """``drive`` for async code: each request's ``do`` is awaited."""
    try:
        request = next(routine)
        while True:
            try:
                result = await do(request)
            except BaseException as exc:
                request = routine.throw(exc)
            else:
                request = routine.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
