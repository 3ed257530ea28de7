"""Shared fixtures for counter tests: the OpenAI cookbook's example conversations and tool definition."""

from __future__ import annotations

from typing import Any

import pytest

# From OpenAI's cookbook "How to count tokens with tiktoken" (num_tokens_from_messages / num_tokens_for_tools).
COOKBOOK_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon "
                                  "into plain English."},
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant",
     "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch "
                                                          "base on opportunities for increased leverage."},
    {"role": "system", "name": "example_assistant",
     "content": "Let's talk later when we're less busy about how to do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client "
                                "deliverable."},
]
WEATHER_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {"type": "string", "description": "The unit of temperature to return",
                             "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["location"],
            },
        },
    }
]
WEATHER_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


@pytest.fixture(autouse=True)
def _no_entry_point_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counter tests never depend on whatever plugins happen to be installed."""
    monkeypatch.setenv("CTXWIN_LOAD_PLUGINS", "")
