"""The local compaction server behaves as OpenAI documents server-side compaction, with the real openai SDK in front:
a compaction item over the threshold, sent back only unchanged, ``/responses/compact``'s user messages and item, and
``context_management`` entries of a type it does not know refused (issue 51, prepared for items 2-3)."""

from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("openai") is None:
    pytest.skip("the openai SDK is in the dev extra", allow_module_level=True)

from tests.interop.compaction_server import compaction_server

pytestmark = pytest.mark.slow  # imports the SDK, starts a server

HISTORY = [{"role": "user", "content": "word " * 200}, {"role": "assistant", "content": "noted"},
           {"role": "user", "content": "and now?"}]


def test_server_side_compaction_round_trip() -> None:
    import openai

    with compaction_server() as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        small = client.responses.create(model="gpt-6-sol", input=HISTORY[-1:],
                                        context_management=[{"type": "compaction", "compact_threshold": 200}])
        assert [item.type for item in small.output] == ["message"]
        big = client.responses.create(model="gpt-6-sol", input=HISTORY,
                                      context_management=[{"type": "compaction", "compact_threshold": 200}])
        item = big.output[0]
        assert item.type == "compaction" and server.issued.replaced[item.encrypted_content] == HISTORY
        sent_back = {"type": "compaction", "id": item.id, "encrypted_content": item.encrypted_content}
        follow = client.responses.create(model="gpt-6-sol", input=[sent_back, {"role": "user", "content": "go on"}])
        assert follow.usage is not None and follow.usage.input_tokens < big.usage.input_tokens  # type: ignore[union-attr]
        with pytest.raises(openai.BadRequestError, match="modified"):
            client.responses.create(model="gpt-6-sol",
                                    input=[{**sent_back, "encrypted_content": item.encrypted_content + "x"}])
        with pytest.raises(openai.BadRequestError, match="only 'compaction'"):
            client.responses.create(model="gpt-6-sol", input="hi", context_management=[{"type": "trim"}])


def test_standalone_compact_returns_the_user_messages_and_one_item() -> None:
    import openai

    with compaction_server() as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        compacted = client.responses.compact(model="gpt-6-sol", input=HISTORY)  # type: ignore[arg-type]
        kinds = [item.type for item in compacted.output]
        assert kinds == ["message", "message", "compaction"]
        assert server.bodies[-1][0] == "/v1/responses/compact"


AGENT = [
    {"role": "user", "content": "read the files"},
    *(turn for i in range(4) for turn in (
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"n": i}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "line " * 300}]},
    )),
]
READ_TOOL = [{"name": "read", "description": "read a file", "input_schema": {"type": "object"}}]


def test_anthropic_compaction_drops_what_came_before_the_block() -> None:
    import anthropic

    with compaction_server() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        edit = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 500}}]}
        first = client.beta.messages.create(model="claude-opus-5-5", max_tokens=100, messages=AGENT,  # type: ignore[arg-type]
                                            tools=READ_TOOL, context_management=edit,  # type: ignore[arg-type]
                                            betas=["compact-2026-01-12"])
        block = first.content[0]
        assert block.type == "compaction" and server.issued.replaced[block.encrypted_content] == AGENT  # type: ignore[union-attr]
        after = [*AGENT, {"role": "assistant", "content": [block.model_dump(exclude_none=True)]},
                 {"role": "user", "content": "go on"}]
        second = client.beta.messages.create(model="claude-opus-5-5", max_tokens=100, messages=after,  # type: ignore[arg-type]
                                             tools=READ_TOOL, context_management=edit,  # type: ignore[arg-type]
                                             betas=["compact-2026-01-12"])
        assert second.usage.input_tokens < first.usage.input_tokens and second.content[0].type == "text"
        changed = {**block.model_dump(exclude_none=True), "encrypted_content": "enc:forged"}
        with pytest.raises(anthropic.BadRequestError, match="modified"):
            client.beta.messages.create(model="claude-opus-5-5", max_tokens=100, betas=["compact-2026-01-12"],
                                        messages=[*AGENT, {"role": "assistant", "content": [changed]},  # type: ignore[list-item]
                                                  {"role": "user", "content": "go on"}])
        with pytest.raises(anthropic.BadRequestError, match="beta header"):
            client.beta.messages.create(model="claude-opus-5-5", max_tokens=100, messages=AGENT,  # type: ignore[arg-type]
                                        tools=READ_TOOL, context_management=edit)  # type: ignore[arg-type]


def test_anthropic_context_editing_clears_old_tool_results_and_says_so() -> None:
    import anthropic

    with compaction_server() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        edits = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 100},
                            "keep": {"type": "tool_uses", "value": 1}}]}
        reply = client.beta.messages.create(model="claude-opus-5-5", max_tokens=100, messages=AGENT,  # type: ignore[arg-type]
                                            tools=READ_TOOL, context_management=edits,  # type: ignore[arg-type]
                                            betas=["context-management-2025-06-27"])
        assert reply.context_management is not None
        [applied] = reply.context_management.applied_edits
        assert applied.type == "clear_tool_uses_20250919" and applied.cleared_tool_uses == 3
        assert applied.cleared_input_tokens > 0
        assert server.bodies[-1][1]["context_management"] == edits  # the SDK sends the edits as given
