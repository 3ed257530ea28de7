"""Long conversations with planted facts, built from the test's own text (no corpus package): a chat, an agent with
tool outputs (logs, JSON, source code), and a multilingual chat; facts stated by the user, the assistant or a tool."""

from __future__ import annotations

import json
import random

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

SENTENCES = {
    "en": ["The deployment went fine but the dashboard still shows stale numbers.",
           "Could you look at why the nightly export is slower than last week?",
           "I think the cache is not invalidated when the settings change.",
           "We tried restarting the workers and it helped for a while.",
           "Here is what I would check first, in order of how likely each cause is.",
           "That explains the spikes we saw in the afternoon."],
    "zh": ["部署完成了，但是仪表盘上的数字还是旧的。", "你能看看为什么夜间导出比上周慢吗？",
           "我觉得设置更改后缓存没有失效。", "我们重启了工作进程，暂时有所好转。"],
    "ja": ["デプロイは成功しましたが、ダッシュボードの数字がまだ古いです。",
           "夜間のエクスポートが先週より遅い理由を調べてもらえますか？",
           "設定を変更してもキャッシュが無効化されていないようです。"],
}
FACTS = [
    ("My ticket is {v}, please keep it in mind.", "user", lambda r: f"INC-{r.randint(10_000, 99_999)}"),
    ("btw the order number is {v}", "user", lambda r: f"{r.randint(100, 999)}-{r.randint(1_000_000, 9_999_999)}"),
    ("Die Rechnung über {v} ist noch offen.", "user", lambda r: f"€{r.randint(10, 99)},{r.randint(100, 999)}.50"),
    ("请记住，服务器是 {v}。", "user", lambda r: f"db-prod-{r.randint(10, 99)}.billing.internal"),
    ("念のため：期限は{v}です。", "user", lambda r: f"2026-0{r.randint(1, 9)}-{r.randint(10, 28)}"),
    ("Noted: the release is {v}.", "assistant", lambda r: f"v{r.randint(2, 9)}.{r.randint(0, 40)}.0-rc1"),
    ("[warn] contact set to {v}", "tool", lambda r: f"oncall.{r.randint(100, 999)}@example.org"),
    ("export written to {v}", "tool", lambda r: f"/srv/exports/ledger_{r.randint(1000, 9999)}.csv"),
]


def _prose(r: random.Random, language: str, n: int) -> str:
    return " ".join(r.choice(SENTENCES[language]) for _ in range(n))


def _log(r: random.Random, lines: int) -> str:
    return "\n".join(
        f"2026-03-{r.randint(10, 28)}T{r.randint(10, 23)}:{r.randint(10, 59)}:{r.randint(10, 59)} "
        f"INFO worker-{r.randint(1, 8)} processed batch {r.randint(1, 99_999)} in {r.randint(5, 900)} ms"
        for _ in range(lines)
    )


def _code(r: random.Random, lines: int) -> str:
    names = ["load_config", "parse_rows", "flush_cache", "retry_request", "build_index"]
    return "\n".join(
        f"    result_{r.randint(1, 99)} = {r.choice(names)}(items[{r.randint(0, 9)}], timeout={r.randint(1, 60)})"
        for _ in range(lines)
    )


def _search(r: random.Random, hits: int) -> str:
    hit = lambda: {"title": _prose(r, "en", 1), "url": f"https://example.com/page/{r.randint(1, 10**6)}",  # noqa: E731
                   "score": round(r.random(), 3)}
    return json.dumps({"results": [hit() for _ in range(hits)]}, indent=1)


def planted(seed: int, style: str, turns: int = 30, facts: int = 8) -> tuple[list[BaseMessage], list[str]]:
    """A conversation of ``style`` ("chat", "agent" or "multilingual") and the facts planted in its first 70%."""
    r = random.Random(seed)
    languages = ["en"] if style != "multilingual" else ["en", "zh", "ja"]
    messages: list[BaseMessage] = [SystemMessage("You are a helpful operations assistant.", id="sys")]
    for t in range(turns):
        language = r.choice(languages)
        messages.append(HumanMessage(_prose(r, language, r.randint(1, 3)), id=f"u{t}"))
        if style == "agent":
            for k in range(r.randint(1, 3)):
                call = f"c{t}_{k}"
                tool = r.choice(["read_logs", "read_file", "search"])
                calls = [{"name": tool, "args": {"q": f"x{t}"}, "id": call}]
                messages.append(AIMessage("", tool_calls=calls, id=f"a{t}_{k}"))
                body = {"read_logs": _log, "read_file": _code, "search": _search}[tool](r, r.randint(5, 20))
                messages.append(ToolMessage(body, tool_call_id=call, name=tool, id=f"r{call}"))
        messages.append(AIMessage(_prose(r, language, r.randint(3, 12)), id=f"b{t}"))
    cut = int(len(messages) * 0.7)
    values: list[str] = []
    for n in range(facts):
        template, who, make = FACTS[(seed + n) % len(FACTS)]
        value = make(r)
        values.append(value)
        sentence = template.format(v=value)
        if who == "tool" and style == "agent":
            at = r.choice([i for i, m in enumerate(messages[:cut]) if isinstance(m, ToolMessage)])
            lines = messages[at].text.split("\n")
            lines.insert(r.randint(1, len(lines)), sentence)
            messages[at] = messages[at].model_copy(update={"content": "\n".join(lines)})
            continue
        kind = AIMessage if who == "assistant" else HumanMessage
        at = r.choice([i for i, m in enumerate(messages[1:cut], 1) if type(m) is kind and m.text])
        messages[at] = messages[at].model_copy(update={"content": f"{messages[at].text}\n\n{sentence}"})
    return messages, values
