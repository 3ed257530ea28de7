"""ModelSpec: what ctxwin knows about a model (context window, output limit, token counter), and the lenient name
resolution that finds it from names copied from providers and gateways.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxwin._errors import InvalidInputError, InvalidTypeError
from ctxwin.counters._caching import CachingRules

_SNAPSHOT_SUFFIX = re.compile(
    r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|\d{2}-\d{2}|\d{3})|-latest|-preview|-exp|-v\d+(?::\d+)?|-\d+:\d+)$"
)
# Real ids stack at most three (``-preview-05-20``; ``-20241022-v2:0``); a bound keeps any input linear.
_MAX_SUFFIXES = 4
# Provider and gateway prefixes (LiteLLM's, OpenRouter's, pydantic-ai's ``openai:``, Gemini's ``models/``); a
# gateway may stack them (``openrouter/anthropic/...``).
_PREFIX = re.compile(
    r"^(?:(?:openai|anthropic|azure|azure_ai|bedrock|bedrock_converse|vertex_ai|gemini|google|openrouter|deepseek"
    r"|together_ai|groq|fireworks_ai|ollama|mistral|mistralai|models)/"
    r"|(?:openai|anthropic|google-gla|google-vertex|bedrock|azure):)+"
)
# Bedrock model ids: an optional cross-region inference prefix, then the vendor (``us.anthropic.claude-...``).
_BEDROCK_VENDOR = re.compile(r"^(?:(?:us|eu|apac|au|jp|us-gov|global)\.)?(?:anthropic|openai|meta|mistral|deepseek)\.")
# OpenRouter's variants (``:free``, ``:thinking``, ``:beta``...) and dotted Claude versions (``claude-3.5-sonnet``).
_VARIANT = re.compile(r":[a-z][a-z-]*$")
_CLAUDE_DOT = re.compile(r"(?<=\d)\.(?=\d)")


@dataclass(frozen=True)
class FigureSource:
    """Where one of a model's figures comes from. ``figure``: ``"context_window"``, ``"max_output_tokens"``,
    ``"prices"``, ``"caching"`` or ``"counter"``; ``source``: ``"genai-prices 0.2.5"`` (the installed package's data),
    ``"genai-prices, fetched <time> from <url>"`` (after ``refresh_model_data``), ``"ctxwin"`` (its own table), or a
    plugin's name; ``date``: ``YYYY-MM-DD``, when the figure took effect (a price's start date) or was read, "" when
    the source gives none."""

    figure: str
    source: str
    date: str = ""


@dataclass(frozen=True)
class ModelSpec:
    """A model: ``counter`` is a spec for ``get_counter`` (``"tiktoken:o200k_base"``, ``"approximate:safe"``...).

    ``note`` says anything a user should know about how it is counted (shown by ``ctxwin models``). ``caching`` is
    how the provider caches prompt prefixes and its prices (``ctxwin.counters._caching``), None when unknown.
    ``tokenizer``: the generation of the provider's own tokenizer where models of one family differ (Claude:
    ``"claude-3"`` up to Opus 4.6, ``"claude-4.7"`` from Opus 4.7, ``"claude-5"``), "" when the counter says it;
    a measured ratio of the provider's counts to the counter's holds for one generation only. ``sources``: where each
    figure comes from (``FigureSource``; ``get_model`` fills them for the built-in models and those genai-prices
    knows).
    """

    name: str
    context_window: int
    max_output_tokens: int
    counter: str
    aliases: tuple[str, ...] = ()
    note: str = ""
    caching: CachingRules | None = None
    tokenizer: str = ""
    sources: tuple[FigureSource, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidInputError(f"ModelSpec.name must be a non-empty string, got {self.name!r}")
        for field in ("context_window", "max_output_tokens"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InvalidInputError(f"ModelSpec {self.name!r}: {field} must be a positive int, got {value!r}")
        if self.max_output_tokens > self.context_window:
            raise InvalidInputError(
                f"ModelSpec {self.name!r}: max_output_tokens {self.max_output_tokens} exceeds context_window "
                f"{self.context_window}"
            )
        if not isinstance(self.counter, str) or not self.counter.strip():
            raise InvalidInputError(f"ModelSpec {self.name!r}: counter must be a counter spec string, got "
                                    f"{self.counter!r}")
        if isinstance(self.aliases, str) or not all(isinstance(a, str) and a for a in self.aliases):
            raise InvalidInputError(f"ModelSpec {self.name!r}: aliases must be a tuple of non-empty strings")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        if isinstance(self.sources, FigureSource) or not all(isinstance(s, FigureSource) for s in self.sources):
            raise InvalidTypeError(f"ModelSpec {self.name!r}: sources must be a tuple of FigureSource")
        object.__setattr__(self, "sources", tuple(self.sources))
        if self.caching is not None and not isinstance(self.caching, CachingRules):
            raise InvalidTypeError(
                f"ModelSpec {self.name!r}: caching must be a CachingRules, got {type(self.caching).__name__}"
            )

    @property
    def approximate(self) -> bool:
        """True when no exact tokenizer backs this model."""
        return self.counter.split(":", 1)[0] == "approximate"

    @property
    def exact(self) -> bool:
        """True when the model's own tokenizer counts it: not estimated (``approximate``, or ``estimate:`` another
        model's tokenizer with a margin), and its data ships (Mistral models whose tokenizer mistral-common does not
        ship have the counter ``mistral:unshipped``, which refuses to count)."""
        return not self.approximate and not self.counter.startswith("estimate:") and not self.counter.endswith(
            ":unshipped")

    def source_of(self, figure: str) -> FigureSource | None:
        """Where ``figure`` comes from (``sources``), None when not recorded."""
        return next((source for source in self.sources if source.figure == figure), None)


def base_name(name: str) -> str:
    """``name`` lower-cased, without provider prefix, fine-tune wrapper, Bedrock region and vendor, Azure spelling
    or gateway variant: the provider's own model name (a snapshot suffix is kept)."""
    lowered = _PREFIX.sub("", name.strip().lower())
    if lowered.startswith("ft:") and len(lowered.split(":")) > 1:
        lowered = lowered.split(":")[1]
    lowered = _BEDROCK_VENDOR.sub("", lowered)
    if not _SNAPSHOT_SUFFIX.search(lowered):  # ``-v2:0`` is a Bedrock version, not a variant
        lowered = _VARIANT.sub("", lowered)
    lowered = lowered.replace("gpt-35-", "gpt-3.5-")  # Azure cannot have dots in deployment names
    return _CLAUDE_DOT.sub("-", lowered) if lowered.startswith("claude-") else lowered


def name_candidates(name: str) -> list[str]:
    """The names to try, in order, when looking ``name`` up: itself, lower-cased, its base name (``base_name``),
    then that name with its snapshot suffixes removed one by one; for a Hub repo id (``deepseek-ai/DeepSeek-V3``,
    ``owner/name``), the same for the name without its owner, last, so a registered repo id wins."""
    lowered = base_name(name)
    candidates = [name, name.lower(), *_undated(lowered)]
    if "/" in lowered:
        candidates += _undated(lowered.rsplit("/", 1)[1])
    return list(dict.fromkeys(candidates))


def _undated(lowered: str) -> list[str]:
    """``lowered``, then without its snapshot suffixes, one by one."""
    found = [lowered]
    for _ in range(_MAX_SUFFIXES):
        undated = _SNAPSHOT_SUFFIX.sub("", lowered)
        if undated == lowered:
            break
        found.append(undated)
        lowered = undated
    return found
