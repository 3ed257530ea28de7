"""The pieces bench conversations are made of: prose, Markdown answers, code, diffs, tracebacks, logs, JSON, listings.

Each piece is cut from the real text in ``conversation_sources`` or filled into a template, with every choice drawn
from the caller's ``random.Random`` through ``random()`` alone (the one method whose sequence Python promises to keep
across versions for an int seed), never from hash order. A seed therefore gives the same conversation wherever the
same source texts are installed; across Python versions only the standard library's own files differ.
"""

from __future__ import annotations

import difflib
import json
import math
import random
import textwrap
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from conversation_sources import STDLIB_PREFIX, CodeChunk, Sources

T = TypeVar("T")

HEADINGS = {
    "en": ("Summary", "Details", "Example", "Next steps", "Notes", "Background"),
    "zh": ("总结", "详细说明", "示例", "下一步", "注意事项", "背景"),
    "ja": ("まとめ", "詳細", "例", "次のステップ", "注意点", "背景"),
    "ko": ("요약", "자세한 내용", "예시", "다음 단계", "참고 사항", "배경"),
    "ru": ("Итоги", "Подробности", "Пример", "Следующие шаги", "Примечания", "Контекст"),
}
TABLE_HEADERS = {
    "en": ("Item", "Value", "Comment"),
    "zh": ("项目", "数值", "备注"),
    "ja": ("項目", "値", "コメント"),
    "ko": ("항목", "값", "설명"),
    "ru": ("Пункт", "Значение", "Комментарий"),
}
EXCEPTIONS = (
    ("KeyError", "'{name}'"),
    ("ValueError", "invalid literal for int() with base 10: '{name}'"),
    ("TypeError", "{name}() missing 1 required positional argument: 'path'"),
    ("AttributeError", "'NoneType' object has no attribute '{name}'"),
    ("FileNotFoundError", "[Errno 2] No such file or directory: 'data/{name}.json'"),
    ("json.decoder.JSONDecodeError", "Expecting value: line 1 column {number} (char {number})"),
    ("AssertionError", "assert {number} == {other}"),
    ("ConnectionRefusedError", "[Errno 111] Connection refused"),
    ("TimeoutError", "timed out after {number} seconds"),
    ("sqlite3.OperationalError", "no such table: {name}"),
    ("UnicodeDecodeError", "'utf-8' codec can't decode byte 0xe4 in position {number}: invalid continuation byte"),
)
PACKAGES = (
    "requests", "httpx", "pydantic", "fastapi", "uvicorn", "sqlalchemy", "alembic", "numpy", "pandas", "pytest",
    "rich", "click", "jinja2", "redis", "celery", "boto3", "orjson", "tenacity", "structlog", "typer",
)
# Short templated snippets for languages the standard library has no source for; {name} is a real identifier.
_SNIPPET_SOURCES = {
    "javascript": (
        """
        export async function {camel}(client, options = {{}}) {{
          const response = await client.get(`/api/v1/{name}`, {{ params: options }});
          if (!response.ok) {{
            throw new Error(`{name} failed: ${{response.status}}`);
          }}
          return response.data.items.map((item) => ({{ ...item, fetchedAt: Date.now() }}));
        }}""",
        """
        const {camel}Cache = new Map();

        function {camel}(key) {{
          if ({camel}Cache.has(key)) return {camel}Cache.get(key);
          const value = compute{pascal}(key);
          {camel}Cache.set(key, value);
          return value;
        }}""",
    ),
    "typescript": (
        """
        interface {pascal}Options {{
          limit?: number;
          cursor?: string | null;
        }}

        export function {camel}(items: readonly string[], {{ limit = {number} }}: {pascal}Options = {{}}): string[] {{
          return items.filter((item) => item.length > 0).slice(0, limit);
        }}""",
    ),
    "go": (
        """
        func {pascal}(ctx context.Context, db *sql.DB, id int64) (*{pascal}Result, error) {{
        \trow := db.QueryRowContext(ctx, `SELECT id, name, updated_at FROM {name} WHERE id = $1`, id)
        \tvar r {pascal}Result
        \tif err := row.Scan(&r.ID, &r.Name, &r.UpdatedAt); err != nil {{
        \t\treturn nil, fmt.Errorf("{name}: %w", err)
        \t}}
        \treturn &r, nil
        }}""",
    ),
    "rust": (
        """
        pub fn {name}(input: &str) -> Result<Vec<u32>, ParseIntError> {{
            input
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::parse::<u32>)
                .collect()
        }}""",
    ),
    "sql": (
        """
        SELECT u.id, u.email, count(o.id) AS orders, sum(o.total) AS revenue
        FROM users AS u
        LEFT JOIN {name} AS o ON o.user_id = u.id AND o.created_at >= now() - interval '{number} days'
        GROUP BY u.id, u.email
        HAVING count(o.id) > 0
        ORDER BY revenue DESC
        LIMIT 50;""",
        """
        CREATE TABLE IF NOT EXISTS {name} (
            id BIGSERIAL PRIMARY KEY,
            owner_id BIGINT NOT NULL REFERENCES users(id),
            payload JSONB NOT NULL DEFAULT '{{}}',
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE INDEX ON {name} (owner_id, created_at DESC);""",
    ),
    "bash": (
        """
        #!/usr/bin/env bash
        set -euo pipefail

        for f in src/{name}/*.py; do
          python -m py_compile "$f" || echo "syntax error in $f" >&2
        done
        pytest -q -k {name} --maxfail={number}""",
    ),
    "yaml": (
        """
        services:
          {name}:
            image: ghcr.io/example/{name}:1.{number}
            environment:
              LOG_LEVEL: info
              WORKERS: "{number}"
            ports:
              - "8{number}:8000"
            depends_on: [db, redis]""",
    ),
}
SNIPPETS = {language: tuple(textwrap.dedent(t).strip() for t in texts) for language, texts in _SNIPPET_SOURCES.items()}
CODE_LANGUAGES = (  # (language, weight) for fenced blocks in code answers
    ("python", 45), ("c", 8), ("javascript", 10), ("typescript", 6), ("go", 6), ("rust", 6), ("sql", 8),
    ("bash", 6), ("yaml", 5),
)
_EPOCH = datetime(2025, 3, 12, 9, 0, 0)
_TEST_RESULTS = "......F....s..........x.....F.........s......." * 3  # pytest's progress letters


