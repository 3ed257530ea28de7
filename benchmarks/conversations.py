"""The bench corpus: reproducible synthetic conversations in OpenAI chat format, shared by every benchmark suite.

``generate(kind, n_messages, seed)`` returns exactly ``n_messages`` OpenAI message dicts, a system message first:

- ``agent``: an agent working on a repository: requests, then loops of tool calls (one at a time or in parallel)
  whose results are source files, shell logs (pytest, builds, pip, servers), grep hits, directory listings, JSON
  API responses and database rows, up to tens of thousands of characters, about one in ten an error; then a
  Markdown report.
- ``multilingual``: long chats in English, Chinese, Japanese, Korean or Russian (one main language, sometimes
  switching), the assistant answering in Markdown (headings, lists, tables), now and then a web search.
- ``code``: code-heavy sessions: pasted code, stack traces and logs; answers with code blocks in Python, C,
  JavaScript, TypeScript, Go, Rust, SQL, shell and YAML, and unified diffs; sometimes tests are run or a patch
  applied through tools.

Every tool call is followed at once by its results, one per call, so ``convert_to_messages`` and every ctxwin
consumer accept the output as is. Text comes from the standard library and the ``corpus`` extra
(``conversation_sources``); every choice comes from ``random.Random(int)`` via ``random()`` only, so a seed gives the
same conversation wherever the same texts are installed (across Python versions, only the standard library's files
differ). 100,000 messages take a few seconds.

CLI (one conversation per JSONL line; conversation ``i`` is ``generate(kind, messages, seed + i)``, and ``mixed``
cycles the kinds)::

    python benchmarks/conversations.py --kind agent --messages 200 --count 50 --seed 1 -o out.jsonl
    python benchmarks/conversations.py --standard DIR     # the standard bench set (STANDARD_SET) into DIR
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # the text modules sit beside this file

from conversation_sources import sources
from conversation_text import Text

KINDS = ("agent", "multilingual", "code")
# (file name, kind or "mixed", messages per conversation, conversations): what `ctxwin bench` runs in seconds,
# and the 10,000-message conversations the planner suite fits.
STANDARD_SET = (
    ("agent-200x50.jsonl", "agent", 200, 50),
    ("multilingual-200x50.jsonl", "multilingual", 200, 50),
    ("code-200x50.jsonl", "code", 200, 50),
    ("mixed-200x60.jsonl", "mixed", 200, 60),
    ("agent-10000.jsonl", "agent", 10_000, 1),
    ("multilingual-10000.jsonl", "multilingual", 10_000, 1),
    ("code-10000.jsonl", "code", 10_000, 1),
)
Message = dict[str, Any]

AGENT_SYSTEM = (
    "You are a senior software engineer working as an autonomous coding agent in the repository at "
    "/home/dev/project. Use the tools to inspect files, run commands and query services; never guess file "
    "contents. Tools: read_file(path), run_shell(command), search_code(query, path), list_directory(path), "
    "http_request(method, url), query_database(sql), write_file(path, content). Work in small verified steps, "
    "run the tests after every change, and finish with a short Markdown report of what you changed and why."
)
MULTILINGUAL_SYSTEM = (
    "You are a helpful multilingual assistant. Always answer in the language of the user's last message, using "
    "Markdown: short headings, lists and tables where they help. When you are not sure about a fact, search the "
    "web with web_search(query, language) and cite what you found. Keep a friendly, concise tone."
)
CODE_SYSTEM = (
    "You are an expert programmer and code reviewer. Explain problems precisely, show complete code in fenced "
    "blocks with the language named, prefer unified diffs for changes to existing files, and point out edge "
    "cases and tests. Tools: run_tests(selector), apply_patch(diff), run_python(code)."
)
AGENT_REQUESTS = (
    "The tests in `tests/test_{name}.py` started failing after yesterday's merge. Find out why and fix it.",
    "Can you add retry with exponential backoff to `{name}`? It fails about once an hour against the staging API.",
    "`{name}` is slow on big inputs ({number} MB). Profile it and make it faster without changing its output.",
    "Please upgrade the project to the latest `{package}` and fix whatever breaks.",
    "We get `{exception}` in production from `{name}`; the logs are in /var/log/app. Investigate and patch it.",
    "Write tests for `{name}` covering the error paths, then refactor it so the tests are easier to read.",
    "The nightly job that calls `{name}` produced duplicate rows in the `{table}` table. Clean up and prevent it.",
)
CODE_REQUESTS = (
    "Why does this raise `{exception}`?",
    "Can you review this function? I think `{name}` has an off-by-one somewhere.",
    "How would I write this in {language} instead?",
    "This is slow for large inputs — any idea how to speed up `{name}`?",
    "I get this stack trace when I call `{name}` twice in a row:",
    "Please turn this into a proper module with tests.",
    "What's the idiomatic way to handle errors here?",
)
THOUGHTS = (
    "Let me look at `{name}` first.",
    "I'll run the failing test to see the exact error.",
    "The traceback points at `{name}`; checking how it is called.",
    "Searching for other callers of `{name}` before changing its signature.",
    "That didn't work; trying a different approach.",
    "Checking the service's response format.",
)
EXPLANATIONS = (
    "The problem is in `{name}`: it assumes the input is already validated, so an empty value reaches the parser.",
    "Here is a version that keeps the behaviour but avoids the quadratic loop over `{name}`'s results.",
    "You can express the same thing more directly; note how errors are propagated instead of swallowed.",
    "The stack trace shows the second call reusing state from the first; `{name}` should not keep it globally.",
    "This diff moves the check before the loop and adds a test for the edge case.",
)
EXCEPTION_NAMES = ("KeyError", "ValueError", "TypeError", "TimeoutError", "UnicodeDecodeError", "RecursionError")
TABLES = ("orders", "events", "invoices", "sessions", "audit_log", "payments")
SHELL_COMMANDS: tuple[tuple[tuple[str, Callable[[Text, int], str]], int], ...] = (
    (("pytest -x -q", Text.pytest_log), 40),
    (("tail -n 400 /var/log/app/app.log", Text.app_log), 20),
    (("make -j4", Text.build_log), 15),
    (("pip install -e .[dev]", Text.pip_log), 10),
    (("kubectl logs deploy/api --tail=300", Text.access_log), 15),
)


class _Conversation:
    """A conversation under construction that never grows past ``n`` messages nor leaves a call unanswered."""

    def __init__(self, kind: str, n: int, seed: int) -> None:
        self.text = Text(_random(kind, seed), sources())
        self.n = n
        self.messages: list[Message] = []

    @property
    def room(self) -> int:
        return self.n - len(self.messages)

    def add(self, role: str, content: str) -> None:
        if self.room > 0:
            self.messages.append({"role": role, "content": content})

    def tool_step(self, content: str | None, calls: list[Callable[[], tuple[str, dict[str, Any], str]]]) -> None:
        """An assistant message with ``calls`` (fewer if there is no room for all results) and their results."""
        calls = calls[: max(0, self.room - 1)]
        if not calls:
            return
        made = [(self.text.call_id(), *call()) for call in calls]
        self.messages.append({"role": "assistant", "content": content, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
            for i, name, args, _ in made
        ]})
        self.messages += [{"role": "tool", "tool_call_id": i, "content": result} for i, _, _, result in made]

    def fill(self, template: str) -> str:
        t = self.text
        return template.format(
            name=t.name(), number=t.between(2, 900), package=t.pick(("pydantic", "sqlalchemy", "httpx", "numpy")),
            exception=t.pick(EXCEPTION_NAMES), table=t.pick(TABLES), language=t.pick(("Go", "Rust", "TypeScript")),
        )


def _random(kind: str, seed: int) -> random.Random:
    return random.Random(seed * len(KINDS) + KINDS.index(kind))  # an int seed: stable on every Python version


# --- agent ----------------------------------------------------------------------------------------------------


def _agent_call(c: _Conversation) -> tuple[str, dict[str, Any], str]:
    t = c.text
    tool = t.weighted((("read_file", 25), ("run_shell", 25), ("search_code", 14), ("list_directory", 9),
                       ("http_request", 10), ("query_database", 8), ("write_file", 9)))
    failed = t.chance(0.1)
    if tool == "read_file":
        path, body = t.numbered_file(t.size(1200, 1.0, 200, 40_000))
        return tool, {"path": path}, f"Error: [Errno 2] No such file or directory: '{path}'" if failed else body
    if tool == "run_shell":
        command, log = t.weighted(SHELL_COMMANDS)
        output = log(t, t.size(900, 1.1, 100, 40_000))
        if failed:
            output += f"\n{t.traceback()}\nexit status {t.between(1, 2)}"
        return tool, {"command": command, "timeout": 120}, output
    if tool == "search_code":
        query = t.name()
        return tool, {"query": query, "path": "src/"}, t.grep(t.size(500, 1.0, 60, 20_000))
    if tool == "list_directory":
        return tool, {"path": "src/", "recursive": t.chance(0.3)}, t.listing(t.size(700, 1.0, 100, 30_000))
    if tool == "http_request":
        url = f"https://api.example.com/v2/{t.name().strip('_')}?per_page={t.between(10, 100)}"
        body = t.api_json(t.size(900, 1.0, 150, 40_000))
        error = json.dumps({"error": {"code": 503, "message": "upstream timed out", "retry_after": t.between(1, 60)}})
        return tool, {"method": "GET", "url": url}, error if failed else body
    if tool == "query_database":
        limit = t.between(5, 500)
        sql = f"SELECT id, email, orders, revenue, last_seen FROM customers ORDER BY revenue DESC LIMIT {limit}"
        error = f"ERROR: relation \"{t.pick(TABLES)}\" does not exist\nLINE 1: {sql[:60]}"
        return tool, {"sql": sql}, error if failed else t.rows(t.size(500, 1.0, 100, 20_000))
    path, content = t.numbered_file(t.size(900, 0.8, 200, 10_000))
    source = "\n".join(line.split("\t", 1)[-1] for line in content.splitlines())
    result = f"Error: permission denied: '{path}'" if failed else f"Wrote {len(source.encode())} bytes to {path}"
    return tool, {"path": path, "content": source}, result


def _agent_turn(c: _Conversation) -> None:
    t = c.text
    request = c.fill(t.pick(AGENT_REQUESTS))
    if t.chance(0.2):
        request += "\n\n```\n" + (t.traceback() if t.chance(0.6) else t.app_log(t.size(1200, 0.8, 200, 8000))) + "\n```"
    c.add("user", request)
    for _ in range(1 + int(t.size(3, 0.8, 0, 24))):
        parallel = 1 if t.chance(0.65) else t.between(2, 4)
        thought = c.fill(t.pick(THOUGHTS)) if t.chance(0.45) else None
        c.tool_step(thought, [lambda: _agent_call(c)] * parallel)
    report = t.markdown("en", t.size(700, 0.7, 120, 5000))
    if t.chance(0.3):
        report += "\n\n" + t.fenced(t.size(600, 0.7, 100, 4000), "python")
    c.add("assistant", report)


# --- multilingual -----------------------------------------------------------------------------------------------


def _search(c: _Conversation, language: str) -> Callable[[], tuple[str, dict[str, Any], str]]:
    def call() -> tuple[str, dict[str, Any], str]:
        t = c.text
        hits = [{"title": t.chat(language, 1, 1), "url": f"https://example.org/{t.name().strip('_')}",
                 "snippet": t.prose(language, t.size(200, 0.6, 40, 900))} for _ in range(t.between(2, 6))]
        return "web_search", {"query": t.chat(language, 1, 1), "language": language}, json.dumps(
            {"results": hits}, ensure_ascii=False)

    return call


def _multilingual_turn(c: _Conversation, main: str) -> None:
    t = c.text
    language = main if t.chance(0.85) else t.pick(("en", "zh", "ja", "ko", "ru"))
    question = t.chat(language, 1, 3)
    if t.chance(0.12):
        question += "\n\n" + t.prose(language, t.size(1500, 0.8, 300, 12_000))
    c.add("user", question)
    if t.chance(0.1):
        c.tool_step(None, [_search(c, language)] * t.between(1, 2))
    c.add("assistant", t.markdown(language, t.size(600, 0.8, 60, 8000)))


# --- code -------------------------------------------------------------------------------------------------------


def _code_call(c: _Conversation) -> tuple[str, dict[str, Any], str]:
    t = c.text
    roll = t.rng.random()
    if roll < 0.45:
        return "run_tests", {"selector": f"tests/test_{t.name().strip('_')}.py"}, t.pytest_log(
            t.size(1500, 1.0, 200, 30_000))
    if roll < 0.75:
        diff = t.diff()
        path = diff.splitlines()[0].removeprefix("--- a/")
        result = f"error: patch failed: {path}:{t.between(1, 900)}" if t.chance(0.2) else f"Applied patch to {path}"
        return "apply_patch", {"diff": diff}, result
    _, code = t.code(t.size(500, 0.6, 100, 3000), "python")
    return "run_python", {"code": code}, t.traceback() if t.chance(0.4) else t.app_log(t.size(400, 0.8, 50, 4000))


def _code_turn(c: _Conversation) -> None:
    t = c.text
    question = c.fill(t.pick(CODE_REQUESTS))
    roll = t.rng.random()
    if roll < 0.45:
        question += "\n\n" + t.fenced(t.size(600, 0.8, 100, 8000))
    elif roll < 0.7:
        question += "\n\n```\n" + t.traceback() + "\n```"
    elif roll < 0.8:
        question += "\n\n```diff\n" + t.diff() + "\n```"
    c.add("user", question)
    if t.chance(0.15):
        c.tool_step(c.fill(t.pick(THOUGHTS)) if t.chance(0.5) else None, [lambda: _code_call(c)] * t.between(1, 2))
    parts = [c.fill(t.pick(EXPLANATIONS))]
    for _ in range(t.between(1, 3)):
        parts.append("```diff\n" + t.diff() + "\n```" if t.chance(0.25) else t.fenced(t.size(600, 0.8, 100, 6000)))
        if t.chance(0.5):
            parts.append(t.prose("en", t.size(300, 0.6, 60, 1500)))
    c.add("assistant", "\n\n".join(parts))


# --- API --------------------------------------------------------------------------------------------------------


def generate(kind: str, n_messages: int, seed: int) -> list[Message]:
    """``n_messages`` OpenAI chat dicts of ``kind`` (one of KINDS), a system message first; a seed, one output."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    for label, value, least in (("n_messages", n_messages, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{label} must be an int, got {type(value).__name__}")
        if value < least:
            raise ValueError(f"{label} must be at least {least}, got {value}")
    c = _Conversation(kind, n_messages, seed)
    t = c.text
    if kind == "agent":
        c.add("system", AGENT_SYSTEM)
        while c.room > 0:
            _agent_turn(c)
    elif kind == "multilingual":
        c.add("system", MULTILINGUAL_SYSTEM)
        main = t.weighted((("en", 30), ("zh", 25), ("ja", 15), ("ko", 15), ("ru", 15)))
        while c.room > 0:
            _multilingual_turn(c, main)
    else:
        c.add("system", CODE_SYSTEM)
        while c.room > 0:
            _code_turn(c)
    return c.messages


