"""``ctxwin counters``: the registered counters, the plugin of each, where its data comes from and which engine
counts (with why: a faster engine verified exact, or the reference), and the plugins that failed to load."""

from __future__ import annotations

import argparse
import json

from ctxwin._plugins import plugin_errors, plugin_source
from ctxwin.cli._output import EXIT_OK, json_flag, plugin_column
from ctxwin.counters import list_counters

add_arguments = json_flag

def run(args: argparse.Namespace) -> int:
    from ctxwin.counters._families.plugin import counter_engines  # tiktoken and tokenizers: not for --help

    engines = counter_engines()
    rows = [
        {"name": c.name, "plugin": c.plugin, "source": plugin_source(c.plugin), "origin": c.origin,
         "engine": engines.get(c.name, "") if c.plugin == counter_engines.__module__ else ""}
        for c in list_counters()
    ]
    problems = [{"plugin": e.plugin, "stage": e.stage, "error": e.error} for e in plugin_errors()]
    if args.json:
        print(json.dumps({"counters": rows, "plugin_errors": problems}, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"{'counter':<14} {'plugin':<34} data origin")
    for row in rows:
        print(f"{row['name']:<14} {plugin_column(row):<34} {row['origin']}")
        if row["engine"]:
            print(f"{'':<14} {'':<34} engine: {row['engine']}")
    for problem in problems:
        print(f"plugin error: {problem['plugin']} ({problem['stage']}): {problem['error']}")
    return EXIT_OK
