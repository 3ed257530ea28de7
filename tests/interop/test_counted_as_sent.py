"""A plan counts the bytes it sends: tool-call arguments are sent as the caller wrote them (``json.dumps`` with
``\\uXXXX`` escapes, compact or indented JSON), so the plan's figure is a recount of the serialized request with
those exact strings, for chat completions, Responses and Anthropic output, and through ``ctxwin fit``."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxwin
from ctxwin.counters import get_counter

TOOLS = [{"type": "function", "function": {"name": "search", "description": "Search the notes",
                                           "parameters": {"type": "object"}}}]
STYLES = {  # how callers write arguments
    "ascii": lambda args: json.dumps(args),
    "compact": lambda args: json.dumps(args, separators=(",", ":")),
    "indented": lambda args: json.dumps(args, indent=2),
    "unicode": lambda args: json.dumps(args, ensure_ascii=False),
}
PLACEHOLDER = "{}"  # arguments every counter reads and writes alike


def conversation(calls: list[tuple[dict[str, Any], str]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You search notes."},
                                      {"role": "user", "content": "Find what I wrote about the trip."}]
    for index, (args, style) in enumerate(calls):
        call_id = f"call_{index}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "search", "arguments": STYLES[style](args)}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"result {index}"})
    messages.append({"role": "user", "content": "Thanks, and the budget?"})
    return messages


def _argument_slots(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The dicts holding a sent ``arguments`` string (chat tool calls' functions, Responses function calls)."""
    slots = []
    for item in request.get("messages") or request.get("input") or []:
        if item.get("type") == "function_call":
            slots.append(item)
        slots += [call["function"] for call in item.get("tool_calls") or []]
    return slots


def recount(counter: Any, request: dict[str, Any]) -> int:
    """The serialized request counted with each argument string as sent: the request with placeholders for the
    arguments, plus each sent string's tokens less the placeholder's (independent of how a counter reads tool-call
    text)."""
    sent = json.loads(json.dumps(request))
    slots = _argument_slots(sent)
    texts = [slot["arguments"] for slot in slots]
    for slot in slots:
        slot["arguments"] = PLACEHOLDER
    extra = sum(counter.count_text(text) - counter.count_text(PLACEHOLDER) for text in texts)
    return int(counter.count_messages(sent)) + extra


ARGS = st.dictionaries(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8),
    st.one_of(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
              st.integers(-10**6, 10**6), st.booleans(), st.lists(st.text(max_size=6), max_size=3)),
    max_size=4,
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.tuples(ARGS, st.sampled_from(sorted(STYLES))), min_size=1, max_size=3),
       output=st.sampled_from(["openai", "responses", "anthropic"]),
       model=st.sampled_from(["gpt-4o", "claude-sonnet-4-5", "gpt-oss-20b"]))
def test_the_plan_figure_is_a_recount_of_the_request_sent(
    calls: list[tuple[dict[str, Any], str]], output: str, model: str
) -> None:
    plan = ctxwin.fit(conversation(calls), model, output=output, tools=TOOLS)  # type: ignore[call-overload]
    assert plan.tokens_after == recount(get_counter(model), plan.request)


def test_escaped_arguments_are_counted_as_sent_under_a_tight_budget() -> None:
    args = {"query": "日本語のメモ — résumé, naïve café " * 40}
    messages = conversation([(args, "ascii")])
    for output in ("openai", "responses"):
        plan = ctxwin.fit(messages, "gpt-4o", context_window=1_300, reserve_output=0, output=output, tools=TOOLS)
        sent = recount(get_counter("gpt-4o"), plan.request)
        assert plan.tokens_after == sent
        assert plan.fits == (sent <= plan.budget.max_input_tokens)


def test_equal_calls_written_differently_are_counted_each_as_written() -> None:
    """The count cache keys a message by what it was read from too, so an equal message read from other text is
    not given the first one's count."""
    args = {"city": "Zürich", "days": 3}
    counter = get_counter("gpt-4o")
    for style in ("unicode", "ascii", "indented", "compact", "ascii"):
        plan = ctxwin.fit(conversation([(args, style)]), "gpt-4o", output="openai", tools=TOOLS)
        assert plan.tokens_after == recount(counter, plan.request), style


@pytest.mark.slow
def test_ctxwin_fit_writes_what_it_counted(tmp_path: Path) -> None:
    args = {"query": "日本語のメモ — résumé " * 30}
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"messages": conversation([(args, "ascii")]), "tools": TOOLS}))
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-m", "ctxwin", "fit", str(source), "--model", "gpt-4o", "--json",
                           "-o", str(out)], capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    written = json.loads(out.read_text())
    assert report["tokens_after"] == recount(get_counter("gpt-4o"), written)
    counted = subprocess.run([sys.executable, "-m", "ctxwin", "count", str(out), "--model", "gpt-4o", "--json"],
                             capture_output=True, text=True, check=True)
    assert json.loads(counted.stdout)["conversations"][0]["total"] == report["tokens_after"]


def png_url(width: int, height: int) -> str:
    """A real PNG of that size, as a data URL (its header gives the size every counter reads)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\x00" * (width * 3) for _ in range(height))
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(data).decode()


def image_blocks(detail: str) -> list[dict[str, Any]]:
    """One image asking for ``detail`` in each block form a caller may write."""
    url = png_url(1024, 768)
    data = url.split(",", 1)[1]
    return [
        {"type": "image_url", "image_url": {"url": url, "detail": detail}},  # chat completions
        {"type": "image", "base64": data, "mime_type": "image/png", "extras": {"detail": detail}},  # LangChain v1
        {"type": "image", "base64": data, "mime_type": "image/png", "detail": detail},
    ]


@pytest.mark.parametrize("detail", ["low", "high", "auto"])
@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini", "claude-sonnet-4-5"])
def test_an_images_detail_is_counted_only_where_the_request_carries_it(model: str, detail: str) -> None:
    messages = [ctxwin.HumanMessage([{"type": "text", "text": "What is in these?"}, *image_blocks(detail)])]
    counter = get_counter(model)
    for output in ("openai", "responses", "anthropic"):
        plan = ctxwin.fit(messages, model, output=output)  # type: ignore[call-overload]
        assert plan.tokens_after == recount(counter, plan.request), output
