"""``ctxwin models``: the registered models, their limits and counters, and which are counted approximately; with
``--json`` also each model's prompt caching rules and prices (``ctxwin.counters._caching``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from ctxwin._plugins import plugin_source
from ctxwin._plural import plural
from ctxwin.cli._output import EXIT_OK, json_flag
from ctxwin.counters import ModelSpec, get_counter, list_models, model_plugin
from ctxwin.counters._base import estimates

add_arguments = json_flag

def _exact(model: ModelSpec) -> bool:
    """Whether the model's own tokenizer counts it: the built-in models' counters are known; a plugin's counter is
    exact only if it does not declare itself ``estimating`` (the counter contract, docs/counters.md), so one counting
    by a rule of thumb is not listed as exact. A plugin counter that cannot be built is not listed as exact."""
    if not model.exact or plugin_source(model_plugin(model.name)) == "built-in":
        return model.exact
    try:
        counter = get_counter(model.counter)
    except Exception:  # a broken plugin is reported by ``ctxwin counters``; here it is just not exact
        return False
    return not estimates(counter)


def run(args: argparse.Namespace) -> int:
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
        }
        for m in list_models()
    ]
    if args.json:
        print(json.dumps({"models": rows}, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"{'model':<22} {'context':>9} {'output':>7}  {'counter':<38} {'exact':<5} note")
    for row in rows:
        print(
            f"{row['name']:<22} {row['context_window']:>9,} {row['max_output_tokens']:>7,}  {row['counter']:<38} "
            f"{'yes' if row['exact'] else 'no':<5} {row['note']}"
        )
    approximate = [r["name"] for r in rows if r["approximate"]]
    if approximate:
        print(
            f"\n{plural(len(approximate), 'model')} {'has' if len(approximate) == 1 else 'have'} no public "
            "tokenizer and use the approximate counter in safe mode: " + ", ".join(approximate)
        )
    return EXIT_OK