class Text:
    """Makes text pieces from one random stream; build one per conversation."""

    def __init__(self, rng: random.Random, src: Sources) -> None:
        self.rng = rng
        self.src = src
        self.clock = _EPOCH

    # --- choices --------------------------------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, items: Sequence[T]) -> T:
        return items[int(self.rng.random() * len(items))]

    def weighted(self, pairs: Sequence[tuple[T, int]]) -> T:
        point = self.rng.random() * sum(w for _, w in pairs)
        for item, weight in pairs:
            point -= weight
            if point < 0:
                return item
        return pairs[-1][0]

    def between(self, low: int, high: int) -> int:
        return low + int(self.rng.random() * (high - low + 1))

    def size(self, median: int, sigma: float, low: int, high: int) -> int:
        """A log-normal size in characters: most near ``median``, a long tail up to ``high``."""
        u = max(self.rng.random(), 1e-12)
        z = math.sqrt(-2 * math.log(u)) * math.cos(2 * math.pi * self.rng.random())  # Box-Muller
        return max(low, min(high, int(median * math.exp(sigma * z))))

    def name(self) -> str:
        return self.pick(self.src.identifiers)

    def call_id(self) -> str:
        return f"call_{int(self.rng.random() * 2**48):012x}{int(self.rng.random() * 2**48):012x}"

    def timestamp(self) -> str:
        self.clock += timedelta(seconds=self.between(0, 90), milliseconds=self.between(0, 999))
        return self.clock.isoformat(timespec="milliseconds")

    # --- prose ----------------------------------------------------------------------------------------------

    def lines(self, pool: Sequence[str], size: int, separator: str = "\n") -> str:
        """Consecutive lines of ``pool`` from a random start until ``size`` characters."""
        start, parts, total = int(self.rng.random() * len(pool)), [], 0
        while total < size:
            line = pool[(start + len(parts)) % len(pool)]
            parts.append(line)
            total += len(line) + len(separator)
        return separator.join(parts)

    def chat(self, language: str, low: int = 1, high: int = 3) -> str:
        pool = self.src.chat[language]
        return " ".join(self.pick(pool) for _ in range(self.between(low, high)))

    def prose(self, language: str, size: int) -> str:
        return self.lines(self.src.prose[language], size, "\n\n" if language == "en" else "\n")

    def markdown(self, language: str, size: int) -> str:
        """An assistant answer: headings, paragraphs, lists, sometimes a table, a quote or inline code."""
        parts: list[str] = []
        total = 0
        while total < size:
            section = [f"## {self.pick(HEADINGS[language])}", self.prose(language, self.size(300, 0.6, 60, 1500))]
            roll = self.rng.random()
            if roll < 0.35:
                section.append("\n".join(f"- {self.chat(language, 1, 1)}" for _ in range(self.between(2, 6))))
            elif roll < 0.5:
                section.append("\n".join(f"{i}. **{self.chat(language, 1, 1)}**" for i in range(1, self.between(3, 6))))
            elif roll < 0.62:
                header = TABLE_HEADERS[language]
                rows = [f"| {self.chat(language, 1, 1)} | {self.between(1, 9999)} | {self.chat(language, 1, 1)} |"
                        for _ in range(self.between(2, 6))]
                section.append("\n".join([f"| {' | '.join(header)} |", "|---|---:|---|", *rows]))
            elif roll < 0.72:
                section.append(f"> {self.chat(language, 1, 2)}")
            elif roll < 0.8:
                section.append(f"`{self.name()}()` — {self.chat(language, 1, 1)}")
            block = "\n\n".join(section)
            parts.append(block)
            total += len(block)
        return "\n\n".join(parts)

    # --- code -------------------------------------------------------------------------------------------------

    def source(self, chunks: Sequence[CodeChunk], size: int) -> tuple[CodeChunk, str]:
        """Consecutive chunks of one file from a random chunk on, until ``size`` characters or the file ends."""
        index = int(self.rng.random() * len(chunks))
        first, parts, total = chunks[index], [], 0
        while index < len(chunks) and chunks[index].path == first.path and total < size:
            parts.append(chunks[index].text)
            total += len(chunks[index].text)
            index += 1
        return first, "\n\n\n".join(parts)

    def snippet(self, language: str) -> str:
        name = self.name().strip("_") or "handler"
        words = name.split("_")
        pascal = "".join(w[:1].upper() + w[1:] for w in words)
        return self.pick(SNIPPETS[language]).format(
            name=name, camel=pascal[:1].lower() + pascal[1:], pascal=pascal, number=self.between(2, 90),
        )

    def code(self, size: int, language: str | None = None) -> tuple[str, str]:
        """(language, code) in one of several languages; Python and C are real source, the rest templates."""
        language = language or self.weighted(CODE_LANGUAGES)
        if language == "c" and not self.src.c:
            language = "python"
        if language in ("python", "c"):
            _, text = self.source(self.src.python if language == "python" else self.src.c, size)
            return language, text
        return language, "\n\n".join(self.snippet(language) for _ in range(max(1, size // 600)))

    def fenced(self, size: int, language: str | None = None) -> str:
        language, text = self.code(size, language)
        return f"```{language}\n{text}\n```"

    def diff(self) -> str:
        """A unified diff of real code: an added guard, sometimes a changed call or a removed line."""
        chunk, text = self.source(self.src.python, self.size(1200, 0.5, 300, 4000))
        before = text.splitlines()
        after = list(before)
        for edit in range(self.between(1, 3)):
            at = self.between(1, max(1, len(after) - 1))
            roll = 0.0 if edit == 0 else self.rng.random()  # the first edit always adds lines: never an empty diff
            indent = after[at - 1][: len(after[at - 1]) - len(after[at - 1].lstrip())]
            if roll < 0.4:
                after.insert(at, f"{indent}if {self.name()} is None:  # guard added")
                after.insert(at + 1, f"{indent}    raise ValueError('{self.name()} must be set')")
            elif roll < 0.7 and at < len(after):
                after[at] = after[at].replace("self", "self._owner", 1).replace("(", "(*, ", 1)
            elif at < len(after):
                del after[at]
        path = chunk.path
        diff = "\n".join(difflib.unified_diff(before, after, f"a/{path}", f"b/{path}", lineterm="", n=3))
        return diff or self.diff()  # later edits undid the first (deleted the added lines): draw another

    def traceback(self) -> str:
        frames = [self.pick(self.src.frames) for _ in range(self.between(2, 9))]
        kind, template = self.pick(EXCEPTIONS)
        lines = ["Traceback (most recent call last):"]
        for frame in frames:
            lines += [f'  File "{frame.path}", line {frame.line}, in {frame.function}', f"    {frame.text}"]
        message = template.format(name=self.name(), number=self.between(1, 5000), other=self.between(1, 5000))
        return "\n".join([*lines, f"{kind}: {message}"])

    # --- tool outputs ---------------------------------------------------------------------------------------

    def _grow(self, size: int, line: Callable[[], str]) -> str:
        out: list[str] = []
        total = 0
        while total < size:
            text = line()
            out.append(text)
            total += len(text) + 1
        return "\n".join(out)

    def numbered_file(self, size: int) -> tuple[str, str]:
        """``cat -n`` of part of a real file: (path, text)."""
        chunk, text = self.source(self.src.python, size)
        lines = text.splitlines()
        return chunk.path, "\n".join(f"{chunk.line + i:6d}\t{line}" for i, line in enumerate(lines))

    def grep(self, size: int) -> str:
        def match() -> str:
            frame = self.pick(self.src.frames)
            return f"{frame.path.removeprefix(STDLIB_PREFIX)}:{frame.line}:    {frame.text}"

        return self._grow(size, match)

    def listing(self, size: int) -> str:
        def entry() -> str:
            chunk = self.pick(self.src.python)
            when = (_EPOCH - timedelta(minutes=self.between(0, 600_000))).strftime("%b %d %H:%M")
            return f"-rw-r--r--  1 dev dev {self.between(120, 180_000):>8} {when} {chunk.path}"

        return f"total {self.between(8, 4000)}\n" + self._grow(size, entry)

    def pytest_log(self, size: int) -> str:
        module = self.name().strip("_")
        head = ("============================= test session starts ==============================\n"
                "platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0\nrootdir: /home/dev/project\n"
                f"configfile: pyproject.toml\ncollected {self.between(20, 900)} items\n")
        def line() -> str:
            start = self.between(0, len(_TEST_RESULTS) - 40)
            return f"tests/test_{self.name().strip('_')}.py {_TEST_RESULTS[start:start + self.between(5, 40)]}"

        body = self._grow(size // 2, line)
        failure = (f"\n\n=================================== FAILURES ===================================\n"
                   f"___________________________ test_{module} ___________________________\n\n"
                   + self.traceback())
        failed, passed = self.between(1, 5), self.between(20, 800)
        tail = (f"\n=========================== short test summary info ============================\n"
                f"FAILED tests/test_{module}.py::test_{self.name().strip('_')}\n"
                f"============ {failed} failed, {passed} passed in {self.between(1, 90)}.{self.between(10, 99)}s "
                "============")
        return head + body + failure + tail

    def app_log(self, size: int) -> str:
        def line() -> str:
            level = self.weighted((("INFO", 70), ("DEBUG", 15), ("WARNING", 10), ("ERROR", 5)))
            text = f"{self.timestamp()} {level:<7} [{self.name()}] {self.chat('en', 1, 1)}"
            if level == "ERROR" and self.chance(0.3):
                text += "\n" + self.traceback()
            return text

        return self._grow(size, line)

    def access_log(self, size: int) -> str:
        def line() -> str:
            status = self.weighted(((200, 80), (304, 8), (404, 6), (500, 3), (401, 3)))
            return (f'10.0.{self.between(0, 255)}.{self.between(1, 254)} - - [{self.timestamp()}] '
                    f'"GET /api/v1/{self.name().strip("_")}?page={self.between(1, 40)} HTTP/1.1" {status} '
                    f'{self.between(80, 90_000)} "-" "python-httpx/0.27.0"')

        return self._grow(size, line)

    def build_log(self, size: int) -> str:
        def line() -> str:
            if self.src.c and self.chance(0.3):
                chunk = self.pick(self.src.c)
                return (f"{chunk.path}:{chunk.line + self.between(0, 20)}:{self.between(1, 40)}: warning: unused "
                        f"variable '{self.name()}' [-Wunused-variable]")
            percent = self.between(0, 100)
            return f"[{percent:3d}%] Building C object CMakeFiles/core.dir/src/{self.name().strip('_')}.c.o"

        return self._grow(size, line)

    def pip_log(self, size: int) -> str:
        def line() -> str:
            package = self.pick(PACKAGES)
            version = f"{self.between(0, 9)}.{self.between(0, 30)}.{self.between(0, 9)}"
            return (f"Collecting {package}>={version}\n  Downloading {package}-{version}-py3-none-any.whl "
                    f"({self.between(12, 900)} kB)")

        return self._grow(size, line) + f"\nSuccessfully installed {' '.join(PACKAGES[:self.between(2, 12)])}"

    def api_json(self, size: int) -> str:
        """A JSON API response: issues, search hits or metrics, indented or compact."""
        style = self.between(0, 2)

        def issue() -> dict[str, Any]:
            return {"id": self.between(10_000, 9_999_999), "number": self.between(1, 9000),
                    "title": self.chat("en", 1, 1), "state": self.pick(("open", "closed")),
                    "labels": [self.name() for _ in range(self.between(0, 3))],
                    "user": {"login": self.name().strip("_"), "id": self.between(1, 99_999)},
                    "created_at": self.timestamp(), "comments": self.between(0, 40),
                    "body": self.prose("en", self.size(250, 0.8, 40, 2000))}

        def hit() -> dict[str, Any]:
            return {"score": round(self.rng.random(), 4), "url": f"https://docs.example.com/{self.name()}",
                    "snippet": self.chat(self.pick(("en", "zh", "ja")), 1, 2)}

        def point() -> dict[str, Any]:
            return {"ts": self.timestamp(), "cpu": round(self.rng.random() * 100, 2),
                    "mem_mb": self.between(100, 16_000), "host": f"worker-{self.between(1, 64)}"}

        make = (issue, hit, point)[style]
        items: list[dict[str, Any]] = []
        total = 0
        while total < size:
            items.append(make())
            total += len(json.dumps(items[-1], ensure_ascii=False))
        payload = {"total_count": len(items) + self.between(0, 500), "items": items}
        return json.dumps(payload, ensure_ascii=False, indent=2 if self.chance(0.5) else None)

    def rows(self, size: int) -> str:
        """A database result as JSON rows."""
        def row() -> dict[str, Any]:
            return {"id": self.between(1, 10**6), "email": f"{self.name().strip('_')}@example.com",
                    "orders": self.between(0, 120), "revenue": round(self.rng.random() * 10_000, 2),
                    "last_seen": self.timestamp()}

        out: list[dict[str, Any]] = []
        total = 0
        while total < size:
            out.append(row())
            total += len(json.dumps(out[-1]))
        return json.dumps(out)
