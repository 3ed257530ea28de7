"""trim_messages: ctxwin against langchain_core, side by side, on agent traces of 100 to 100,000 messages.

The conversations are the bench corpus's ``agent`` kind (``conversations.generate("agent", size, 0)``: tool calls,
often parallel, with results from a few lines to tens of thousands of characters). Each case keeps about half the
conversation (``max_tokens`` is half the conversation's count under that counter). Counters: ``approx`` (each
library's "approximate" shortcut), ``o200k`` (the same per-message o200k callable given to both), ``o200k-native``
(ctxwin's ``tiktoken:o200k_base`` counter; langchain_core gets the callable, it has no such counter). ``cold``
clears ctxwin's count cache before every round; ``warm`` re-trims after appending one new message to a
conversation trimmed before (langchain_core has no cache, so its warm run repeats its cold one; at 100,000
messages it is not run again and ctxwin's warm time is compared with langchain_core's cold one). ``floor`` is the
time to run the o200k callable once over the kept messages on one thread: its engine is tiktoken (no faster engine
is exact and faster on o200k_base: ctxwin/counters/_families/data/engines.json).

``test_trim_engine`` is the cold trim with DeepSeek-V3's counter, with the engine ctxwin chooses (kitoken where
engines.json verified it) and with the reference (``tokenizers``), side by side in one run, each beside its floor:
that engine reading the text of the kept messages once.

``test_chat_loop`` is how a chat product calls it, LangChain style: the history was trimmed on the previous turn,
one message is appended (``history + [new]``, the same objects otherwise) and the list is trimmed again, with the
o200k callable. ``first-retrim`` is the first re-trim after the append, every old message having been seen once
(the cache is emptied and the history trimmed once in each round's setup); ``next-turn`` is a later turn of the
same loop (each round appends one more message to the list the previous round trimmed); ``reloaded`` re-trims the
history read back from storage (equal messages, new objects, as a server that reloads the conversation each
request gets them), so the count cache finds them by content rather than by identity. ``ctxwin-lc`` is a LangChain
user who changed the import: ctxwin's ``trim_messages`` given the langchain_core messages, returning them.
Run: ``pytest benchmarks/bench_trim.py --benchmark-only`` (needs the ``bench`` and ``corpus`` extras).
"""

from itertools import count
from typing import Any

import langchain_core.messages as lc_messages
import pytest
import tiktoken
from langchain_core.messages.utils import count_tokens_approximately
from side_by_side import chat_sized, chat_sized_theirs, o200k_callable, o200k_total, ours, theirs

from ctxwin.counters import get_counter
from ctxwin.messages import HumanMessage, messages_from_dict, messages_to_dict
from ctxwin.trim import trim_messages
from ctxwin.trim._count_cache import cache_for

KIND = "agent"
SIZES = [100, 1_000, 10_000, 100_000]


def conversations(size: int) -> tuple[list[Any], list[Any]]:
    """The ctxwin conversation of ``size`` messages and the same conversation as langchain_core messages."""
    return ours(KIND, size), theirs(KIND, size)


def counter_for(library: str, kind: str) -> Any:
    if kind == "approx":
        return "approximate" if library == "langchain" else get_counter("approximate")
    if kind == "o200k-native" and library == "ctxwin":
        return get_counter("tiktoken:o200k_base")
    return o200k_callable


def budget(size: int, kind: str) -> int:
    if kind == "approx":
        return count_tokens_approximately(theirs(KIND, size)) // 2
    return o200k_total(KIND, size) // 2


def rounds_for(library: str, size: int) -> int:
    if library == "langchain":
        return {100: 20, 1_000: 5, 10_000: 2}.get(size, 1)
    return {100: 50, 1_000: 20, 10_000: 5}.get(size, 2)


def clear_cache(counter: Any) -> None:
    cache = cache_for(counter) if not isinstance(counter, str) else None
    if cache is not None:
        cache.clear()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", ["cold", "warm"])
