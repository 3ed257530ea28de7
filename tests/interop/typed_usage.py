"""Checked by ``mypy --strict`` in test_typed_usage.py: ``output=`` gives the SDKs' own param types, so the result
goes to the SDK call with no ``cast``. Never run, only type-checked."""

from __future__ import annotations

import anthropic
import openai
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam
from typing_extensions import assert_type

import ctxwin
from ctxwin.messages._request_forms.anthropic import convert_to_anthropic
from ctxwin.messages._request_forms.responses import convert_to_responses_items
from ctxwin.messages._sdk_types import AnthropicRequest

HISTORY = [{"role": "user", "content": "hi"}]


def send(client: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    chat = ctxwin.fit(HISTORY, "gpt-4o", output="openai")
    assert_type(chat.messages, list[ChatCompletionMessageParam])
    client.chat.completions.create(model="gpt-4o", messages=chat.messages)

    responses = ctxwin.fit(HISTORY, "gpt-4o", output="responses")
    assert_type(responses.messages, list[ResponseInputItemParam])
    client.responses.create(model="gpt-4o", input=responses.messages)
    client.responses.create(model="gpt-4o", input=convert_to_responses_items(HISTORY))

    planner = ctxwin.Planner("gpt-4o", output="anthropic", reserve_output=1000)
    plan = planner.plan(HISTORY)
    assert_type(plan.messages, list[MessageParam])
    claude.messages.create(model="claude-sonnet-4-5", max_tokens=1000, messages=plan.messages)
    request = convert_to_anthropic(HISTORY)
    assert_type(request, AnthropicRequest)
    claude.messages.create(model="claude-sonnet-4-5", max_tokens=1000, **request)

    session = ctxwin.Planner("gpt-4o", output="openai").session(HISTORY)
    assert_type(session.plan().messages, list[ChatCompletionMessageParam])
    client.chat.completions.create(model="gpt-4o", messages=session.plan().messages)
