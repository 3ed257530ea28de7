"""What the agent-stack examples share: a build log tool whose outputs are large, and the line each model call
prints (the tokens it was sent by gpt-4o's exact counter, the budget, and how many of its leading messages it shares
with the previous call: the prompt cache reads those)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ctxwin import BaseMessage, get_counter

MODEL = "gpt-4o"
BUDGET = 12_000  # tokens a request may use (a small window, to see the fitting at work)
SYSTEM_PROMPT = "You are a build assistant. Read the logs with the tool before answering."
TURNS = 12


def build_log(night: int) -> str:
    """A night's build log: about 1,500 tokens, every fourth night about 6,000."""
    lines = 400 if night % 4 == 3 else 100
    return "\n".join(f"[night {night} step {i}] compiling module_{i % 17}.c ... E{(night * i) % 97} ok"
                     for i in range(lines))


class Calls:
    """Prints each model call: messages, tokens (system prompt and tools included), budget, shared prefix."""

    def __init__(self) -> None:
        self.previous: list[str] = []

    def show(self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] | None, raw: Sequence[Any]) -> None:
        tokens = get_counter(MODEL).count_messages(list(messages), tools=list(tools or []) or None)
        sent = [json.dumps(item, sort_keys=True, default=repr) for item in raw]
        shared = next((i for i, (a, b) in enumerate(zip(sent, self.previous, strict=False)) if a != b),
                      min(len(sent), len(self.previous)))
        self.previous = sent
        print(f"  model call: {len(messages)} messages, {tokens} tokens (budget {BUDGET}), "
              f"{shared} leading items as in the previous call")
