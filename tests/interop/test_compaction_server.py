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
