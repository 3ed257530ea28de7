"""Texts and tools shared by the Llama and Qwen family tests: chatterbot-corpus dialog lines in a dozen languages and
scripts, plus the strings where tokenizers differ (runs of spaces and newlines, digits, combining marks, emoji,
code, special-token text)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import yaml

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

LANGUAGES = ("english", "chinese", "japanese", "korean", "russian", "ukrainian", "persian", "hindi", "thai",
             "german", "french", "portuguese", "turkish", "hebrew", "bengali", "traditionalchinese", "tamil")
EDGE_CASES = [
    "", " ", "hello world", "   leading and trailing   ", "a\n\n\nb\r\n\tc", "x" + " " * 37 + "y", "1234567890 3.14159",
    "naïve café — e\u0301cole, A\u030a, 한국어", "emoji 👩‍👩‍👧‍👦 🇫🇷 ✅", "def f(x):\n    return x ** 2  # sq\n",
    "<|eot_id|> <|begin_of_text|> <|im_end|> <|endoftext|>", "I'm sure they'll've DONE IT'S", "//path/to/file.py\n",
    "\u200b\u00a0zero width and nbsp", "ALLCAPS and camelCaseWords and snake_case_words",
]
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city. Données météo.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. 東京"},
            "unit": {"type": "string", "enum": ["c", "f"]},
        }, "required": ["city"]},
    }},
    {"type": "function", "function": {"name": "now", "description": "Current time", "parameters": {}}},
]


def multilingual_texts(per_language: int = 12) -> list[str]:
    """``per_language`` dialog lines of each language chatterbot-corpus ships, then the edge cases."""
    spec = importlib.util.find_spec("chatterbot_corpus")
    assert spec is not None and spec.submodule_search_locations, "the corpus extra installs chatterbot-corpus"
    root = Path(next(iter(spec.submodule_search_locations))) / "data"
    texts: list[str] = []
    for language in LANGUAGES:
        lines: list[str] = []
        for path in sorted((root / language).glob("*.yml")):
            for dialog in yaml.safe_load(path.read_text(encoding="utf-8")).get("conversations") or []:
                lines.extend(str(line) for line in dialog)
            if len(lines) >= per_language:
                break
        texts.extend(lines[:per_language])
    return texts + EDGE_CASES


# Chats every family's framing test starts from: a bare turn, a system prompt with mixed scripts, a tool call and its
# result between Cyrillic and Devanagari turns; each family's test adds the cases its own framing treats specially.
CHATS: list[list[BaseMessage]] = [
    [HumanMessage("Hi")],
    [SystemMessage("Be brief. Antworte auf Deutsch."), HumanMessage("Wie spät ist es in 東京?")],
    [
        SystemMessage("You are a weather bot."),
        HumanMessage("Погода в Киеве?"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Київ", "unit": "c"}, "id": "c1"}]),
        ToolMessage('{"temp": 21, "sky": "☀"}', tool_call_id="c1", name="get_weather"),
        AIMessage("21 °C and sunny."),
        HumanMessage("और दिल्ली?"),
    ],
]
