"""The flags of ``FitConfig``'s options, generated from its fields (one option, one kebab-case flag), and ``--config
FILE``; a bad value is refused by ``FitConfig``'s own checks and reported as the usage error of its flag or file.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.cli._budgets import parse_budget
from ctxwin.cli._io import read_tools
from ctxwin.cli._output import error, usage_error
from ctxwin.planner._config import CACHE_TTLS, FitConfig, read_options
from ctxwin.planner._config_file import SUMMARIZERS
from ctxwin.planner._option_error import OptionError


class _Unset:
    """A flag's value ``none``: the option set to None (its default, or off), overriding the file's value."""

    def __repr__(self) -> str:
        return "none"


NONE = _Unset()


def flag_of(option: str) -> str:
    return "--" + option.replace("_", "-")


def flag_names(option: str) -> str:
    """The option's flag and its long aliases, as argparse names them in its own errors (``--reserve-output/
    --reserve``)."""
    flag = FLAGS.get(option)
    aliases = (*flag.aliases, *(("--summarize",) if option == "summarizer" else ())) if flag else ()
    return "/".join((flag_of(option), *(alias for alias in aliases if alias.startswith("--"))))


def nonempty(parse: Callable[[str], Any], expected: str) -> Callable[[str], Any]:
    """An argparse ``type``: ``parse`` of a value that is not empty (an empty value is a usage error naming the
    flag: a script whose variable is unset must not run with the default), its ValueError shown as argparse's."""

    def checked(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"expected {expected}, got an empty value")
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc) or f"expected {expected}, got {text!r}") from None

    checked.__name__ = expected  # argparse names the type in its messages
    return checked


def text_value(expected: str) -> Callable[[str], Any]:
    return nonempty(str, expected)


def _count(text: str) -> int:
    try:
        count = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        count = -1
    if count < 0:
        raise InvalidInputError(f"expected a whole number, 0 or more, got {text!r}")
    return count


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InvalidInputError(f"expected a number such as 0.5, got {text!r}") from None


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise InvalidInputError(f"{text!r} has an empty name; separate names with commas")
    return names


def _tool_choice(text: str) -> Any:
    """``auto``, ``required``, ``none``, a tool's name, or a JSON object in any provider's form."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"not a JSON object: {exc}") from None
    return text


def _or_none(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    return lambda text: NONE if text.strip().lower() == "none" else parse(text)


@dataclass(frozen=True)
class Flag:
    """How a command line writes one option: the help text, and where the option's type is not enough, how a value
    is read (``parse``, with what it ``expected``s), aliases, choices and the value's name in ``--help``."""

    help: str
    parse: Callable[[str], Any] | None = None
    expected: str = ""
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] | None = None
    metavar: str | None = None


@dataclass(frozen=True)
class OptionFlag:
    """One option's flag as added: ``parse`` None is an on/off switch (with its ``--no-`` form)."""

    help: str
    parse: Callable[[str], Any] | None
    expected: str
    aliases: tuple[str, ...]
    choices: tuple[str, ...] | None
    metavar: str | None


_TOKENS = "a number of tokens"

# Each option's help, and what its type does not say. An option missing here still gets a flag, read by its type.
FLAGS: dict[str, Flag] = {
    "model": Flag("the model to fit for (see `ctxwin models`)", expected="a model name", aliases=("-m",)),
    "context_window": Flag("the context window (8000, 8k); at most the model's",
                           lambda text: parse_budget(text, what="amount"), _TOKENS, metavar="TOKENS"),
    "reserve_output": Flag("tokens reserved for the reply, written as the request's reply limit (default: the "
                           "request's own limit, else a share of the model's max output)",
                           lambda text: parse_budget(text, what="amount", zero=True), _TOKENS, ("--reserve",),
                           metavar="TOKENS"),
    "safety_margin": Flag("tokens kept free for the counter's error (default: 0 for an exact counter)",
                          lambda text: parse_budget(text, what="amount", zero=True), _TOKENS, metavar="TOKENS"),
    "counter": Flag("a counter spec instead of the model's (see `ctxwin counters`)", expected="a counter spec",
                    aliases=("-c",)),
    "tools": Flag("a JSON file with the tool definitions sent with the request", str, "a file name",
                  metavar="FILE"),
    "tool_choice": Flag("auto, required, none, a tool's name, or a JSON object in any provider's form",
                        _tool_choice, "a tool choice"),
    "cache_control": Flag("mark cache breakpoints in Anthropic (or GPT-5.6 on) requests"),
    "strategies": Flag("comma-separated strategies, e.g. truncate_tool_output,trim (see `ctxwin strategies`)",
                       _names, "strategy names", ("--strategy",), metavar="NAMES"),
    "summarizer": Flag("summarise older turns with this summarizer (offline: extractive)", str,
                       "a summarizer name", choices=tuple(SUMMARIZERS)),
    "keep_last": Flag("summarise older turns, keeping at least the last N messages verbatim",
                      expected="a number of messages", metavar="N"),
    "strict": Flag("exit 3 (-o left as it was) when a conversation does not fit"),
    "broken_tool_pairs": Flag("drop: repair orphan tool results and unanswered calls; keep: send them",
                              choices=("drop", "keep")),
    "cache_stable": Flag("sessions: keep the prompt cache, appending between cuts (--no-cache-stable: refit)"),
    "low_water": Flag("sessions: the share of the input budget a cut plans down to (none: chosen per cut)",
                      metavar="SHARE"),
    "tool_output_cap": Flag("sessions: a new tool output over this share of the input budget is cut on arrival",
                            metavar="SHARE"),
    "keep_first": Flag("sessions: the most of the input budget the head a cut keeps may take (none: no head)",
                       metavar="SHARE"),
    "head_fill": Flag("sessions: the least share of the input budget the head fills (none: chosen)", metavar="SHARE"),
    "expected_gap": Flag("sessions: the seconds expected between requests, which choose the cache lifetime",
                         metavar="SECONDS"),
    "cache_ttl": Flag("sessions: the cache lifetime every write asks for (default: chosen from the gap)",
                      choices=CACHE_TTLS),
    "cache_key": Flag("sessions: the prompt_cache_key of OpenAI requests", expected="a cache key"),
    "recall_share": Flag("the share of the input budget recalled excerpts may take (0: no recall)", metavar="SHARE"),
    "ledger_share": Flag("the share of the input budget the ledger of rules, limits, facts, goals and preferences may "
                         "take when a plan leaves something out (0: no ledger)", metavar="SHARE"),
}


