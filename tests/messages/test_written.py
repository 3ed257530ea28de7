"""The two writers of messages (the C one in ctxwin/messages/_written.c and the pure-Python one with marshal) write
alike: two messages get equal bytes from one exactly when they get equal bytes from the other, both refuse the same
values, and each recognises a message written as its note and nothing else."""

from __future__ import annotations

import copy
import enum
import os
import shutil
import sysconfig
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage
from ctxwin.messages._writer import C_WRITER, PY_WRITER, Writer, note_of, notes_of

if C_WRITER is None:
    if os.environ.get("CTXWIN_NO_ACCELERATOR") or not shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]):
        pytest.skip("the C writer is turned off or there is no C compiler", allow_module_level=True)
    pytest.fail("a C compiler is present but ctxwin/messages/_written.c is not built: reinstall the package "
                "(pip install -e .) and read the build log", pytrace=False)

C: Writer = C_WRITER  # type: ignore[assignment]  # built: checked above

LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, float("nan"), float("inf"), 1 + 2j, True, False])
    | st.floats(allow_nan=True)
    | st.text(max_size=12)  # every kind of string: ASCII, Latin-1, BMP, astral
    | st.binary(max_size=8)
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    | st.frozensets(st.integers(-3, 3), max_size=3),
    max_leaves=12,
)


def message(content: str, value: Any, ai: bool) -> BaseMessage:
    cls = AIMessage if ai else HumanMessage
    return cls(content, additional_kwargs={"v": value}, id="m")


PAIRS = {
    "first": st.tuples(st.sampled_from(["a", "b", "é", "a" * 40]), VALUES, st.booleans()),
    "second": st.tuples(st.sampled_from(["a", "b", "é", "a" * 40]), VALUES, st.booleans()),
    "same": st.booleans(),
}


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(**PAIRS)
def test_two_messages_get_equal_keys_from_both_writers_or_from_neither(
    first: tuple[str, Any, bool], second: tuple[str, Any, bool], same: bool
) -> None:
    a = message(*first)
    b = copy.deepcopy(a) if same else message(*second)  # equal content, other objects; or anything else
    assert (C.write(a) == C.write(b)) == (PY_WRITER.write(a) == PY_WRITER.write(b))
    assert C.keys([a, b]) == [C.write(a), C.write(b)]
    assert C.all_noted([a, b], C.keys([a, b]))
    assert C.all_noted([b], [C.write(a)]) == (C.write(a) == C.write(b))


@settings(max_examples=50, deadline=None)
@given(**PAIRS)
def test_two_messages_get_equal_keys_on_a_few_examples(
    first: tuple[str, Any, bool], second: tuple[str, Any, bool], same: bool
) -> None:
    """The property above on 50 examples (the fast tier's; the slow tier draws 400)."""
    pair = test_two_messages_get_equal_keys_from_both_writers_or_from_neither
    pair.hypothesis.inner_test(first, second, same)  # type: ignore[attr-defined]


@pytest.mark.parametrize("writer", [C, PY_WRITER], ids=["c", "python"])
def test_equal_sets_iterated_in_other_orders_get_equal_keys(writer: Writer) -> None:
    """-1 and -2 have the same hash: sets holding both iterate in insertion order."""
    first, second = frozenset([-1, -2, 1]), frozenset([-2, -1, 1])
    assert first == second and list(first) != list(second)
    assert writer.write(message("a", first, True)) == writer.write(message("a", second, True))
    assert writer.write(message("a", {first}, True)) == writer.write(message("a", {second}, True))


@pytest.mark.parametrize("writer", [C, PY_WRITER], ids=["c", "python"])
def test_equal_values_of_other_types_get_other_keys(writer: Writer) -> None:
    written = {
        writer.write(HumanMessage("x", additional_kwargs={"n": value}))
        for value in (1, 1.0, True, "1", b"1", [1], (1,), {1: 1}, frozenset([1]), 1 + 0j)
    }
    assert len(written) == 10
    assert writer.write(HumanMessage("x", additional_kwargs={"a": 1, "b": 2})) != writer.write(
        HumanMessage("x", additional_kwargs={"b": 2, "a": 1})  # equal dicts in another order: only a recount
    )


class Loud(str):
    """A string of a subclass: neither writer writes it (marshal refuses subclasses)."""


class Colour(str, enum.Enum):
    RED = "red"


