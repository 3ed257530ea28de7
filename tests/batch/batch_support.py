"""Generated conversations for the batch tests: tool calls, several scripts, big tool outputs, and bad rows.

Every conversation is plain data (OpenAI or Anthropic dicts, ``(role, content)`` pairs), generated from a seed, so
the same list can be written to JSONL, put in a Ray Dataset or sent to worker processes.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxwin.batch._shards import Mapped
from ctxwin.messages import BaseMessage
from ctxwin.planner import Plan, fit
from ctxwin.strategies._base import StepContext, StepResult

PHRASES = [
    "the build failed on step three",
    "please check the logs again",
    "数据库连接超时，需要重试",
    "上下文窗口已经满了",
    "ログを確認してください",
    "設定ファイルが見つかりません",
    "이 함수는 두 번 호출됩니다",
    "مرحبا، كيف يمكنني المساعدة",
    "Привет, как дела с релизом?",
    "emoji check 🚀🔥✅",
    'def f(x): return {"k": [1, 2, 3]}',
    "SELECT id, name FROM users WHERE active = 1;",
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the knowledge base",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    }
]

# Rows that no planner accepts, each for its own reason.
BAD_ROWS: list[Any] = [
    [{"role": "ghost", "content": "boo"}],
    [{"role": "user", "content": 42}],
    [{"role": "tool", "content": "orphan result without an id"}],
    42,
    None,
]


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(PHRASES) for _ in range(rng.randint(low, high)))


def _openai(rng: random.Random, turns: int, seed: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.7:
        messages.append({"role": "system", "content": "You are a careful assistant. " + _text(rng, 1, 3)})
    for turn in range(turns):
        messages.append({"role": "user", "content": _text(rng, 1, 8)})
        if rng.random() < 0.5:
            ids = [f"call_{seed}_{turn}_{k}" for k in range(rng.randint(1, 2))]
            calls = [
                {
                    "id": i,
                    "type": "function",
                    "function": {"name": "search", "arguments": json.dumps({"q": _text(rng, 1, 2)})},
                }
                for i in ids
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for i in ids:
                size = rng.choice([(1, 5), (10, 30), (80, 200)])  # some outputs far over any budget share
                messages.append({"role": "tool", "tool_call_id": i, "content": _text(rng, *size)})
        messages.append({"role": "assistant", "content": _text(rng, 1, 10)})
    return messages


def _anthropic(rng: random.Random, seed: int) -> list[dict[str, Any]]:
    call = f"toolu_{seed}"
    return [
        {"role": "user", "content": _text(rng, 2, 6)},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": call, "name": "search", "input": {"q": _text(rng, 1, 1)}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": _text(rng, 30, 120)}]},
        {"role": "user", "content": _text(rng, 1, 4)},
    ]


def conversations(count: int, seed: int = 0, *, bad_every: int = 0) -> list[Any]:
    """``count`` conversations of mixed shapes; with ``bad_every``, every n-th one is a bad row instead."""
    rng = random.Random(seed)
    out: list[Any] = []
    for index in range(count):
        if bad_every and index % bad_every == bad_every - 1:
            out.append(BAD_ROWS[(index // bad_every) % len(BAD_ROWS)])
            continue
        shape = rng.random()
        if shape < 0.7:
            out.append(_openai(rng, rng.randint(1, 12), index))
        elif shape < 0.8:
            out.append(_anthropic(rng, index))
        elif shape < 0.9:
            out.append([("system", "Answer briefly."), ("user", _text(rng, 2, 30))])
        else:
            out.append({"messages": _openai(rng, rng.randint(1, 6), index), "tools": TOOLS})
    return out


def openai_conversations(count: int, seed: int = 0) -> list[list[dict[str, Any]]]:
    """Only OpenAI-format conversations with string content: rows Arrow can store as native structs."""
    rng = random.Random(seed)
    return [_openai(rng, rng.randint(1, 10), index) for index in range(count)]


def expected(conversation: Any, **fit_kwargs: Any) -> Plan | str:
    """What ``fit`` gives for one item: its plan, or the text of the input error it raises.

    ``fit`` reads a request mapping whole: its tools (when it has some) in place of ``tools``.
    """
    try:
        return fit(conversation, **fit_kwargs)
    except (ValueError, TypeError) as exc:
        return str(exc)


class ProcessTag:
    """A strategy that changes nothing and warns which process and which instance applied it (a warning, so that
    it reaches ``plan.summary()``)."""

    name = "process_tag"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        return StepResult(list(messages), warnings=[f"{os.getpid()}:{id(self)}"])


KILL = "kill this worker"
SLOW = "take your time"  # a line its worker maps slowly: a run that must last long enough to be watched


def die_on_marker(item: Any) -> Any:
    """A ``decode`` for ``fit_many`` that kills its process on the marker item, as a crashing tokenizer would."""
    if item == KILL:
        os._exit(70)
    return item


def numbered(number: int, line: bytes) -> Mapped | None:
    """A line mapper for ``map_file``: ``N:text``; blank lines skipped, ``bad`` ones an error, ``fat`` ones
    flagged, the ``KILL`` marker kills its worker process and a ``SLOW`` line takes 5 ms."""
    text = line.decode("utf-8").strip()
    if not text:
        return None
    if text == KILL:
        os._exit(70)
    if text.startswith(SLOW):
        time.sleep(0.005)
    if "bad" in text:
        return Mapped(error=f"bad line {text!r}")
    return Mapped(f"{number}:{text}\n", flagged="fat" in text)


def make_numbered() -> Callable[[int, bytes], Mapped | None]:
    return numbered


EXPLODE = "make the strategy raise"


class Exploding:
    """A strategy that raises an exception no input error is made of, on a conversation that says ``EXPLODE`` (and
    is over budget: the chain runs only then)."""

    name = "exploding"

    def apply(self, messages: list[BaseMessage], context: StepContext) -> StepResult:
        if any(EXPLODE in str(message.content) for message in messages):
            raise RuntimeError(EXPLODE)
        return StepResult(list(messages))


def in_session(session: int) -> list[int]:
    """The live processes (zombies are dead, only not yet reaped) of ``session``: the command's, and every process
    it started, however deep, since none starts a session of its own."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session and fields[0] != "Z":
                found.append(int(entry))
    return found
