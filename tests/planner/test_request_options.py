"""The providers' context editing and compaction options of a request (issue 51, item 2): ``context_management``
(Responses, Anthropic) and Anthropic's ``betas`` reach ``plan.request`` as given; another form's are left out with a
warning; Anthropic compaction blocks are read, counted and written back whole."""

from __future__ import annotations

import copy
import json
from typing import Any

import ctxwin

RESPONSES_OPTIONS = [{"type": "compaction", "compact_threshold": 2_000}]
ANTHROPIC_OPTIONS = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 5},
                                "keep": {"type": "tool_uses", "value": 1}},
                               {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000}}]}
BLOCK = {"type": "compaction", "content": "The user is debugging build 4471; it failed on the linker step.",
         "encrypted_content": "enc:" + "QUJD" * 30, "signature": "sig_1"}


def turns(n: int) -> list[dict[str, Any]]:
    return [{"role": role, "content": f"{role} {i} " + "words " * 100}
            for i in range(n) for role in ("user", "assistant")]


def test_responses_context_management_reaches_the_request_as_given() -> None:
    given = {"model": "gpt-6-sol", "input": [*turns(3), {"role": "user", "content": "next"}],
             "context_management": copy.deepcopy(RESPONSES_OPTIONS)}
    plan = ctxwin.fit(given, model="gpt-6-sol", context_window=700, reserve_output=200, output="request")
    assert plan.request["context_management"] == RESPONSES_OPTIONS
    assert plan.request["input"][-1]["content"] == "next" and len(plan.request["input"]) < 7  # fitted all the same


def test_anthropic_context_management_and_betas_reach_the_request_as_given() -> None:
    given = {"model": "claude-opus-5-5", "max_tokens": 300, "system": "Be brief.", "betas": ["compact-2026-01-12"],
             "context_management": copy.deepcopy(ANTHROPIC_OPTIONS), "messages": turns(2)[:-1]}
    plan = ctxwin.fit(given, model="claude-opus-5-5", output="anthropic")
    request = plan.request
    assert request["context_management"] == ANTHROPIC_OPTIONS and request["betas"] == ["compact-2026-01-12"]
    assert list(request)[-2:] == ["context_management", "betas"]


def test_a_request_without_them_has_none() -> None:
    plan = ctxwin.fit({"input": turns(1)[:1]}, model="gpt-6-sol", output="request")
    assert "context_management" not in plan.request and plan.request_options is None


def test_another_forms_options_are_left_out_with_a_warning() -> None:
    """Responses' ``context_management`` (a list) is not Anthropic's (an object of edits): never carried across."""
    given = {"input": turns(1)[:1], "context_management": RESPONSES_OPTIONS}
    plan = ctxwin.fit(given, model="claude-opus-5-5", output="anthropic")
    assert "context_management" not in plan.request
    assert any("context_management" in warning and "left out" in warning for warning in plan.warnings)


def test_an_anthropic_compaction_block_is_claimed_counted_and_written_back_whole() -> None:
    """A list of Anthropic messages holding a compaction block (no ``system`` to tell the form by) is Anthropic's;
    the block counts its readable summary and its opaque part, and goes back byte for byte in its own key order."""
    given = [*turns(4), {"role": "assistant", "content": [dict(BLOCK)]}, {"role": "user", "content": "and now?"}]
    plan = ctxwin.fit(given, model="claude-opus-5-5", context_window=1_000, reserve_output=300, output="request",
                      strategies=["drop_compacted", "trim"])
    assert plan.output == "anthropic"
    sent = plan.request["messages"]
    assert json.dumps(sent[0]["content"][0]) == json.dumps(BLOCK)
    assert [m["role"] for m in sent] == ["assistant", "user"]
    assert len(plan.steps[0].dropped_ids) == 8
    counter = ctxwin.get_counter("claude-opus-5-5")
    bare = counter.count_text(str(BLOCK["content"]))
    assert plan.tokens_after > bare + 90  # the summary and the 90 bytes its opaque part decodes to


def test_the_callers_own_form_has_no_request_to_keep_them_in_and_warns_nothing() -> None:
    given = {"input": turns(1)[:1], "context_management": RESPONSES_OPTIONS}
    plan = ctxwin.fit(given, model="gpt-6-sol")
    assert plan.output == "messages" and plan.request_options is None and not plan.warnings


def test_an_anthropic_on_demand_compaction_request_keeps_its_compaction() -> None:
    given = {"model": "claude-opus-5-5", "max_tokens": 300, "betas": ["compact-2026-09-04"],
             "compaction": {"type": "summarize"}, "messages": turns(2)[:-1]}
    plan = ctxwin.fit(given, model="claude-opus-5-5", output="request")
    assert plan.request["compaction"] == {"type": "summarize"} and plan.request["betas"] == ["compact-2026-09-04"]