@pytest.mark.parametrize("value", [object(), Loud("x"), Colour.RED, [object()]])
@pytest.mark.parametrize("writer", [C, PY_WRITER], ids=["c", "python"])
def test_both_writers_refuse_what_marshal_cannot_write(writer: Writer, value: Any) -> None:
    unwritable = HumanMessage("x", additional_kwargs={"v": value})
    with pytest.raises(ValueError):
        writer.write(unwritable)
    with pytest.raises(ValueError):
        writer.keys([HumanMessage("fine"), unwritable])
    assert not writer.all_noted([unwritable], [b"anything"])
    assert note_of(unwritable, writer) is None
    assert notes_of([HumanMessage("fine"), unwritable], writer) == [writer.write(HumanMessage("fine")), None]


@pytest.mark.parametrize("writer", [C, PY_WRITER], ids=["c", "python"])
def test_an_object_that_is_no_pydantic_model_gets_no_note(writer: Writer) -> None:
    """A duck-typed LangChain message (``type`` and ``content``, no pydantic fields): read every time."""

    class Duck:
        def __init__(self) -> None:
            self.type, self.content = "human", "hi"

    assert note_of(Duck(), writer) is None and notes_of([Duck()], writer) == [None]


@pytest.mark.parametrize("writer", [C, PY_WRITER], ids=["c", "python"])
def test_both_writers_refuse_nesting_past_marshals_limit(writer: Writer) -> None:
    value: Any = "leaf"
    for _ in range(3000):
        value = [value]
    with pytest.raises(ValueError):
        writer.write(HumanMessage("deep", additional_kwargs={"v": value}))


REPORTED: dict[int, dict[str, Any]] = {}  # the extras each Masked message reports, by its id


class Masked(HumanMessage):
    """A class reporting its extras its own way (``__getattribute__``): the writers read them as it reports them."""

    def __getattribute__(self, name: str) -> Any:
        if name == "__pydantic_extra__":
            return REPORTED.get(id(self), {})
        return super().__getattribute__(name)


NOTED = st.lists(
    st.tuples(st.sampled_from(["a", "b", "é"]), VALUES, st.sampled_from(["human", "ai", "masked"]),
              st.sampled_from(["none", "own", "other", "repr", "changed"])),
    max_size=6,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(NOTED)
def test_both_writers_recall_exactly_the_messages_written_as_noted(drawn: list[tuple[str, Any, str, str]]) -> None:
    """``recalled``: a note's value where its message is still written as the note (its own, unchanged), None where
    there is no note, the note is another message's or a key of reprs, or the message changed since (a field, or
    extras a class reports its own way)."""
    classes = {"human": HumanMessage, "ai": AIMessage, "masked": Masked}
    messages = [classes[kind](content, additional_kwargs={"v": value}) for content, value, kind, _ in drawn]
    for writer in (C, PY_WRITER):
        notes: list[tuple[object, Any] | None] = []
        for k, (m, (_, _, _, note)) in enumerate(zip(messages, drawn, strict=True)):
            own, other = writer.write(m), writer.write(messages[k - 1]) if k else b""
            notes.append(None if note == "none" else (own, k) if note in ("own", "changed") else
                         (other, k) if note == "other" else ((HumanMessage, ()), k))
        for m, (_, _, kind, note) in zip(messages, drawn, strict=True):
            if note == "changed" and kind == "masked":
                REPORTED[id(m)] = {"now": "reported"}
            elif note == "changed":
                m.content += "!"  # type: ignore[operator]
        expected = [None if n is None or not isinstance(n[0], bytes) or writer.write(m) != n[0] else n[1]
                    for m, n in zip(messages, notes, strict=True)]
        assert writer.recalled(messages, notes) == expected
        for k, (*_, note) in enumerate(drawn):  # its own note unchanged: recalled; none, reprs, changed: not
            assert expected[k] == (k if note == "own" else expected[k] if note == "other" else None)
        for m in messages:
            REPORTED.pop(id(m), None)


@settings(max_examples=40, deadline=None)
@given(NOTED)
def test_both_writers_recall_on_a_few_examples(drawn: list[tuple[str, Any, str, str]]) -> None:
    """The property above on 40 examples (the fast tier's; the slow tier draws 300)."""
    test_both_writers_recall_exactly_the_messages_written_as_noted.hypothesis.inner_test(drawn)  # type: ignore[attr-defined]