def _option_flag(option: str, annotation: str) -> OptionFlag:
    """``option``'s flag: ``FLAGS``'s line over what its declared type says (bool: a switch; int, float: a number,
    ``none`` for None where the option takes it; anything else: text)."""
    flag = FLAGS.get(option) or Flag(f"FitConfig's {option} (docs/planner.md)")
    kind = annotation.split("|")[0].strip()
    parse: Callable[[str], Any] | None = {"bool": None, "int": _count, "float": _number}.get(kind, str)
    expected = {"int": "a whole number", "float": "a number such as 0.5"}.get(kind, "a value")
    if parse in (_count, _number) and "None" in annotation:
        parse, expected = _or_none(parse), f"{expected}, or none"
    metavar = flag.metavar or (None if flag.choices else {"int": "N", "float": "NUMBER"}.get(kind, option.upper()))
    return OptionFlag(flag.help, flag.parse or parse, flag.expected or expected, flag.aliases, flag.choices,
                      metavar)


def option_flags(skip: Collection[str] = ()) -> dict[str, OptionFlag]:
    """Every ``FitConfig`` option but ``skip``, with its flag, in the order the fields are declared."""
    return {
        field.name: _option_flag(field.name, str(field.type))
        for field in dataclasses.fields(FitConfig)
        if field.name not in skip
    }


def add_options(
    parser: argparse.ArgumentParser, skip: Collection[str] = (), helps: Mapping[str, str] | None = None
) -> None:
    """``--config FILE`` and a flag for each option but ``skip`` (``helps``: the command's own help for some); each
    flag's ``dest`` is the option's name and its value None unless given."""
    parser.add_argument(
        "--config", type=text_value("a file name"), metavar="FILE",
        help="a FitConfig as TOML or JSON (docs/planner.md, \"Configuration file\"); flags given override it",
    )
    group = parser.add_argument_group("options (FitConfig's, docs/planner.md)")
    flags = option_flags(skip)
    parser.set_defaults(option_flags=frozenset(flags))
    for option, flag in flags.items():
        names = [flag_of(option), *flag.aliases]
        help_text = (helps or {}).get(option, flag.help)
        if flag.parse is None:
            group.add_argument(*names, dest=option, action=argparse.BooleanOptionalAction, default=None,
                               help=help_text)
            continue
        group.add_argument(*names, dest=option, type=nonempty(flag.parse, flag.expected), choices=flag.choices,
                           metavar=flag.metavar, help=help_text)
        if option == "summarizer":  # the older switch: the built-in summarizer
            group.add_argument("--summarize", dest=option, action="store_const", const="extractive",
                               help="--summarizer extractive: summarise older turns (offline, extractive)")


def given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options the command line gave (of those ``add_options`` added), as ``FitConfig``'s values (``none``:
    None)."""
    given = {}
    for option in args.option_flags:
        value = getattr(args, option, None)
        if value is not None:
            given[option] = None if value is NONE else value
    return given


@dataclass
class Options:
    """The options of a run: those of ``--config`` (``file``) with the flags given (``flags``) laid over them."""

    file: dict[str, Any]
    flags: dict[str, Any]

    @property
    def merged(self) -> dict[str, Any]:
        return {**self.file, **self.flags}

    def where(self, option: str, args: argparse.Namespace) -> str:
        """What gave ``option``: its flag, else ``--config FILE``."""
        return flag_names(option) if option in self.flags or args.config is None else f"--config {args.config}"


def read_run_options(args: argparse.Namespace, ignore: Collection[str] = ()) -> Options | int:
    """The file's options (but ``ignore``: what the command does not use) and the flags given; the exit code after
    reporting a file that cannot be read (the tools file of ``--tools`` is read here too: a bad one is bad input,
    exit 1)."""
    file: dict[str, Any] = {}
    if args.config is not None:
        try:
            file = read_options(args.config)
        except (TypeError, ValueError) as exc:  # unreadable, or an unknown option: the file names it
            return usage_error(args.parser, "--config", exc)
        file = {key: value for key, value in file.items() if key not in ignore}
    flags = given_options(args)
    if "tools" in flags:
        try:
            flags["tools"] = read_tools(flags["tools"])
        except ValueError as exc:
            return error(exc)
    if "summarizer" in flags:
        flags["summarizer"] = SUMMARIZERS[flags["summarizer"]]
    return Options(file, flags)


def build_config(options: Options, args: argparse.Namespace, **fixed: Any) -> FitConfig | int:
    """``FitConfig`` of the options and ``fixed`` (what the command decides); the exit code after reporting what
    it refused as the usage error of the flag, or the file, that gave it."""
    try:
        return FitConfig(**{**options.merged, **fixed})
    except OptionError as exc:
        return usage_error(args.parser, options.where(exc.option, args), exc)
    except (TypeError, ValueError) as exc:
        return usage_error(args.parser, "--config" if args.config else "options", exc)
