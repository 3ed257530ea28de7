"""A session replayed through the real openai SDK against the local compaction server, with server-side compaction
on (issue 51, item 2): the compaction item the provider returns is appended like any output, sent back byte for
byte, counted from then on by the usage the provider reported, and what it stands for is what the next cut drops
first; between cuts every request keeps the previous one's prefix, and the request after a cut keeps the cut's."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

if importlib.util.find_spec("openai") is None:
    pytest.skip("the openai SDK is in the dev extra", allow_module_level=True)

from ctxwin.planner import Planner
from tests.interop.compaction_server import compaction_server

pytestmark = pytest.mark.slow  # imports the SDK, starts a server

THRESHOLD = 900  # the server's tokens (four characters of JSON)


def question(i: int) -> str:
    return f"question {i}: " + " ".join(f"part{i}-{j} of the deployment log" for j in range(14))


def replay(turns: int) -> tuple[list[dict[str, Any]], list[Any], list[dict[str, Any]]]:
    """The requests sent, the session's plans and the compaction items the server issued, in order."""
    import openai

    planner = Planner(model="gpt-6-sol", context_window=2_400, reserve_output=400, output="responses")
    session = planner.session()
    session.add_messages({"role": "system", "content": "You are the release assistant."})
    requests, plans, issued = [], [], []
    with compaction_server() as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        for i in range(turns):
            session.add_messages({"role": "user", "content": question(i)})
            plan = session.plan()
            assert plan.fits
            reply = client.responses.create(  # a changed or unknown compaction item is a 400: raised here
                **plan.request, context_management=[{"type": "compaction", "compact_threshold": THRESHOLD}])
            output = [item.model_dump(mode="json", exclude_none=True) for item in reply.output]
            issued += [item for item in output if item["type"] == "compaction"]
            session.add_messages(output)
            session.observe(reply.usage)
            requests.append(plan.request)
            plans.append(plan)
    return requests, plans, issued


def compactions(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in request["input"] if item.get("type") == "compaction"]


def test_a_session_keeps_its_prefix_around_compaction_items() -> None:
    requests, plans, issued = replay(40)
    assert issued, "the server compacted"
    cuts = [i for i, plan in enumerate(plans) if plan.cache.cut and i > 0]
    assert cuts, "the session cut"
    sent = [plan.messages for plan in plans]  # the items, without the cache marks that move to the newest
    for i in range(1, len(sent)):
        if i not in cuts:  # between cuts: the previous request, then what was appended
            assert sent[i][: len(sent[i - 1])] == sent[i - 1], i
    for i in cuts:  # the request after a cut starts with the cut's, unless it is a cut itself
        if i + 1 < len(sent) and i + 1 not in cuts:
            assert sent[i + 1][: len(sent[i])] == sent[i]
    first = next(i for i in cuts if any(compactions(requests[j]) for j in range(i)))
    step = plans[first].steps[0]
    assert step.name == "drop_compacted" and step.dropped_ids  # what the item stands for went first
    items = compactions(requests[first])
    assert items and all(item in issued for item in items)  # byte for byte: the server checked them too


def test_an_observed_compaction_item_counts_the_providers_tokens() -> None:
    """The item's estimate (one token per byte its content decodes to) is replaced by what the provider's usage
    leaves for it: the plans count the server's figure, so the request count tracks the server's."""
    _, plans, issued = replay(24)
    assert issued
    with_item = [plan for plan in plans if any(
        item.get("type") == "compaction" for item in plan.messages)]
    assert len(with_item) >= 2
    first, later = with_item[0], with_item[1]
    assert later.tokens_after - first.tokens_after < 150  # one question more, and an item counted by usage
