"""Safe mode against text built to break an estimator: it must never count fewer tokens than o200k_base or
cl100k_base do, whatever its target (issue 32's reproducers, then hypothesis over the same shapes and more).

The property tests are marked ``slow`` and run ``EXAMPLES`` examples each: at least 300 (2,000 in CI, where ``CI`` is
set: about a minute of CPU in all), or the loaded hypothesis profile's ``max_examples`` when it asks for more
(``pytest --hypothesis-profile=fuzz`` runs 20,000 each, see tests/conftest.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from corpus import reference_encoding
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxwin.counters._approximate.counter import SAFE_FOR, ApproximateCounter
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

ENCODINGS = {name: reference_encoding(name) for name in ("o200k_base", "cl100k_base")}
SAFE = [ApproximateCounter(target, safe=True) for target in ("o200k_base", "cl100k_base")]
EXAMPLES = max(settings.default.max_examples, 2_000 if os.environ.get("CI") else 300)
fuzz = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_bounded(text: str) -> None:
    """Every safe counter (each target) is at or above the real count under every encoding."""
    real = {name: len(encoding.encode_ordinary(text)) for name, encoding in ENCODINGS.items()}
    for counter in SAFE:
        count = counter.count_text(text)
        for name, tokens in real.items():
            assert count >= tokens, (counter.target, name, count, tokens, text[:200])


def test_safe_mode_bounds_both_openai_encodings() -> None:
    assert set(SAFE_FOR) == set(ENCODINGS)


# ---- The reproducers: each was under o200k_base (figures: safe mode's count against the real one). ----

def test_a_hex_dump_from_od() -> None:
    # `od -An -tx1` output: 22% under.
    od = shutil.which("od")
    if od is None:
        pytest.skip("no `od` on this machine")
    data = bytes(range(256)) * 8 + bytes((i * 7919) % 251 for i in range(3000))
    dump = subprocess.run([od, "-An", "-tx1"], input=data, capture_output=True, check=True).stdout.decode()
    assert dump.count("\n") > 300
    assert_bounded(dump)


def test_two_letters_with_ten_thousand_spaces_between() -> None:
    text = "a" + " " * 10_000 + "b"  # 68 against 81
    assert_bounded(text)
    assert SAFE[0].count_text(text) >= 81


def test_a_table_padded_to_150_columns() -> None:
    rows = [f"| {name:<40}| {value:>20} | {note:<82}|" for name, value, note in
            (("alpha", 1, "first"), ("beta", 22, "second row"), ("gamma", 333, ""), ("delta", 4444, "x" * 10))]
    text = "\n".join(rows * 15)
    assert max(map(len, rows)) == 150
    assert_bounded(text)


ARABIC = ("يولد جميع الناس أحراراً متساوين في الكرامة والحقوق. وقد وهبوا عقلاً وضميراً وعليهم أن يعامل بعضهم بعضاً "
          "بروح الإخاء.")


def test_arabic_with_rtl_and_ltr_marks() -> None:
    # 519 against 561: a mark after every word.
    words = ARABIC.split()
    text = " ".join(f"{word}\u200f" if i % 2 else f"\u200e{word}" for i, word in enumerate(words * 8))
    assert_bounded(text)


def test_rtl_overrides_around_words() -> None:
    # 753 against 1,000.
    words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while", "the", "band"]
    assert_bounded(" ".join(f"\u202e{word}\u202c" for word in words * 20))


@pytest.mark.parametrize(("text", "real"), [
    ('def f(x):\n    return {"a": [1, 2, 3], "b": x * 2}\n' * 20, 520),  # was 430
    ("    if x:\n        return [a, b, c]\n" * 20, 260),  # was 233
])
def test_repeated_indented_code(text: str, real: int) -> None:
    assert len(ENCODINGS["o200k_base"].encode_ordinary(text)) == real
    assert_bounded(text)
    assert SAFE[0].count_text(text) >= real


def test_lists_of_short_ui_strings_in_latin_script_languages() -> None:
    # Up to 22% under: menus of a few words in Polish, Czech, Vietnamese, Yoruba, Turkish, Icelandic...
    strings = ["Zapisz zmiany", "Usuń konto", "Uložit změny", "Smazat účet", "Lưu thay đổi", "Xóa tài khoản",
               "Ṣàtúnṣe", "Pa àkọọ́lẹ̀ rẹ́", "Değişiklikleri kaydet", "Hesabı sil", "Vista breytingar", "Eyða reikningi",
               "Išsaugoti", "Ištrinti paskyrą", "Salvează", "Șterge contul", "Mentés", "Fiók törlése"]
    assert_bounded("\n".join(strings * 6))
    assert_bounded(", ".join(f'"{s}"' for s in strings))


# ---- Shapes for hypothesis: the reproducers' kinds, and more. ----

_LATIN_LETTERS = ("abcdefghijklmnopqrstuvwxyzàáâãäåæçèéêëìíîïñòóôõöøùúûüýÿąćęłńśźżčďěňřšťůžőűăâîșțğışđơư"
                  "ạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹṣọẹ")
_ARABIC_LETTERS = "ابتثجحخدذرزسشصضطظعغفقكلمنهوي"
_MARKS = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c\u200b\u200c\u200d\ufeff"
_EMOJI_PARTS = ["👨", "👩", "👧", "👦", "🏳", "🌈", "❤", "🔥", "👍", "🏽", "🏿", "\ufe0f", "\u200d", "🇫", "🇷", "🧑‍💻"]
_SCRIPT_WORDS = ["你好", "世界", "こんにちは", "カタカナ", "안녕하세요", "Привет", "мир", "Γειά", "שלום", "مرحبا",
                 "नमस्ते", "வணக்கம்", "สวัสดี", "ሰላም", "გამარჯობა", "Բարեւ", " the", "hello", "123", "0x1f", "ǂʘǃ"]

hex_dump = st.binary(min_size=1, max_size=2_000).map(
    lambda data: "".join(" " + " ".join(f"{b:02x}" for b in data[i:i + 16]) + "\n" for i in range(0, len(data), 16)))
space_runs = st.tuples(st.text(_LATIN_LETTERS, min_size=1, max_size=3), st.integers(1, 20_000),
                       st.text(_LATIN_LETTERS, min_size=1, max_size=3), st.sampled_from([" ", "\t", "\u3000", "\xa0"])
                       ).map(lambda t: t[0] + t[3] * t[1] + t[2])
padded_table = st.tuples(
    st.lists(st.lists(st.text(_LATIN_LETTERS + "0123456789 .-", max_size=30), min_size=1, max_size=6),
             min_size=1, max_size=30),
    st.integers(10, 160), st.sampled_from(["|", " ", "\t", "│"]),
).map(lambda t: "\n".join(t[2].join(cell.ljust(t[1] // len(row)) for cell in row) for row in t[0]))
marked_words = st.lists(
    st.tuples(st.text(_ARABIC_LETTERS + _LATIN_LETTERS[:26], min_size=1, max_size=10), st.sampled_from(_MARKS),
              st.sampled_from(_MARKS)), min_size=1, max_size=200,
).map(lambda words: " ".join(f"{a}{w}{b}" for w, a, b in words))
indented_code = st.tuples(
    st.lists(st.tuples(st.integers(0, 6), st.sampled_from(["if x:", "return [a, b, c]", "def f(x):", "}", "{",
                                                            'return {"a": [1, 2, 3], "b": x * 2}', "pass", "else:",
                                                            "for i in range(10):", "x = y + 1  # note"])),
             min_size=1, max_size=12),
    st.integers(1, 60), st.sampled_from(["    ", "  ", "\t"]),
).map(lambda t: "".join(t[2] * depth + line + "\n" for depth, line in t[0]) * t[1])
ui_strings = st.lists(st.text(_LATIN_LETTERS + _LATIN_LETTERS.upper(), min_size=1, max_size=14), min_size=1,
                      max_size=12).flatmap(
    lambda words: st.lists(st.lists(st.sampled_from(words), min_size=1, max_size=4).map(" ".join), min_size=1,
                           max_size=80)).flatmap(
    lambda lines: st.sampled_from(["\n", ", ", '", "', "\n- ", " | "]).map(lambda sep: sep.join(lines)))
mixed_scripts = st.lists(st.one_of(st.sampled_from(_SCRIPT_WORDS), st.sampled_from([" ", "\n", ", ", "."])),
                         max_size=300).map("".join)
control_chars = st.lists(st.one_of(st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Zl", "Zp"]),
                                   st.sampled_from(["a", "1", " ", "\r\n"])), max_size=400).map("".join)
emoji_zwj = st.lists(st.one_of(st.sampled_from(_EMOJI_PARTS), st.sampled_from([" ", "ok", "\n"])),
                     max_size=400).map("".join)
long_repeats = st.tuples(st.text(st.characters(codec="utf-8"), min_size=1, max_size=8),
                         st.integers(1, 3_000)).map(lambda t: t[0] * t[1])
random_unicode = st.text(st.characters(codec="utf-8"), max_size=600)
with_surrogates = st.text(st.characters(categories=["Cs", "L", "N", "Zs"]), max_size=200)

SHAPES = {
    "hex dump": hex_dump, "space runs": space_runs, "padded table": padded_table, "marked words": marked_words,
    "indented code": indented_code, "UI strings": ui_strings, "mixed scripts": mixed_scripts,
    "control characters": control_chars, "emoji ZWJ": emoji_zwj, "long repeats": long_repeats,
    "random unicode": random_unicode,
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES))
def test_safe_never_undercounts_adversarial_shapes(shape: str) -> None:
    @fuzz
    @given(SHAPES[shape])
    def check(text: str) -> None:
        assert_bounded(text)

    check()


@pytest.mark.slow
@fuzz
@given(st.lists(st.one_of(*SHAPES.values()), min_size=1, max_size=4).map("".join))
def test_safe_never_undercounts_shapes_joined(text: str) -> None:
    assert_bounded(text)


@pytest.mark.slow
@fuzz
@given(with_surrogates)
def test_safe_never_undercounts_text_with_surrogates(text: str) -> None:
    # Lone surrogates (from JSON escapes) are counted as tiktoken counts them: its U+FFFD for each.
    scalar = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    for counter in SAFE:
        assert counter.count_text(text) >= max(len(e.encode_ordinary(scalar)) for e in ENCODINGS.values())


@pytest.mark.slow
@fuzz
@given(st.lists(st.one_of(*SHAPES.values()), min_size=1, max_size=5))
def test_safe_messages_never_undercount_openai_framing(contents: list[str]) -> None:
    # OpenAI's chat accounting with the real encodings: 3 per message, its role and content, 3 for the reply.
    kinds = [(SystemMessage, "system"), (HumanMessage, "user"), (AIMessage, "assistant")]
    messages = [kinds[i % 3][0](content) for i, content in enumerate(contents)]
    fields = [(kinds[i % 3][1], content) for i, content in enumerate(contents)]
    messages.append(ToolMessage(contents[0], tool_call_id="call_1"))
    fields.append(("tool", contents[0] + "call_1"))
    for encoding in ENCODINGS.values():
        exact = 3 + sum(3 + len(encoding.encode_ordinary(role)) + len(encoding.encode_ordinary(text))
                        for role, text in fields[:-1])
        exact += 3 + sum(len(encoding.encode_ordinary(s)) for s in ("tool", contents[0], "call_1"))
        for counter in SAFE:
            assert counter.count_messages(messages) >= exact
