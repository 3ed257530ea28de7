"""``FitConfig``: every option of the planner and its sessions, declared, validated and documented once; ``FitOptions``
is the same options as a TypedDict, only so that ``**options`` is typed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from typing_extensions import Self, TypedDict

from ctxwin._errors import InvalidTypeError
from ctxwin.counters import get_model
from ctxwin.counters._base import TokenCounter
from ctxwin.counters._lookup import check_counter_spec
from ctxwin.messages._forms import Output
from ctxwin.messages._request_forms.registry import is_output, outputs
from ctxwin.messages._tool_forms import check_tool_choice
from ctxwin.planner._cache_marks import check_cache_control, checked_gap
from ctxwin.planner._config_file import file_value, read_file, read_value, write_file
from ctxwin.planner._option_error import OptionError
from ctxwin.strategies import get_strategy_factory
from ctxwin.strategies._base import Strategy

BrokenToolPairs = Literal["drop", "keep"]

# ``fit``'s model when none is named.
DEFAULT_MODEL = "gpt-4o"

# The most of the input budget the head a session's cut keeps may take: room for the task and first findings, yet
# most of the budget left for recent turns (docs/sessions-measurements.md has the measurements).
DEFAULT_KEEP_FIRST = 0.3

# The most of the input budget query-aware recall's excerpts may take (docs/recall.md has the measurements).
DEFAULT_RECALL_SHARE = 0.1

# The most of the input budget the ledger's block may take (benchmarks/README.md, "Ledger", has the measurements).
DEFAULT_LEDGER_SHARE = 0.15

# The options a session reads (``Planner.session`` takes only these, and ``cache_control``).
SESSION_OPTIONS = frozenset(
    {"cache_stable", "low_water", "tool_output_cap", "keep_first", "head_fill", "cache_control", "expected_gap",
     "cache_ttl", "cache_key"}
)
# The cache lifetimes providers take (Anthropic's, OpenAI's); a session checks the one given against its model's.
CACHE_TTLS = ("5m", "1h", "30m", "12h")


@dataclass(frozen=True)
class FitConfig:
    """How conversations are fitted: the model and budget, the strategies, the output form, and the sessions'
    cache options. Immutable and validated when built (the names it is given too: model, counter, strategies, and
    the window against the model's; a refused value is an ``OptionError`` naming its option); ``FitConfig.of(config,
    **options)`` and ``config.replace(**changes)`` make new ones, ``FitConfig.load(path)`` and ``config.save(path)``
    read and write a TOML or JSON file. docs/planner.md has the same table with examples.

    Budget: ``model``, a registered model name (its counter, context window and max output; ``fit``'s default is
    ``"gpt-4o"``). ``context_window``: the model's window, in tokens (required without a model). ``reserve_output``:
    tokens kept for the reply (default: a request's own limit, else ``default_reserve`` of the model's max output;
    the reply limit the request carries).
    ``safety_margin``: tokens kept free for the counter's error (default 0 for an exact counter, else the counter's
    ``max_relative_error`` times the input budget). The input budget is the window less the three and the tools.
    ``counter``: a ``TokenCounter`` or a registered counter name (default: the model's).

    Request: ``tools`` (OpenAI function, Responses, Anthropic or LangChain tools, counted in the budget and sent in
    the output's form) and ``tool_choice`` (any provider's form). ``output``: the form of ``Plan.messages``:
    ``"messages"`` (the caller's), ``"openai"``, ``"responses"``, ``"anthropic"``, or ``"request"`` (the form each
    whole request came in). ``request_model``: the ``model`` ``Plan.request`` names, where the provider's id differs
    from ``model`` (None: ``model``). ``cache_control``: mark cache breakpoints in ``Plan.request``: Anthropic's
    ``cache_control`` (``output="anthropic"``) or OpenAI's ``prompt_cache_breakpoint`` (``"openai"``/
    ``"responses"``, for models that take them, GPT-5.6 on); None, the default: sessions mark them, one-off plans
    do not.

    Strategies: ``strategies``, Strategy objects or registered names (or one name; default: ``clear_reasoning``,
    ``filter``, ``truncate_tool_output``, ``summarize`` when a ``summarizer`` or ``keep_last`` is given, ``trim``).
    ``summarizer``: a callable ``list[BaseMessage] -> str`` for the summarize step. ``keep_last``: keep at least the
    last N messages verbatim (a warning says when the budget could not). A ``Summarize`` in ``strategies`` takes
    ``summarizer`` and ``keep_last`` where it leaves its own unset. ``strict``: raise ``BudgetExceeded`` when
    the conversation cannot fit. ``broken_tool_pairs``: ``"drop"`` repairs orphan tool results and unanswered calls,
    ``"keep"`` sends them as they are (both warn).

    Sessions (``Planner.session``, the LangChain integrations): ``cache_stable`` (default True) keeps the
    provider's prompt cache, False plans every turn as ``Planner.plan``. ``low_water``: the share of the input
    budget a cut plans down to (0 < low_water <= 1; None: chosen per cut from how long the user turns are).
    ``tool_output_cap``: in agent runs, a new tool output over this share of the input budget is cut to it on
    arrival, once (None: never). ``keep_first``: the most of the input budget the head a cut keeps may take
    (0 < keep_first <= 1, default ``DEFAULT_KEEP_FIRST``; None: no head). ``head_fill``: the least share of the
    input budget the head fills with the tools and system prompt (0 <= head_fill < keep_first; None: chosen at the
    first cut). ``expected_gap``: the seconds expected between a session's requests, which choose the lifetime its
    cache writes ask for (None: measured between plans; docs/sessions.md). ``cache_ttl``: one of the model's cache
    lifetimes for every write, ``"5m"``/``"1h"`` (Anthropic) or ``"30m"``/``"12h"`` (OpenAI) (None: chosen from
    the gap). ``cache_key``: the ``prompt_cache_key`` a session's OpenAI requests carry (None: one made per session
    for the models that route by it).


    Recall (docs/recall.md): ``recall_share``, when the steps left something out and the newest user message (or an
    agent round's newest tool call) relates to it, the most relevant excerpts come back, within this share of the
    input budget, in a user-side message where the kept conversation starts (a session between cuts: right before
    the new user message); ``Plan.recalled`` names them and the query (0 <= recall_share < 1, default
    ``DEFAULT_RECALL_SHARE``; 0: never).

    Ledger (docs/planner.md, "The ledger"): ``ledger_share``, when a plan leaves out anything, the rules, limits,
    facts, goal state and preferences the conversation told and the request no longer says go in one block after
    the system prompt (and a session's head), within this share of the input budget (least recent facts leave
    first, rules last); ``Plan.ledger`` lists them (0 <= ledger_share < 1, default ``DEFAULT_LEDGER_SHARE``; 0:
    no ledger).
    """

    model: str | None = None
    context_window: int | None = None
    reserve_output: int | None = None
    safety_margin: int | None = None
    counter: TokenCounter | str | None = None
    tools: Sequence[Any] | None = None
    tool_choice: Any = None
    output: Output = "messages"
    request_model: str | None = None
    cache_control: bool | None = None
    strategies: Sequence[Strategy | str] | str | None = None
    summarizer: Any = None
    keep_last: int | None = None
    strict: bool = False
    broken_tool_pairs: BrokenToolPairs = "drop"
    cache_stable: bool = True
    low_water: float | None = None
    tool_output_cap: float | None = None
    keep_first: float | None = DEFAULT_KEEP_FIRST
    head_fill: float | None = None
    expected_gap: float | None = None
    cache_ttl: str | None = None
    cache_key: str | None = None
    recall_share: float = DEFAULT_RECALL_SHARE
    ledger_share: float = DEFAULT_LEDGER_SHARE

    def __new__(cls, *args: Any, **options: Any) -> Self:
        # Before the generated ``__init__``, whose TypeError for a misspelt option names no close match.
        known_options(options)
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for name in ("context_window", "reserve_output", "safety_margin", "keep_last"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise OptionError(name, f"{name} must be a non-negative int, got {value!r}")
        if self.model is not None and not isinstance(self.model, str):
            raise InvalidTypeError(f"model must be a registered model name (a str), got {type(self.model).__name__}")
        if not is_output(self.output):
            raise OptionError("output", f"output must be one of {', '.join(map(repr, outputs()))}, got {self.output!r}")
        if self.request_model is not None and (not isinstance(self.request_model, str)
                                               or not self.request_model.strip()):
            raise OptionError("request_model", f"request_model must be the provider's model id (a non-empty str), or "
                              f"None (the model's name), got {self.request_model!r}")
        if self.broken_tool_pairs not in ("drop", "keep"):
            raise OptionError("broken_tool_pairs",
                              f"broken_tool_pairs must be 'drop' or 'keep', got {self.broken_tool_pairs!r}")
        if self.cache_control is not None:  # the model's side is checked where it is known (check_cache_control)
            with _naming("cache_control"):
                check_cache_control(self.cache_control, self.output, None, self.model, model_known=False)
        with _naming("expected_gap"):
            checked_gap(self.expected_gap)
        if self.cache_ttl is not None and self.cache_ttl not in CACHE_TTLS:
            raise OptionError("cache_ttl", f"cache_ttl must be None (chosen from the gap between requests) or one of "
                              f"{', '.join(map(repr, CACHE_TTLS))}, got {self.cache_ttl!r}")
        if self.cache_key is not None and (not isinstance(self.cache_key, str) or not self.cache_key.strip()):
            raise OptionError("cache_key", f"cache_key must be a non-empty string (the prompt_cache_key), or None, "
                              f"got {self.cache_key!r}")
        if self.summarizer is not None and not callable(self.summarizer):
            raise InvalidTypeError(f"summarizer must be callable (list[BaseMessage] -> str), got {self.summarizer!r}")
        if self.tool_choice is not None:
            with _naming("tool_choice"):
                check_tool_choice(self.tool_choice)
        for name in ("strict", "cache_stable"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidTypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.low_water is not None and not _share(self.low_water):
            raise OptionError("low_water", f"low_water must be a share of the input budget, 0 < low_water <= 1, or "
                              f"None (chosen per cut), got {self.low_water!r}")
        for name, off in (("recall_share", "recall"), ("ledger_share", "ledger")):
            share = getattr(self, name)
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1:
                raise OptionError(name, f"{name} must be a share of the input budget, 0 <= {name} < 1 (0: no {off}), "
                                  f"got {share!r}")
        _optional_share("tool_output_cap", self.tool_output_cap, "no cap")
        _optional_share("keep_first", self.keep_first, "a cut keeps no head")
        fill = self.head_fill
        if fill is not None:
            if isinstance(fill, bool) or not isinstance(fill, (int, float)) or not 0 <= fill < 1:
                raise OptionError("head_fill",
                                  f"head_fill must be a share of the input budget, 0 <= head_fill < 1, got {fill!r}")
            if fill and (self.keep_first is None or fill >= self.keep_first):
                raise OptionError("head_fill", f"head_fill ({fill!r}) fills a head that keep_first bounds: it needs "
                                  f"a larger keep_first (got keep_first={self.keep_first!r})")
        self._check_names()

    def _check_names(self) -> None:
        """The model, counter and strategies named exist, and the window and reserve fit the model: checked here,
        as a config is made, so a misspelt name is reported with its close matches before anything is planned."""
        spec = None
        if self.model is not None:
            with _naming("model"):
                spec = get_model(self.model)
        if isinstance(self.counter, str):
            with _naming("counter"):
                check_counter_spec(self.counter)
        names = [self.strategies] if isinstance(self.strategies, str) else self.strategies
        if isinstance(names, Sequence):
            for i, item in enumerate(names):
                if isinstance(item, str):
                    with _naming("strategies", f"strategies[{i}]: "):
                        get_strategy_factory(item)
        window = self.context_window
        if spec is not None and window is not None and window > spec.context_window:
            raise OptionError("context_window", window_above_model(window, spec.name, spec.context_window))
        window = window if window is not None else spec.context_window if spec is not None else None
        if window is not None and self.reserve_output is not None and self.reserve_output >= window:
            raise OptionError("reserve_output", f"reserve_output ({self.reserve_output}) must be smaller than the "
                              f"context window ({window}): it leaves no room for the input")

    @classmethod
    def of(cls, config: FitConfig | None = None, /, **options: Any) -> FitConfig:
        """``config``'s options (or the defaults) with ``options`` instead; TypeError naming an unknown option."""
        known_options(options)
        if config is None:
            return cls(**options)
        if not isinstance(config, FitConfig):
            raise InvalidTypeError(f"config must be a FitConfig, got {type(config).__name__}")
        return dataclasses.replace(config, **options) if options else config

    def replace(self, **changes: Any) -> FitConfig:
        """This configuration with ``changes`` (validated again)."""
        return FitConfig.of(self, **changes)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FitConfig:
        """The configuration a TOML or JSON file holds (by its suffix; docs/planner.md, "Configuration file"):
        one key per option, a summarizer by name (``"extractive"``); errors name the file and the option."""
        name, options = os.fspath(path), read_options(path)
        try:
            return cls(**options)
        except OptionError as exc:
            raise OptionError(exc.option, f"{name}: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{name}: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the options that differ from the defaults to a TOML or JSON file (by its suffix), which ``load``
        reads back equal (tools in OpenAI's form). OptionError naming the option for what a file cannot hold: a
        summarizer other than the built-in one, a counter or a strategy object that is not its registered name's
        default, a null in TOML."""
        options = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is not field.default and (type(value) is not type(field.default) or value != field.default):
                options[field.name] = file_value(field.name, value)
        write_file(options, path)


_NAMES = frozenset(field.name for field in dataclasses.fields(FitConfig))
# The options whose None is not their default (``keep_first``: None is no head): a file writes that None as false.
_OFF_BY_NONE = frozenset(
    field.name for field in dataclasses.fields(FitConfig) if field.default is not None and "None" in str(field.type)
)


def read_options(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The options a TOML or JSON file holds, as ``FitConfig``'s keyword arguments (``read_value``); ValueError or
    TypeError naming the file for one that cannot be read or holds an unknown option."""
    data = read_file(path)
    name = os.fspath(path)
    known_options(data, f"{name}: ")
    try:
        return {key: read_value(key, value, off_by_none=key in _OFF_BY_NONE) for key, value in data.items()}
    except OptionError as exc:
        raise OptionError(exc.option, f"{name}: {exc}") from None


# Other libraries' names for an option (LangChain's and the providers' ``max_tokens``), named in the error.
_OTHER_NAMES = {"max_tokens": ["context_window", "reserve_output"], "reserve": ["reserve_output"]}


def known_options(options: Mapping[str, Any], where: str = "") -> None:
    """TypeError naming the first option that is not a ``FitConfig`` field, with its close matches."""
    unknown = sorted(set(options) - _NAMES)
    if unknown:
        close = _OTHER_NAMES.get(unknown[0]) or difflib.get_close_matches(unknown[0], sorted(_NAMES), n=3)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise InvalidTypeError(f"{where}unknown option {unknown[0]!r}{hint}; the options are FitConfig's fields")


@contextlib.contextmanager
def _naming(option: str, prefix: str = "") -> Iterator[None]:
    """A ValueError from a check of ``option`` raised as the ``OptionError`` naming it."""
    try:
        yield
    except ValueError as exc:
        raise OptionError(option, f"{prefix}{exc}") from None


def window_above_model(window: int, model: str, limit: int) -> str:
    """Why a ``context_window`` above the model's own is refused."""
    return (f"context_window {window:,} is more than {model}'s context window of {limit:,}, so the provider would "
            f"refuse what fits it; give at most {limit:,}")


class FitOptions(TypedDict, total=False):
    """``FitConfig``'s fields as keyword options, for typing ``**options`` (``model``, ``strategies`` and ``output``
    are parameters of their own); documented on ``FitConfig``."""

    context_window: int | None
    reserve_output: int | None
    safety_margin: int | None
    counter: TokenCounter | str | None
    tools: Sequence[Any] | None
    tool_choice: Any
    request_model: str | None
    cache_control: bool | None
    summarizer: Any
    keep_last: int | None
    strict: bool
    broken_tool_pairs: BrokenToolPairs
    cache_stable: bool
    low_water: float | None
    tool_output_cap: float | None
    keep_first: float | None
    head_fill: float | None
    expected_gap: float | None
    cache_ttl: str | None
    cache_key: str | None
    recall_share: float
    ledger_share: float


def _share(value: object) -> TypeGuard[float]:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 < value <= 1


def _optional_share(name: str, value: object, none: str) -> None:
    """OptionError naming ``name`` unless ``value`` is a share of the input budget or None (``none``)."""
    if value is not None and not _share(value):
        raise OptionError(name, f"{name} must be a share of the input budget, 0 < {name} <= 1, or None ({none}), "
                         f"got {value!r}")
