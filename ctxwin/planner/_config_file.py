"""A ``FitConfig``'s options in a TOML or JSON file, read and written; what a file cannot hold is refused by name.
TOML is written here: a config's values need no general TOML writer.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.counters import get_counter
from ctxwin.counters._base import TokenCounter
from ctxwin.messages._tool_forms import openai_tools
from ctxwin.planner._option_error import OptionError
from ctxwin.strategies import get_strategy_factory
from ctxwin.strategies._salience import extractive_summarizer

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before the standard library took it in
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

# The summarizers a file (and the CLI's --summarizer) names; a callable of one's own is given in Python.
SUMMARIZERS: dict[str, Callable[..., Any]] = {"extractive": extractive_summarizer}
SUFFIXES = (".toml", ".json")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _form(path: str | os.PathLike[str]) -> str:
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in SUFFIXES:
        raise InvalidInputError(f"{os.fspath(path)}: a configuration file is TOML (.toml) or JSON (.json), by its "
                                f"suffix")
    return suffix


def read_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The file's object of options, as parsed; ValueError naming the file when it cannot be read or is not one."""
    name = os.fspath(path)
    suffix = _form(path)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle) if suffix == ".toml" else json.load(handle)
    except OSError as exc:
        raise InvalidInputError(f"{name}: cannot read it: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{name}: not valid {suffix[1:].upper()}: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{name}: expected an object of options (FitConfig's fields), got "
                                f"{type(data).__name__}")
    return data


def read_value(key: str, value: Any, *, off_by_none: bool) -> Any:
    """The option ``key`` as a file holds ``value``, as ``FitConfig`` takes it: a summarizer's name as the
    summarizer, ``false`` (or ``null``) as None where None is not the option's default (``off_by_none``)."""
    if value is False and off_by_none:  # keep_first = false: no head
        return None
    if key == "summarizer" and value is not None:
        if not isinstance(value, str) or value not in SUMMARIZERS:
            raise OptionError(key, f"summarizer names the built-in summarizer, one of "
                              f"{', '.join(map(repr, SUMMARIZERS))} (a summarizer of one's own is given in Python), "
                              f"got {value!r}")
        return SUMMARIZERS[value]
    return value


def write_file(options: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write ``options`` (as ``file_value`` gives them) to ``path``, TOML or JSON by its suffix."""
    suffix = _form(path)
    if suffix == ".json":
        text = json.dumps(options, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    else:
        text = "".join(f"{_key(key)} = {_toml(value, key, key)}\n" for key, value in options.items())
        try:
            same = tomllib.loads(text) == options
        except tomllib.TOMLDecodeError:
            same = False
        if not same:  # a string TOML cannot hold (a lone surrogate)
            raise InvalidInputError(f"{os.fspath(path)}: the options cannot be written as TOML exactly; write JSON "
                                    f"instead")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def file_value(key: str, value: Any) -> Any:
    """The option ``key``'s ``value`` (not its default) as a file holds it; OptionError naming the option for a
    value a file cannot hold."""
    if value is None:  # an option whose default is not None: keep_first = false, no head
        return False
    if key == "summarizer":
        name = next((name for name, known in SUMMARIZERS.items() if known is value), None)
        if name is None:
            raise OptionError(key, f"summarizer {value!r} cannot be written to a file: a file names only the built-in "
                              f"summarizer ({', '.join(map(repr, SUMMARIZERS))}); give yours in Python")
        return name
    if key == "counter" and not isinstance(value, str):
        return _counter_name(value)
    if key == "strategies":
        return value if isinstance(value, str) else [_strategy_name(item, i) for i, item in enumerate(value)]
    if key == "tools":
        try:
            value = openai_tools(value)
        except (TypeError, ValueError) as exc:
            raise OptionError(key, f"tools cannot be written to a file: {exc}") from None
    return _plain(value, key, key)


def _plain(value: Any, key: str, where: str) -> Any:
    """``value`` (lists for tuples) when it is made of what JSON holds; OptionError naming ``where`` otherwise."""
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise OptionError(key, f"{where} has a key that is not a string, which a configuration file cannot hold")
        return {k: _plain(v, key, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, key, f"{where}[{i}]") for i, v in enumerate(value)]
    if value is None or isinstance(value, (str, bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    raise OptionError(key, f"{where} is {value!r}, which a configuration file cannot hold")


def _counter_name(counter: TokenCounter) -> str:
    name = counter.name
    try:
        registered = get_counter(name)
    except (TypeError, ValueError):
        registered = None
    if registered is not counter:
        raise OptionError("counter", f"counter {counter!r} cannot be written to a file: it is not the counter "
                          "registered under its name; give counter as a registered name (`ctxwin counters`)")
    return name


def _strategy_name(item: Any, index: int) -> str:
    if isinstance(item, str):
        return item
    name = getattr(item, "name", None)
    try:
        default = get_strategy_factory(name)() if isinstance(name, str) else None
    except (TypeError, ValueError):
        default = None
    if default is None or type(default) is not type(item) or default != item:
        raise OptionError("strategies", f"strategies[{index}] ({item!r}) cannot be written to a file: a file names "
                          "strategies, built with their default options; a strategy with options of its own is "
                          "given in Python")
    return str(name)


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _toml(value: Any, key: str, where: str) -> str:
    """``value`` (as ``_plain`` made it) as a TOML value on one line, tables inline; OptionError for a null, which
    TOML has no value for."""
    if value is None:
        raise OptionError(key, f"{where} is null, which TOML cannot hold; write the configuration as JSON")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # JSON's escapes are TOML's basic-string escapes; TOML escapes DEL too
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, Mapping):
        items = [f"{_key(k)} = {_toml(v, key, f'{where}.{k}')}" for k, v in value.items()]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    return "[" + ", ".join(_toml(v, key, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
