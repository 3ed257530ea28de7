"""The provider's compaction as a session's summariser at a cut (issue 51, item 3), through the real SDKs against the
local compaction server: ctxwin decides when (a cut) and what (the span ``summarize`` would take), the provider
compacts it into one opaque item sent back byte for byte, the head stays verbatim before it, and a failed call
falls back to ctxwin's own summary at once."""

from __future__ import annotations

import importlib.util
import socket
from typing import Any

import pytest

if importlib.util.find_spec("openai") is None or importlib.util.find_spec("anthropic") is None:
    pytest.skip("the openai and anthropic SDKs are in the dev extra", allow_module_level=True)

from ctxwin.planner import Planner
from ctxwin.strategies import ProviderCompaction
from tests.interop.compaction_server import compaction_server

pytestmark = pytest.mark.slow  # imports the SDKs, starts a server


def question(i: int) -> str:
    return f"question {i}: " + " ".join(f"step{i}-{j} of the migration plan" for j in range(14))


def openai_replay(client: Any, turns: int) -> tuple[list[Any], list[Any]]:
    """The plans of a session whose cuts compact with ``client``, and the replies."""
    import openai

    step = ProviderCompaction(client=client, model="gpt-6-sol", timeout=5)
    planner = Planner(model="gpt-6-sol", context_window=6_000, reserve_output=400, output="responses",
                      strategies=[step, "trim"])
    session = planner.session(keep_first=0.3)
    session.add_messages({"role": "system", "content": "You are the migration assistant."})
    schema = " ".join(f"table t{j} (id bigint primary key, owner text, created timestamptz);" for j in range(72))
    session.add_messages({"role": "user", "content": f"Our database is Postgres 17 on host db-7. Schema: {schema}"})
    session.add_messages({"role": "assistant", "content": "Noted: Postgres 17 on db-7."})
    plans: list[Any] = []
    sender = openai.OpenAI(base_url=client.base_url, api_key="test", max_retries=0)
    for i in range(turns):
        session.add_messages({"role": "user", "content": question(i)})
        plan = session.plan()
        assert plan.fits
        reply = sender.responses.create(**plan.request)  # a compaction item not issued, or changed, is a 400
        session.add_messages([item.model_dump(mode="json", exclude_none=True) for item in reply.output])
        session.observe(reply.usage)
        plans.append(plan)
    return plans, [session.head]


def items(plan: Any) -> list[dict[str, Any]]:
    return [item for item in plan.request["input"] if item.get("type") == "compaction"]


def test_openai_compacts_at_the_cuts_and_keeps_the_head_before_the_item() -> None:
    import openai

    with compaction_server() as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test")
        plans, (head,) = openai_replay(client, 80)
        assert head  # the first user turn, kept by every cut
        compacts = [body for path, body in server.bodies if path == "/v1/responses/compact"]
        cuts = [i for i, plan in enumerate(plans) if plan.cache.cut and i > 0]
    assert len(compacts) == len(cuts) >= 2  # the provider was called at the cuts, and only there
    for i in cuts:
        step = plans[i].steps[0]
        assert step.name == "provider_compaction" and step.summarized_ids and not step.skipped
        sent = plans[i].messages  # the items, without the cache marks
        assert len(items(plans[i])) == 1  # an earlier item was compacted again with the span
        where = sent.index(items(plans[i])[0])
        assert [entry["content"] for entry in sent[1:where]] == [m.content for m in head]  # the head, verbatim
    second = compacts[1]["input"]
    assert any(entry.get("type") == "compaction" for entry in second)  # the earlier item, sent to be compacted
    for i in range(1, len(plans)):
        if i not in cuts:
            assert plans[i].messages[: len(plans[i - 1].messages)] == plans[i - 1].messages


def test_anthropic_on_demand_compaction_is_the_summariser() -> None:
    import anthropic

    with compaction_server() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test")
        step = ProviderCompaction(client=client, model="claude-opus-5-5")
        planner = Planner(model="claude-opus-5-5", context_window=1_500, reserve_output=200, output="anthropic",
                          strategies=[step, "trim"])
        plan = planner.plan([{"role": "system", "content": "Be brief."},
                             *({"role": role, "content": f"{role} {i}: " + "the plan has steps " * 30}
                               for i in range(8) for role in ("user", "assistant")),
                             {"role": "user", "content": "where are we?"}])
        compacts = [body for path, body in server.bodies if body.get("compaction")]
        assert len(compacts) == 1 and compacts[0]["compaction"] == {"type": "summarize"}
        assert plan.steps[0].name == "provider_compaction" and plan.steps[0].summarized_ids
        block = plan.request["messages"][0]["content"][0]
        assert block["type"] == "compaction" and block["encrypted_content"] in server.issued.replaced
        client.beta.messages.create(**plan.request)  # the block goes back as issued: the server checks it


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_provider_falls_back_to_ctxwins_summary_at_once() -> None:
    """Offline: the SDK's connection error at the first try (no retry), then ctxwin's own summary."""
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{closed_port()}/v1", api_key="test")
    step = ProviderCompaction(client=client, model="gpt-6-sol", timeout=2)
    planner = Planner(model="gpt-6-sol", context_window=1_500, reserve_output=200, output="responses",
                      strategies=[step, "trim"])
    plan = planner.plan([*({"role": role, "content": f"{role} {i}: " + "the plan has steps " * 30}
                           for i in range(8) for role in ("user", "assistant")),
                         {"role": "user", "content": "where are we?"}])
    step_report = plan.steps[0]
    assert step_report.notes[0].startswith("the provider's compaction failed (APIConnectionError)")
    assert step_report.summarized_ids and plan.fits  # ctxwin's summary instead
    assert not any(item.get("type") == "compaction" for item in plan.request["input"])


def test_a_provider_that_never_answers_falls_back_after_the_timeout() -> None:
    """A server that takes the connection and never answers: the step's timeout (no retry), then ctxwin's summary."""
    import openai

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{silent.getsockname()[1]}/v1", api_key="test")
        step = ProviderCompaction(client=client, model="gpt-6-sol", timeout=0.5)
        planner = Planner(model="gpt-6-sol", context_window=1_500, reserve_output=200, output="responses",
                          strategies=[step, "trim"])
        plan = planner.plan([*({"role": role, "content": f"{role} {i}: " + "the plan has steps " * 30}
                               for i in range(8) for role in ("user", "assistant")),
                             {"role": "user", "content": "where are we?"}])
    assert plan.steps[0].notes[0].startswith("the provider's compaction failed (APITimeoutError)")
    assert plan.steps[0].summarized_ids and plan.fits


def test_a_client_of_no_known_provider_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"ProviderCompaction: client must be an openai\.OpenAI or anthropic"):
        ProviderCompaction(client=object(), model="gpt-6-sol")


def test_aplan_compacts_off_the_event_loop() -> None:
    """``Planner.aplan``: the provider is called in a thread, and the plan is the one ``plan`` makes."""
    import asyncio

    import openai

    conversation = [*({"role": role, "content": f"{role} {i}: " + "the plan has steps " * 30}
                      for i in range(8) for role in ("user", "assistant")),
                    {"role": "user", "content": "where are we?"}]
    with compaction_server() as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test")
        planner = Planner(model="gpt-6-sol", context_window=1_500, reserve_output=200, output="responses",
                          strategies=[ProviderCompaction(client=client, model="gpt-6-sol"), "trim"])
        awaited = asyncio.run(planner.aplan(conversation))
        planned = planner.plan(conversation)
    assert awaited.steps[0].name == "provider_compaction" and not awaited.steps[0].skipped
    assert awaited.messages == planned.messages
