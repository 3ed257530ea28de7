"""The providers' compaction and context editing through ctxwin and the real SDKs, against the local compaction
server (issue 51, item 2): ``context_management`` reaches the provider as given and does what it documents; the
compaction a reply carries is fitted, sent back byte for byte (the server checks it) and what it stands for is
dropped first."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

if importlib.util.find_spec("openai") is None or importlib.util.find_spec("anthropic") is None:
    pytest.skip("the openai and anthropic SDKs are in the dev extra", allow_module_level=True)

import ctxwin
from ctxwin.planner._usage import cleared_tokens
from tests.interop.compaction_server import compaction_server, tokens

pytestmark = pytest.mark.slow  # imports the SDKs, starts a server


def history(n: int = 8) -> list[dict[str, Any]]:
    return [item for i in range(n) for item in (
        {"role": "user", "content": f"question {i}: " + "tell me more about the build " * 25},
        {"role": "assistant", "content": f"answer {i}: " + "the build is green " * 25},
    )]


def test_responses_compaction_threshold_reaches_the_server_and_compacts() -> None:
    import openai

    options = [{"type": "compaction", "compact_threshold": 1_000}]
    with compaction_server() as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        plan = ctxwin.fit({"input": [*history(), {"role": "user", "content": "status?"}],
                           "context_management": options}, model="gpt-6-sol", output="request")
        reply = client.responses.create(**plan.request)
        assert server.bodies[-1][1]["context_management"] == options
        assert reply.output[0].type == "compaction"  # the server compacted: over the threshold it was given


def tool_history(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out += [{"role": "user", "content": f"read file {i}"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read",
                                                   "input": {"path": f"f{i}.txt"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                              "content": f"contents of file {i}: " + "line of text " * 60}]},
                {"role": "assistant", "content": f"file {i} read"}]
    return out


TOOLS = [{"name": "read", "description": "Read a file", "input_schema": {"type": "object", "properties": {}}}]


def test_anthropic_context_editing_and_compaction_round_trip() -> None:
    """Context editing and compaction reach the server as given; the compaction block of the reply, chained as the
    docs show, is fitted with ``drop_compacted`` and sent back unchanged; the counts are of the request before the
    provider's editing, so a plan never counts less than the provider sees."""
    import anthropic

    edits = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 500},
                        "keep": {"type": "tool_uses", "value": 1}},
                       {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 200}}]}
    betas = ["context-management-2025-06-27", "compact-2026-01-12"]
    with compaction_server() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        given = {"model": "claude-opus-5-5", "max_tokens": 256, "system": "Be brief.", "tools": TOOLS,
                 "betas": betas, "context_management": edits,
                 "messages": [*tool_history(4), {"role": "user", "content": "summarise"}]}
        plan = ctxwin.fit(given, model="claude-opus-5-5", output="request")
        assert plan.request["context_management"] == edits and plan.request["betas"] == betas
        reply = client.beta.messages.create(**plan.request)
        sent = server.bodies[-1][1]
        assert sent["context_management"] == edits
        assert reply.context_management is not None
        assert reply.context_management.applied_edits[0].type == "clear_tool_uses_20250919"
        assert plan.tokens_after >= tokens(sent["messages"]) // 2  # before the editing, in ctxwin's tokens
        cleared = reply.context_management.applied_edits[0].cleared_input_tokens
        assert cleared > 0 and cleared_tokens(reply.context_management) == cleared  # what observe adds back
        block = reply.content[0].model_dump(mode="json", exclude_none=True)
        assert block["type"] == "compaction"
        chained = {**given, "messages": [*given["messages"], {"role": "assistant", "content": [block]},
                                         {"role": "user", "content": "and the last file?"}]}
        fitted = ctxwin.fit(chained, model="claude-opus-5-5", context_window=1_500, reserve_output=256,
                            output="request", strategies=["drop_compacted", "trim"])
        messages = fitted.request["messages"]
        assert json.dumps(messages[0]["content"][0]) == json.dumps(block)  # first, byte for byte
        assert fitted.steps[0].name == "drop_compacted" and fitted.steps[0].dropped_ids
        client.beta.messages.create(**fitted.request)  # the server refuses a changed or unknown block
        assert server.bodies[-1][1]["messages"][0]["content"][0] == block
