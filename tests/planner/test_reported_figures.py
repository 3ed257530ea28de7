"""A figure the report shows equals the recount of what was written: ``plan.tokens_after`` is the counter's own count
of the request the plan sends (a chat template's per-message sum is only an upper bound, used to decide), and
``ctxwin count`` and ``ctxwin fit`` give one total for one request."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ctxwin
from ctxwin.counters import get_counter
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_messages

EXAMPLE = Path(__file__).parents[2] / "examples" / "long_conversation.json"
PATH = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": PATH}}]
MODELS = ["Qwen/Qwen3-8B", "gpt-oss-20b", "llama-3.1-8b-instruct", "deepseek-v3", "gpt-4o", "claude-sonnet-4-5"]


def reasoning_agent(rounds: int) -> list[Any]:
    """Reasoning in earlier turns (templates drop it), runs of tool results (templates join them), user turns."""
    messages: list[Any] = [SystemMessage("You are a careful coding agent. Answer with file paths and line numbers.")]
    for r in range(rounds):
        messages.append(HumanMessage(f"Round {r}: why does test_parse_{r} fail with KeyError: 'user_{r}'?"))
        calls = [{"name": "read_file", "args": {"path": path}, "id": f"{kind}{r}"}
                 for kind, path in (("a", f"src/parse_{r}.py"), ("b", f"tests/t_{r}.py"))]
        messages.append(AIMessage(f"<think>\nThe fixture for round {r} may lack the key; read both files.\n</think>"
                                  "\n\nReading the parser and its test.", tool_calls=calls))
        messages.append(ToolMessage(f"def parse(d):\n    return d['user_{r}']  # line {r + 10}\n" * 3,
                                    tool_call_id=f"a{r}"))
        messages.append(ToolMessage(f"def test_parse_{r}():\n    assert parse({{}}) is None\n", tool_call_id=f"b{r}"))
        messages.append(AIMessage(f"<think>\nparse_{r} indexes instead of .get().\n</think>\n\n"
                                  f"src/parse_{r}.py line {r + 10} indexes d['user_{r}']: use d.get('user_{r}')."))
    return messages


def recount(counter: Any, plan: Any) -> int:
    if plan.output == "messages":
        return int(counter.count_messages(plan.messages, tools=plan.tools))
    return int(counter.count_messages(json.loads(json.dumps(plan.request))))


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("output", ["messages", "openai", "responses"])
def test_tokens_after_is_a_recount_of_what_the_plan_sends(model: str, output: str) -> None:
    counter = get_counter(model)
    example = convert_to_messages(json.loads(EXAMPLE.read_text()))
    for messages in (reasoning_agent(6), example):
        full = ctxwin.fit(messages, model, output=output, tools=TOOLS)  # type: ignore[call-overload]
        for window in (full.tokens_after // 2, full.tokens_after - 40, None):
            plan = full if window is None else ctxwin.fit(  # type: ignore[call-overload]
                messages, model, output=output, tools=TOOLS, context_window=window, reserve_output=0)
            assert plan.tokens_after == recount(counter, plan)
            assert plan.fits == (plan.tokens_after <= plan.budget.max_input_tokens)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["Qwen/Qwen3-8B", "gpt-oss-20b", "gpt-4o"])
def test_count_and_fit_give_one_total_for_one_request(tmp_path: Path, model: str) -> None:
    source = tmp_path / "request.json"
    messages = ctxwin.fit(reasoning_agent(5), "gpt-4o", output="openai").messages
    source.write_text(json.dumps({"messages": messages, "tools": TOOLS}))
    run = [sys.executable, "-m", "ctxwin"]
    counted = subprocess.run([*run, "count", str(source), "--model", model, "--json"], capture_output=True,
                             text=True, check=True)
    fitted = subprocess.run([*run, "fit", str(source), "--model", model, "--json"], capture_output=True, text=True,
                            check=True)
    total = json.loads(counted.stdout)["conversations"][0]["total"]
    report = json.loads(fitted.stdout)
    assert report["tokens_before"] == report["tokens_after"] == total
