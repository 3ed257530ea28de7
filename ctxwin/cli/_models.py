"""``ctxwin models``: the registered models (or the ones named, genai-prices' included), their limits and counters,
which are counted approximately, and where each figure comes from; ``--refresh`` first fetches genai-prices' newest
data (opt-in, time-limited); with ``--json`` also each model's prompt caching rules and prices."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from ctxwin._plugins import plugin_source
from ctxwin._plural import plural
from ctxwin.cli._output import EXIT_INPUT, EXIT_OK, error, json_flag
from ctxwin.counters import ModelDataError, ModelSpec, get_counter, get_model, list_models, model_plugin
from ctxwin.counters._base import estimates


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="MODEL",
                        help="show these models (any name get_model resolves, genai-prices' models included)")
    json_flag(parser)
    parser.add_argument("--refresh", action="store_true",
                        help="first fetch genai-prices' newest model data for this run (off by default)")
    parser.add_argument("--refresh-url", metavar="URL", help="where --refresh fetches from (genai-prices' own)")
    parser.add_argument("--refresh-timeout", metavar="SECONDS", type=float, default=10.0,
                        help="give up --refresh after this long (default 10)")


def _exact(model: ModelSpec) -> bool:
    """Whether the model's own tokenizer counts it: the built-in models' counters are known; a plugin's counter is
    exact only if it does not declare itself ``estimating`` (the counter contract, docs/counters.md), so one counting
    by a rule of thumb is not listed as exact. A plugin counter that cannot be built is not listed as exact."""
    if not model.exact or plugin_source(model_plugin(model.name)) in ("built-in", "genai-prices"):
        return model.exact
    try:
        counter = get_counter(model.counter)
    except Exception:  # a broken plugin is reported by ``ctxwin counters``; here it is just not exact
        return False
    return not estimates(counter)


def _source(model: ModelSpec, figure: str) -> str:
    """Where a figure comes from, short: its source's first words and its date."""
    source = model.source_of(figure)
    if source is None:
        return "-"
    origin = source.source.split(" (", 1)[0].split(":", 1)[0].split(",", 1)[0]
    return f"{origin} {source.date}".strip()


def run(args: argparse.Namespace) -> int:
    if args.refresh or args.refresh_url:
        from ctxwin.counters import refresh_model_data

        try:
            print(f"model data: {refresh_model_data(args.refresh_url, timeout=args.refresh_timeout)}",
                  file=sys.stderr)
        except (ModelDataError, ValueError) as exc:
            return error(f"--refresh: {exc}")
    try:
        models = [get_model(name) for name in args.names] if args.names else list_models()
    except ValueError as exc:
        return error(exc) if exc else EXIT_INPUT
    rows: list[dict[str, Any]] = [
        {
            "name": m.name,
            "context_window": m.context_window,
            "max_output_tokens": m.max_output_tokens,
            "counter": m.counter,
            "approximate": m.approximate,
            "exact": _exact(m),
            "aliases": list(m.aliases),
            "note": m.note,
            "tokenizer": m.tokenizer,
            "plugin": model_plugin(m.name),
            "caching": dataclasses.asdict(m.caching) if m.caching else None,
            "sources": [dataclasses.asdict(source) for source in m.sources],
        }
        for m in models
    ]
    if args.json:
        print(json.dumps({"models": rows}, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"{'model':<22} {'context':>9} {'output':>7}  {'counter':<38} {'exact':<5} {'window from':<24} "
          f"{'prices from':<24} note")
    for row, model in zip(rows, models, strict=True):
        print(
            f"{row['name']:<22} {row['context_window']:>9,} {row['max_output_tokens']:>7,}  {row['counter']:<38} "
            f"{'yes' if row['exact'] else 'no':<5} {_source(model, 'context_window'):<24} "
            f"{_source(model, 'prices'):<24} {row['note']}"
        )
    approximate = [r["name"] for r in rows if r["approximate"]]
    if approximate:
        print(
            f"\n{plural(len(approximate), 'model')} {'has' if len(approximate) == 1 else 'have'} no public "
            "tokenizer and use the approximate counter in safe mode: " + ", ".join(approximate)
        )
    return EXIT_OK
