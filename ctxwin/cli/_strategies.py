"""``ctxwin strategies``: the registered strategies (the names ``fit --strategy`` takes) and their plugins."""

from __future__ import annotations

import argparse
import json

from ctxwin._plugins import plugin_source
from ctxwin.cli._output import EXIT_OK, json_flag, one_line, plugin_column
from ctxwin.strategies import list_strategies

add_arguments = json_flag

def run(args: argparse.Namespace) -> int:
    rows = [
        {
            "name": s.name,
            "plugin": s.plugin,
            "source": plugin_source(s.plugin),
            "description": one_line((s.factory.__doc__ or "").strip().split("\n\n")[0]),
        }
        for s in list_strategies()
    ]
    if args.json:
        print(json.dumps({"strategies": rows}, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"{'strategy':<22} {'plugin':<34} description")
    for row in rows:
        print(f"{row['name']:<22} {plugin_column(row):<34} {row['description']}")
    return EXIT_OK
