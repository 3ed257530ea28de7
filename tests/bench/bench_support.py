"""Conversations for the bench tests: hand-built ones where the right answer is obvious, and generated ones."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_openai_messages

WORDS = ["alpha", "beta", "gamma", "delta", "数据", "模型", "上下文", "窗口", "json", '{"k":', "[1,", "2]}", "def"]


def turn(i: int, *, tool: bool = False) -> list[BaseMessage]:
    """User turn ``i``: a question, optionally a tool call and its result, and an answer; ids say which turn."""
    out: list[BaseMessage] = [HumanMessage(f"question {i}", id=f"u{i}")]
    if tool:
        call = {"name": "search", "args": {"q": f"q{i}"}, "id": f"call{i}"}
        out.append(AIMessage("", tool_calls=[call], id=f"c{i}"))
        out.append(ToolMessage(f"result {i}", tool_call_id=f"call{i}", id=f"r{i}"))
    out.append(AIMessage(f"answer {i}", id=f"a{i}"))
    return out


def generated(seed: int, turns: int | None = None) -> list[BaseMessage]:
    """A chat with a system prompt, tool calls (some parallel) and large tool outputs, mixed scripts."""
    rng = random.Random(seed)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    out: list[BaseMessage] = [SystemMessage("You are helpful. " + text(15), id="sys")]
    for t in range(turns if turns is not None else rng.randint(1, 25)):
        out.append(HumanMessage(text(rng.randint(3, 40)), id=f"u{t}"))
        if rng.random() < 0.4:
            calls = [{"name": "search", "args": {"q": text(2)}, "id": f"call{t}_{k}"} for k in range(rng.randint(1, 3))]
            out.append(AIMessage(text(rng.randint(0, 5)), tool_calls=calls, id=f"c{t}"))
            out.extend(
                ToolMessage(text(rng.choice([20, 200, 1500])), tool_call_id=c["id"], id=f"r{c['id']}") for c in calls
            )
        out.append(AIMessage(text(rng.randint(3, 80)), id=f"a{t}"))
    return out


def write_jsonl(path: Path, conversations: list[list[BaseMessage]], extra_lines: Sequence[str] = ()) -> Path:
    """One conversation per line in OpenAI format, then ``extra_lines`` as they are."""
    lines = [json.dumps(convert_to_openai_messages(c), ensure_ascii=False) for c in conversations]
    path.write_text("\n".join([*lines, *extra_lines]) + "\n", encoding="utf-8")
    return path
