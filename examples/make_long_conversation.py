"""Regenerate examples/long_conversation.json: a long agent session in English and Chinese, with tool calls,
a large tool output (a build log) and code. Deterministic: `python examples/make_long_conversation.py`."""

from __future__ import annotations

import json
import random
from pathlib import Path

rng = random.Random(7)
TOPICS = [
    ("Why does the nightly build fail on the ARM runners?", "我们的夜间构建在 ARM 机器上失败了，能帮忙看看原因吗？"),
    ("Summarise the flaky tests from last week.", "请总结上周不稳定的测试用例，并按模块分类。"),
    ("Draft a migration plan from Python 3.9 to 3.12.", "请起草一个从 Python 3.9 升级到 3.12 的迁移计划。"),
    ("Which dependencies pin an old version of numpy?", "哪些依赖把 numpy 固定在了旧版本？"),
]
LOG_LINES = [
    "[{t}] INFO  compiling module core/{m}.c (-O2 -march=armv8-a)",
    "[{t}] WARN  deprecated API used in src/{m}.py:{n}: use asyncio.run instead",
    "[{t}] INFO  test_{m}.py::test_case_{n} PASSED",
    "[{t}] ERROR test_{m}.py::test_case_{n} FAILED: AssertionError: expected 0.1 + 0.2 == 0.3",
    "[{t}] DEBUG cache miss for wheel {m}-{n}.0-cp312-cp312-linux_aarch64.whl",
]
MODULES = ["parser", "tokenizer", "planner", "cache", "io", "net", "render"]


def log(lines: int) -> str:
    return "\n".join(
        rng.choice(LOG_LINES).format(t=f"02:{i // 60:02d}:{i % 60:02d}", m=rng.choice(MODULES), n=rng.randint(1, 400))
        for i in range(lines)
    )


conversation: list[dict[str, object]] = [
    {
        "role": "system",
        "content": "You are a build engineer's assistant. Answer in the user's language; cite tool output.",
    }
]
call = 0
for turn in range(18):
    english, chinese = TOPICS[turn % len(TOPICS)]
    conversation.append({"role": "user", "content": chinese if turn % 2 else english})
    if turn % 3 == 0:
        call += 1
        call_id = f"call_{call:03d}"
        args = {"job": f"nightly-{turn}", "lines": 400 if turn == 0 else 60}
        conversation.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "fetch_ci_log", "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        conversation.append({"role": "tool", "tool_call_id": call_id, "content": log(args["lines"])})
    reply = (
        "构建失败的主要原因是 aarch64 上的浮点精度断言；建议改用 math.isclose，并为 ARM 单独缓存 wheel。"
        if turn % 2
        else "The failures come from an exact float comparison; use math.isclose and cache aarch64 wheels.\n"
        "```python\nimport math\nassert math.isclose(0.1 + 0.2, 0.3)\n```"
    )
    conversation.append({"role": "assistant", "content": reply})
conversation.append({"role": "user", "content": "好的，请把修复步骤写成一个检查清单（中英文各一份）。"})

path = Path(__file__).with_name("long_conversation.json")
path.write_text(json.dumps(conversation, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
print(f"wrote {path} ({len(conversation)} messages)")