@pytest.mark.parametrize("kind", ["approx", "o200k", "o200k-native"])
@pytest.mark.parametrize("library", ["ctxwin", "langchain"])
def test_trim(benchmark: Any, library: str, kind: str, mode: str, size: int) -> None:
    if library == "langchain" and kind == "o200k-native":
        pytest.skip("langchain_core has no native o200k counter; its o200k runs use the callable")
    if library == "langchain" and mode == "warm" and size == SIZES[-1]:
        pytest.skip("langchain_core has no cache, so warm is its cold run again (minutes here): compared with cold")
    mine, other = conversations(size)
    messages = other if library == "langchain" else mine
    counter = counter_for(library, kind)
    limit = budget(size, kind)
    trim = lc_messages.trim_messages if library == "langchain" else trim_messages
    fresh = count()

    def grown() -> tuple[tuple[list[Any]], dict[str, Any]]:
        new_cls = lc_messages.HumanMessage if library == "langchain" else HumanMessage
        return ([*messages, new_cls(f"one more question, number {next(fresh)}")],), {}

    if mode == "cold":

        def setup() -> tuple[tuple[list[Any]], dict[str, Any]]:
            clear_cache(counter)
            return (messages,), {}

    else:
        trim(messages, max_tokens=limit, token_counter=counter)  # the conversation was trimmed before
        setup = grown

    def run(msgs: list[Any]) -> list[Any]:
        return trim(msgs, max_tokens=limit, token_counter=counter)

    result = benchmark.pedantic(run, setup=setup, rounds=rounds_for(library, size), iterations=1)
    benchmark.extra_info.update(kept=len(result), total=len(messages), max_tokens=limit)


LOOP_SIZES = [1_000, 10_000, 100_000]


@pytest.mark.parametrize("size", LOOP_SIZES)
@pytest.mark.parametrize("action", ["first-retrim", "next-turn", "reloaded"])
@pytest.mark.parametrize("library", ["ctxwin", "ctxwin-lc", "langchain"])
def test_chat_loop(benchmark: Any, library: str, action: str, size: int) -> None:
    if library == "langchain" and size == LOOP_SIZES[-1]:
        pytest.skip("langchain_core re-trims from scratch every turn (minutes here): its 10,000 rows compare")
    mine, other = conversations(size)
    langchain_objects = library != "ctxwin"
    history = other if langchain_objects else mine
    limit = budget(size, "o200k")
    trim = lc_messages.trim_messages if library == "langchain" else trim_messages
    new_cls = lc_messages.HumanMessage if langchain_objects else HumanMessage
    fresh = count()

    def appended(messages: list[Any]) -> list[Any]:
        return [*messages, new_cls(f"one more question, number {next(fresh)}")]

    def run(msgs: list[Any]) -> list[Any]:
        return trim(msgs, max_tokens=limit, token_counter=o200k_callable)

    if action == "first-retrim":

        def setup() -> tuple[tuple[list[Any]], dict[str, Any]]:
            clear_cache(o200k_callable)
            run(history)  # the previous turn: every message of the history seen once
            return (appended(history),), {}

    elif action == "reloaded":
        run(history)  # every message counted once
        from_dict = lc_messages.messages_from_dict if langchain_objects else messages_from_dict
        to_dict = lc_messages.messages_to_dict if langchain_objects else messages_to_dict

        def setup() -> tuple[tuple[list[Any]], dict[str, Any]]:
            return (appended(list(from_dict(to_dict(history)))),), {}

    else:
        loop = [appended(history)]
        run(history)
        run(loop[0])  # the first re-trim is behind us

        def setup() -> tuple[tuple[list[Any]], dict[str, Any]]:
            loop[0] = appended(loop[0])
            return (loop[0],), {}

    result = benchmark.pedantic(run, setup=setup, rounds=rounds_for(library, size), iterations=1)
    benchmark.extra_info.update(kept=len(result), total=size + 1, max_tokens=limit)


@pytest.mark.parametrize("size", SIZES)
def test_floor(benchmark: Any, size: int) -> None:
    """Tokenizing the kept messages once with the o200k callable, on one thread."""
    mine, _ = conversations(size)
    kept = trim_messages(mine, max_tokens=budget(size, "o200k"), token_counter=o200k_callable, tool_pairs="ignore")
    benchmark.pedantic(lambda: sum(map(o200k_callable, kept)), rounds=rounds_for("ctxwin", size), iterations=1)
    benchmark.extra_info.update(kept=len(kept), total=len(mine), engine=f"tiktoken {tiktoken.__version__} o200k_base")


@pytest.fixture(scope="module")
def deepseek_counters() -> dict[str, Any]:
    from ctxwin.counters._families.hf_counter import HFCounter

    return {engine: HFCounter("deepseek-v3", engine=engine) for engine in ("auto", "reference")}


