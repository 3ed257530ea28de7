"""``ctxwin count`` and ``ctxwin fit`` on every request form a user has in a file (real subprocesses): Anthropic's
(top-level system and tools), Responses' (``input``, ``instructions``), chat completions' with ``tools`` and
``tool_choice``. The system prompt is counted; the fitted file is in its own form, valid as the SDK's params,
accepted by a server that checks what the provider checks, and fits the budget as counted again."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from cli_support import run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from strict_server import Server, strict_server

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

BUDGET = ["-c", "approximate", "--context-window", "6000", "--reserve", "500"]
WORDS = " ".join(f"rule{i} applies to every answer" for i in range(400))  # a 2,000-word system prompt
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5E"
       "rkJggg==")


def history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out += [{"role": "user", "content": f"Question {i}: " + "tell me about the weather " * 20},
                {"role": "assistant", "content": f"Answer {i}: " + "it is sunny and warm " * 20}]
    return out


def thinking(n: int) -> dict[str, Any]:
    return {"type": "thinking", "thinking": f"I should look up the weather ({n}).", "signature": f"sig{n}=="}


def anthropic_request(system: str) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 500,
        "system": system,
        "tools": [{"name": "get_weather", "description": "Weather for a city", "input_schema": SCHEMA}],
        "messages": [
            *history(12),
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [thinking(1), {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                            "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                {"type": "text", "text": "sunny"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG.split(",")[1]}},
            ]}]},
        ],
    }


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def count(path: Path) -> int:
    result = run("count", str(path), "-c", "approximate", "--json")
    assert result.returncode == 0, result.stderr
    [report] = json.loads(result.stdout)["conversations"]
    return int(report["total"])


def fit(source: Path, out: Path, *extra: str) -> dict[str, Any]:
    result = run("fit", str(source), *BUDGET, "--json", "-o", str(out), *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def server() -> Any:
    with strict_server() as running:
        yield running


@pytest.mark.slow
def test_count_counts_an_anthropic_requests_system_and_tools(tmp_path: Path) -> None:
    short = "You are a terse weather bot who answers in one sentence."
    with_system = count(write(tmp_path / "a.json", {"system": short, "messages": [{"role": "user", "content": "hi"}]}))
    without = count(write(tmp_path / "b.json", {"messages": [{"role": "user", "content": "hi"}]}))
    alone = count(write(tmp_path / "c.json", [{"role": "system", "content": short}]))
    assert with_system - without >= alone - 3  # the system prompt's tokens, framing aside
    hello = [{"role": "user", "content": "hi"}]
    tools = count(write(tmp_path / "d.json", {**anthropic_request(short), "messages": hello}))
    assert tools > with_system  # the Anthropic tools are counted


@pytest.mark.slow
def test_fit_an_anthropic_request_with_a_long_system_prompt(tmp_path: Path, server: Server) -> None:
    request = anthropic_request(WORDS)
    source, out = write(tmp_path / "req.json", request), tmp_path / "out.json"
    report = fit(source, out)
    assert count(source) == report["tokens_before"] > report["budget"]  # over budget, most of it the system
    written = json.loads(out.read_text(encoding="utf-8"))
    assert report["fits"] and report["tokens_after"] == count(out) <= report["budget"]
    assert written["system"] == WORDS and written["tools"] == request["tools"] and written["max_tokens"] == 500
    assert written["model"] == "claude-sonnet-4-5"
    assert written["messages"][-2:] == request["messages"][-2:]  # the tool loop whole: thinking, image and all
    server.issued.add_thinking(thinking(1))
    client = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)
    client.messages.create(**written)
    assert server.bodies[-1][1] == written


@pytest.mark.slow
def test_fit_says_so_when_the_system_prompt_alone_is_over_budget(tmp_path: Path) -> None:
    source = write(tmp_path / "req.json", anthropic_request(WORDS * 2))
    result = run("fit", str(source), *BUDGET, "--json", "-o", str(tmp_path / "out.json"))
    assert result.returncode == 0
    report = json.loads(result.stdout)
    assert not report["fits"] and report["tokens_after"] > report["budget"]
    assert "does not fit" in result.stderr


@pytest.mark.slow
def test_fit_a_responses_request(tmp_path: Path, server: Server) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA" + "x" * 200}
    server.issued.add_reasoning(reasoning)
    items: list[dict[str, Any]] = []
    for message in history(30):
        items.append({"type": "message", **message})
    items += [
        {"role": "user", "content": "Weather in Paris?"},
        reasoning,
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]
    request = {"model": "gpt-4o", "instructions": "Answer in French.",
               "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA, "strict": True}],
               "tool_choice": "auto", "input": items}
    source, out = write(tmp_path / "req.json", request), tmp_path / "out.json"
    plain = count(write(tmp_path / "plain.json", {**request, "instructions": None}))
    assert count(source) > plain  # the instructions are counted
    report = fit(source, out)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert report["fits"] and report["tokens_after"] == count(out) <= report["budget"]
    assert written["instructions"] == "Answer in French." and written["tools"] == request["tools"]
    assert written["tool_choice"] == "auto" and written["input"][-3:] == items[-3:]  # reasoning as received
    assert len(written["input"]) < len(items)
    openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).responses.create(**written)


@pytest.mark.slow
def test_fit_a_chat_request_moves_tool_result_images(tmp_path: Path, server: Server) -> None:
    tools = [{"type": "function", "function": {"name": "screenshot", "parameters": {"type": "object"}}}]
    request = {"model": "gpt-4o", "tools": tools, "tool_choice": "required", "messages": [
        *history(20),
        {"role": "user", "content": "Take a screenshot."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": [
            {"type": "text", "text": "the screen"}, {"type": "image_url", "image_url": {"url": PNG}}]},
    ]}
    source, out = write(tmp_path / "req.json", request), tmp_path / "out.json"
    report = fit(source, out)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert report["fits"] and report["tokens_after"] == count(out) <= report["budget"]
    assert "place_media" in [step["name"] for step in report["steps"]]
    assert written["tools"] == tools and written["tool_choice"] == "required"
    assert written["messages"][-3]["content"] is None  # the caller's own message, as given
    assert [m["role"] for m in written["messages"][-3:]] == ["assistant", "tool", "user"]
    assert written["messages"][-1]["content"][1] == {"type": "image_url", "image_url": {"url": PNG}}
    openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).chat.completions.create(**written)


@pytest.mark.slow
def test_jsonl_lines_are_each_written_in_their_own_form(tmp_path: Path) -> None:
    lines = [
        {"system": "Be brief.", "messages": history(40)},
        {"instructions": "Be brief.", "input": history(40)},
        {"messages": history(40)},
        history(40),
    ]
    source = tmp_path / "many.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = run("fit", str(source), *BUDGET, "-o", str(out))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows[0]["system"] == "Be brief." and "instructions" not in rows[0]
    assert rows[1]["instructions"] == "Be brief." and all(item["type"] == "message" for item in rows[1]["input"])
    # the reserve given (BUDGET: 500) is each chat request's reply limit
    assert set(rows[2]) == set(rows[3]) == {"messages", "ctxwin", "max_completion_tokens"}
    for row in rows:
        plan = row.pop("ctxwin")["plan"]
        assert plan["fits"] and plan["dropped"] > 0
        assert plan["tokens_after"] == count(write(tmp_path / "row.json", row))
        assert len(row.get("messages") or row["input"]) < 80


@pytest.mark.slow
def test_a_chat_request_holding_responses_items_is_fitted_under_its_messages(tmp_path: Path, server: Server) -> None:
    items = [{"type": "message", **message} for message in history(30)]
    request = {"model": "gpt-4o", "temperature": 0.2, "messages": items}
    source, out = write(tmp_path / "req.json", request), tmp_path / "out.json"
    report = fit(source, out)
    written = json.loads(out.read_text(encoding="utf-8"))
    # no Responses 'input' beside the messages it should have fitted; the reserve given is its reply limit
    assert set(written) == {*request, "max_completion_tokens"}
    assert report["fits"] and report["dropped"] > 0 and len(written["messages"]) < len(items)
    assert report["tokens_after"] == count(out) <= report["budget"]
    assert written["messages"][-1]["role"] == "assistant" and "Answer 29" in json.dumps(written["messages"][-1])
    openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).chat.completions.create(**written)
