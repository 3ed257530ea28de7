"""Example ctxwin plugin: a counter that counts whitespace-separated words, and a model that uses it.

BaseTokenCounter supplies the chat framing (3 tokens a message, 1 per name, 3 to prime the reply), so a counter
only has to implement ``count_text``.
"""

from __future__ import annotations

from collections.abc import Callable

from ctxwin.counters import BaseTokenCounter, ModelSpec
from ctxwin.hookspecs import hookimpl


class WordCounter(BaseTokenCounter):
    """One token per whitespace-separated word; ``words:<n>`` counts ``n`` tokens per word. A rule of thumb, not a
    model's tokenizer: it says so (``estimating``), so ``ctxwin models`` does not list its model as exact."""

    estimating = True

    def __init__(self, per_word: int = 1) -> None:
        self.per_word = per_word
        self.name = "words" if per_word == 1 else f"words:{per_word}"

    def count_text(self, text: str) -> int:
        return self.per_word * len(text.split())


def word_counter(arg: str | None) -> WordCounter:
    if arg is not None and not arg.isdigit():
        raise ValueError(f"words:<n> takes a whole number of tokens per word, got {arg!r}")
    return WordCounter(int(arg) if arg else 1)


@hookimpl
def register_counters(register: Callable[..., None]) -> None:
    register("words", word_counter, origin="no data: splits on whitespace")


@hookimpl
def register_models(register: Callable[[ModelSpec], None]) -> None:
    register(ModelSpec("wordy-1", context_window=4_096, max_output_tokens=512, counter="words",
                       aliases=("wordy-latest",)))