def conversations(kind: str, n_messages: int, count: int, seed: int) -> Iterator[list[Message]]:
    """``count`` conversations: the i-th is ``generate(kind, n_messages, seed + i)``; ``"mixed"`` cycles KINDS."""
    for i in range(count):
        yield generate(KINDS[i % len(KINDS)] if kind == "mixed" else kind, n_messages, seed + i)


def write_jsonl(path: str, items: Iterator[list[Message]]) -> None:
    out = sys.stdout if path == "-" else open(path, "w", encoding="utf-8")  # noqa: SIM115 - stdout stays open
    try:
        for conversation in items:
            out.write(json.dumps(conversation, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write bench conversations as JSONL (one conversation per line).")
    parser.add_argument("--kind", choices=[*KINDS, "mixed"], default="mixed")
    parser.add_argument("--messages", type=int, default=200, help="messages per conversation (default 200)")
    parser.add_argument("--count", type=int, default=1, help="number of conversations (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first conversation (default 0)")
    parser.add_argument("-o", "--output", default="-", help="JSONL file to write (default: stdout)")
    parser.add_argument("--standard", metavar="DIR", help="write the standard bench set into DIR instead")
    args = parser.parse_args(argv)
    for flag, value, least in (("--messages", args.messages, 1), ("--count", args.count, 0), ("--seed", args.seed, 0)):
        if value < least:
            parser.error(f"{flag} must be at least {least}, got {value}")
    if args.standard:
        Path(args.standard).mkdir(parents=True, exist_ok=True)
        for name, kind, messages, count in STANDARD_SET:
            write_jsonl(str(Path(args.standard) / name), conversations(kind, messages, count, args.seed))
    else:
        write_jsonl(args.output, conversations(args.kind, args.messages, args.count, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
