"""ModelSpec: what ctxwin knows about a model — its context window, output limit and token counter.

Names resolve leniently, the way providers name snapshots: case-insensitively, through aliases, with an OpenAI
fine-tune id (``ft:gpt-4o-mini-2024-07-18:org::id``) resolving to its base model, and a dated snapshot
(``gpt-4o-2024-08-06``, ``gpt-4-0613``, ``claude-3-5-sonnet-20241022``, ``...@20240620``, ``...-latest``) to the
undated family when the snapshot itself is not registered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SNAPSHOT_SUFFIX = re.compile(r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4})|-latest|-preview)$")


@dataclass(frozen=True)
class ModelSpec:
    """A model: ``counter`` is a spec for ``get_counter`` (``"tiktoken:o200k_base"``, ``"approximate:safe"``...).

    ``note`` says anything a user should know about how it is counted (shown by ``ctxwin models``).
    """

    name: str
    context_window: int
    max_output_tokens: int
    counter: str
    aliases: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"ModelSpec.name must be a non-empty string, got {self.name!r}")
        for field in ("context_window", "max_output_tokens"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"ModelSpec {self.name!r}: {field} must be a positive int, got {value!r}")
        if self.max_output_tokens > self.context_window:
            raise ValueError(
                f"ModelSpec {self.name!r}: max_output_tokens {self.max_output_tokens} exceeds context_window "
                f"{self.context_window}"
            )
        if not isinstance(self.counter, str) or not self.counter.strip():
            raise ValueError(f"ModelSpec {self.name!r}: counter must be a counter spec string, got {self.counter!r}")
        if isinstance(self.aliases, str) or not all(isinstance(a, str) and a for a in self.aliases):
            raise ValueError(f"ModelSpec {self.name!r}: aliases must be a tuple of non-empty strings")
        object.__setattr__(self, "aliases", tuple(self.aliases))

    @property
    def approximate(self) -> bool:
        """True when no exact tokenizer backs this model."""
        return self.counter.split(":", 1)[0] == "approximate"


def name_candidates(name: str) -> list[str]:
    """The names to try, in order, when looking ``name`` up: itself, lower-cased, base of a fine-tune, undated."""
    candidates = [name, name.lower()]
    lowered = name.lower()
    if lowered.startswith("ft:") and len(lowered.split(":")) > 1:
        lowered = lowered.split(":")[1]
        candidates.append(lowered)
    while (undated := _SNAPSHOT_SUFFIX.sub("", lowered)) != lowered:
        candidates.append(undated)
        lowered = undated
    return list(dict.fromkeys(candidates))
