"""Finding the longest piece of a text that fits a token limit, with few probes, many searches counted together:
shared by ``truncate_tool_output`` and ``summarize``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")

# A bracket this narrow is a token or two wide: the token estimate closes it in a probe or two, without bisecting.
_CREEP = 32

def longest_fitting(
    length: int, guess: int, count: Callable[[int], int], limit: int, slack: int = 0
) -> tuple[int, int]:
    """A ``k <= length`` with ``count(k) <= limit`` (``count(0) == 0``), and ``count(k)``: the largest such ``k`` when
    ``count`` grows with ``k``, or the first found within ``slack`` tokens of the limit (each probe saved is a piece
    not tokenized). ``count(k)`` is the tokens of a ``k``-character piece; see ``fitting_search``."""
    return run_in_step([fitting_search(length, guess, limit, slack, lambda k: k)], lambda ks: list(map(count, ks)))[0]


def fitting_search(
    length: int, guess: int, limit: int, slack: int, piece: Callable[[int], _T]
) -> Generator[_T, int, tuple[int, int]]:
    """``longest_fitting`` as a generator: it yields ``piece(k)`` for each probe and is sent the probe's count, so
    that many searches can run in step and have their probes tokenized together (``run_in_step``).

    Token counts grow about linearly with text, so each probe aims where the last one's count puts the limit: with
    a slack, at the middle of the accepted window, which the local density usually hits at the second probe;
    without one, a little past the limit while no probe has failed, to bracket the answer. When two probes in a row
    leave more than half of a wide bracket, the next one bisects it. Only pieces about as long as the answer are
    tokenized, a handful of times, so cutting a megabyte log to 1,000 tokens stays cheap.
    """
    lo, hi = 0, length + 1  # count(lo) <= limit; hi fails, or lies past the end
    lo_tokens = 0
    windowed = 0 < slack < limit
    target = limit - slack // 2 if windowed else limit
    k = min(max(guess * target // limit if windowed else guess, 1), length)
    slow = 0  # probes in a row that did not halve the bracket
    while k > lo:
        width = hi - lo
        tokens = yield piece(k)
        if tokens <= limit:
            lo, lo_tokens = k, tokens
            if windowed and limit - tokens <= slack:
                break
        else:
            hi = k
        if hi - lo <= 1:
            break
        slow = slow + 1 if 2 * (hi - lo) > width else 0
        aim = k * target // max(tokens, 1)
        if hi > length and not windowed:  # nothing has failed yet: overshoot, so the next probe brackets the answer
            aim = min(max(aim + aim // 16 + 1, lo + 1), length)
        elif slow >= 2 and hi - lo > _CREEP:
            aim, slow = (lo + hi) // 2, 0
        k = min(max(aim, lo + 1), hi - 1)
    return lo, lo_tokens


def run_in_step(searches: list[Generator[_T, int, _R]], count: Callable[[list[_T]], list[int]]) -> list[_R]:
    """Run generators that yield pieces and are sent their counts in step, each round's pieces counted in one
    ``count`` call (for the tiktoken counter, spread over threads); their return values, in order."""
    results: list[_R | None] = [None] * len(searches)
    asked: dict[int, _T] = {}

    def advance(i: int, sent: int | None) -> None:
        try:
            asked[i] = searches[i].send(sent)  # type: ignore[arg-type]  # None starts a generator
        except StopIteration as done:
            results[i] = done.value
            asked.pop(i, None)

    for i in range(len(searches)):
        advance(i, None)
    while asked:
        waiting = list(asked)
        for i, tokens in zip(waiting, count([asked[i] for i in waiting]), strict=True):
            advance(i, tokens)
    return results  # type: ignore[return-value]  # every generator has returned
