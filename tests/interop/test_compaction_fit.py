"""A Responses input holding a compaction item (issue 51, item 2), through the real openai SDK and the local
compaction server: fitted without error, the item sent back byte for byte (the server checks it), what it replaced
dropped first."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

if importlib.util.find_spec("openai") is None:
    pytest.skip("the openai SDK is in the dev extra", allow_module_level=True)

import ctxwin
from tests.interop.compaction_server import compaction_server

pytestmark = pytest.mark.slow  # imports the SDK, starts a server

THRESHOLD = 1_000


def history() -> list[dict[str, Any]]:
    return [item for i in range(8) for item in (
        {"role": "user", "content": f"question {i}: " + "tell me more about the build " * 25},
        {"role": "assistant", "content": f"answer {i}: " + "the build is green " * 25},
    )]


def test_a_responses_input_holding_a_compaction_item_is_fitted_and_sent_unchanged() -> None:
    import openai

    with compaction_server() as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        first = client.responses.create(model="gpt-6-sol", input=history(),  # type: ignore[arg-type]
                                        context_management=[{"type": "compaction", "compact_threshold": THRESHOLD}])
        returned = [item.model_dump(mode="json", exclude_none=True) for item in first.output]
        assert returned[0]["type"] == "compaction"
        # stateless chaining, as the guide has it: the output items appended to the input, then the next turn
        chained = [*history(), *returned, {"role": "user", "content": "so, is it green?"}]
        plan = ctxwin.fit(chained, model="gpt-6-sol", context_window=2_000, reserve_output=500, output="responses",
                          strategies=["drop_compacted", "trim"])
        sent = plan.request["input"]
        compaction = [item for item in sent if item.get("type") == "compaction"]
        assert json.dumps(compaction) == json.dumps(returned[:1])  # byte for byte
        assert sent.index(compaction[0]) == 0  # everything it replaced dropped first, nothing after it
        assert plan.steps[0].name == "drop_compacted" and len(plan.steps[0].dropped_ids) == len(history())
        # the server refuses a changed or unknown item
        reply = client.responses.create(**{"model": "gpt-6-sol", **plan.request})
        assert reply.output[-1].type == "message"
        assert server.issued.replaced[compaction[0]["encrypted_content"]] == history()


def test_a_fit_that_keeps_everything_sends_the_item_unchanged_too() -> None:
    import openai

    with compaction_server() as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        compacted = client.responses.compact(model="gpt-6-sol", input=history())  # type: ignore[arg-type]
        items = [item.model_dump(mode="json", exclude_none=True) for item in compacted.output]
        plan = ctxwin.fit([*items, {"role": "user", "content": "next"}], model="gpt-6-sol", output="responses")
        assert [item for item in plan.request["input"] if item.get("type") == "compaction"] == items[-1:]
        client.responses.create(**{"model": "gpt-6-sol", **plan.request})