@pytest.mark.parametrize("size", [1_000, 10_000])
@pytest.mark.parametrize("run", ["cold trim", "floor"])
@pytest.mark.parametrize("engine", ["auto", "reference"])
def test_trim_engine(benchmark: Any, deepseek_counters: dict[str, Any], engine: str, run: str, size: int) -> None:
    counter = deepseek_counters[engine]
    benchmark.group = f"trim-engine-deepseek-v3-{size}"
    mine, _ = conversations(size)
    limit = deepseek_counters["reference"].count_messages(mine) // 2
    kept = trim_messages(mine, max_tokens=limit, token_counter=counter)
    if run == "floor":
        texts = [text for message in kept for text in counter.message_texts(message)[0]]
        tokenizer = counter.tokenizer  # the engine's own call, without ctxwin's framing
        encode = counter.engine.encode or (lambda text: tokenizer.encode(text, add_special_tokens=False))
        benchmark.pedantic(lambda: [len(encode(t)) for t in texts], rounds=rounds_for("ctxwin", size), iterations=1)
    else:
        result = benchmark.pedantic(lambda: trim_messages(mine, max_tokens=limit, token_counter=counter),
                                    setup=lambda: clear_cache(counter), rounds=rounds_for("ctxwin", size),
                                    iterations=1)
        assert result == kept
    benchmark.extra_info.update(engine=counter.engine.engine, kept=len(kept), total=len(mine), max_tokens=limit)


@pytest.mark.parametrize("size", SIZES[:3])
def test_same_output_as_langchain(size: int) -> None:
    """Not timed: with tool_pairs="ignore" (LangChain's behaviour) the kept messages are langchain_core's."""
    mine, other = conversations(size)
    limit = budget(size, "o200k")
    expected = lc_messages.trim_messages(other, max_tokens=limit, token_counter=o200k_callable)
    result = trim_messages(mine, max_tokens=limit, token_counter=o200k_callable, tool_pairs="ignore")
    assert messages_to_dict(result) == messages_to_dict(mine[len(mine) - len(expected) :])


CHAT_ROWS = ["ctxwin cold", "ctxwin-native cold", "langchain cold", "floor", "ctxwin re-trim after appending one"]


@pytest.mark.parametrize("run", CHAT_ROWS)
def test_chat_sized(benchmark: Any, run: str) -> None:
    """10,000 chat-sized messages (``side_by_side.chat_sized``), half the o200k total kept: where the per-message
    costs of the engine and its cache show, not long texts (the rows of issue 28's cold-path figures)."""
    size = 10_000
    benchmark.group = f"trim-chat-sized-{size}"
    mine, other = chat_sized(size), chat_sized_theirs(size)
    limit = sum(map(o200k_callable, mine)) // 2
    native = get_counter("tiktoken:o200k_base")
    fresh = count()
    kept = trim_messages(mine, max_tokens=limit, token_counter=o200k_callable, tool_pairs="ignore")

    def cold(counter: Any) -> Any:
        def setup() -> tuple[tuple[list[Any]], dict[str, Any]]:
            clear_cache(counter)
            return (mine,), {}

        return setup

    def grown() -> tuple[tuple[list[Any]], dict[str, Any]]:
        clear_cache(o200k_callable)
        trim_messages(mine, max_tokens=limit, token_counter=o200k_callable)  # the previous turn
        return ([*mine, HumanMessage(f"one more question, number {next(fresh)}")],), {}

    measured, setup, rounds = {
        "ctxwin cold": (lambda m: trim_messages(m, max_tokens=limit, token_counter=o200k_callable),
                        cold(o200k_callable), 7),
        "ctxwin-native cold": (lambda m: trim_messages(m, max_tokens=limit, token_counter=native), cold(native), 7),
        "langchain cold": (lambda m: lc_messages.trim_messages(m, max_tokens=limit, token_counter=o200k_callable),
                           lambda: ((other,), {}), 3),
        "floor": (lambda m: sum(map(o200k_callable, m)), lambda: ((kept,), {}), 7),
        "ctxwin re-trim after appending one": (
            lambda m: trim_messages(m, max_tokens=limit, token_counter=o200k_callable), grown, 7),
    }[run]
    benchmark.pedantic(measured, setup=setup, rounds=rounds, iterations=1)
    benchmark.extra_info.update(kept=len(kept), total=size, max_tokens=limit)
