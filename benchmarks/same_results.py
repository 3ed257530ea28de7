"""Whether two source trees plan the same, byte for byte (a refactor's check): the session replays' requests, bills,
hits and tokens sent, an Anthropic session's whole requests, and the dense bench's rows, each tree run in a
subprocess with its own ``ctxwin`` first on the path (its C accelerators built in place: ``setup.py build_ext
--inplace``). benchmarks/README.md ("Same results across trees") has the last run.

    .venv/bin/python benchmarks/same_results.py /tmp/main-tree            # that tree against this one
    .venv/bin/python benchmarks/same_results.py A B --sets agent --budgets 8000 --dense-seeds 0
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
SETS = "agent,steered/2/3,multilingual"
BUDGETS = "8000,20000"
BILLINGS = ("standard", "claude-sonnet-4-5")
DENSE_POLICIES = "fit,summarize,session"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr, ensure_ascii=False).encode()).hexdigest()


def _plan_record(plan: Any, session: Any) -> dict[str, Any]:
    """What a session's plan says, less what is random (a made-up cache key) or timed."""
    from ctxwin.messages import messages_to_dict

    messages = plan.messages if plan.output == "messages" else plan.request
    return {
        "messages": _digest(messages_to_dict(messages) if plan.output == "messages" else messages),
        "cache": repr(plan.cache), "breakpoints": plan.cache_breakpoints, "ttl": plan.cache_ttl,
        "key": plan.cache_key is not None, "recalled": plan.recalled.as_dict() if plan.recalled else None,
        "verbatim": plan.recent_turns_verbatim, "tokens": plan.tokens_after, "fits": plan.fits,
        "steps": [step.name for step in plan.steps], "prefixes": list(session.cache_prefixes),
        "head": len(session.head),
    }


class _Recorded:
    """``session_replays.Session`` (a default ``PlanSession``) that also records each plan."""

    def __init__(self, planner: Any, records: list[dict[str, Any]]) -> None:
        self.session = planner.session()
        self.records = records

    def add(self, messages: list[Any]) -> None:
        self.session.add_messages(messages)

    def request(self) -> list[Any]:
        plan = self.session.plan()
        self.records.append(_plan_record(plan, self.session))
        return list(plan.messages)

    def marks(self) -> tuple[int, ...]:
        return tuple(self.session.cache_prefixes)


def _replays(sets: list[str], budgets: list[int]) -> dict[str, Any]:
    from session_replays import conversations, run

    from ctxwin.cli._bench.replay import make_policy
    from ctxwin.cli._bench.session import rules_for

    out: dict[str, Any] = {}
    for billing in BILLINGS:
        rules = rules_for(None, billing)
        for name in sets:
            convs = conversations(name)
            for budget in budgets:
                records: list[dict[str, Any]] = []
                policies = {"sliding": lambda p: make_policy("sliding", p),
                            "session": functools.partial(_Recorded, records=records)}
                results, _ = run(convs, policies, budget, rules)  # and the working sets of Session policies
                session = results["session"]
                figures = {key: value for key, value in session.as_json().items() if key != "seconds_per_turn"}
                figures["bills"] = _digest([repr(bill) for bill in session.bills])
                out[f"{billing} {name} {budget}"] = {
                    "figures": figures, "requests": [_digest(r) for r in records],
                    "ms": round(1000 * (session.seconds_per_turn or 0), 2),
                    "sliding_billed": results["sliding"].billed_tokens,
                }
    return out


def _anthropic_requests(budget: int) -> list[str]:
    """Every whole request of an ``output="anthropic"`` session over the agent set (cache marks and lifetimes)."""
    from session_replays import conversations

    from ctxwin.cli._bench.replay import request_points
    from ctxwin.planner import Planner

    digests = []
    for conversation in conversations("agent")[:2]:
        session = Planner("claude-sonnet-4-5", context_window=budget + 4_000, reserve_output=4_000,
                          output="anthropic").session()
        done = 0
        for end in request_points(conversation):
            session.add_messages(conversation[done:end])
            done = end
            digests.append(_digest(_plan_record(session.plan(), session)))
    return digests


def _dense(first: int, seeds: int, policies: list[str]) -> list[dict[str, Any]]:
    from dense import HELDOUT, TUNE, available_sources, dense
    from planted import evaluate_dense

    rows = []
    for source in available_sources(TUNE + HELDOUT):
        for kind, tokens in (("chat", 25_000), ("agent", 57_000)):
            for seed in range(first, first + seeds):
                conversation = dense(source, kind, tokens, seed, phrasing="heldout")
                for policy in policies:
                    row = evaluate_dense(conversation, policy)
                    row.pop("seconds")
                    rows.append(row)
    return rows


def _dump(args: argparse.Namespace) -> None:
    """Run in the tree given: print what it planned as one JSON document."""
    tree = Path(args.dump).resolve()
    sys.path[0:1] = [str(tree), str(tree / "benchmarks")]
    import ctxwin

    if not Path(ctxwin.__file__).resolve().is_relative_to(tree):
        raise SystemExit(f"ctxwin was imported from {ctxwin.__file__}, not from {tree}")
    started = time.perf_counter()
    result = {
        "replays": _replays(args.sets.split(","), [int(b) for b in args.budgets.split(",")]),
        "anthropic": _anthropic_requests(8_000),
        "dense": _dense(args.first_seed, args.dense_seeds, args.dense_policies.split(",")) if args.dense_seeds else [],
    }
    result["seconds"] = round(time.perf_counter() - started, 1)
    json.dump(result, sys.stdout)


def _run(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--dump", str(tree), "--sets", args.sets, "--budgets", args.budgets,
               "--dense-seeds", str(args.dense_seeds), "--first-seed", str(args.first_seed),
               "--dense-policies", args.dense_policies]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _compare(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The differences, one a line (none: the trees planned the same)."""
    differences = []
    for key in a["replays"].keys() | b["replays"].keys():
        one, other = a["replays"].get(key), b["replays"].get(key)
        if one is None or other is None:
            differences.append(f"replay {key}: only in one tree")
            continue
        for field in ("figures", "sliding_billed"):
            if one[field] != other[field]:
                differences.append(f"replay {key} {field}: {one[field]} != {other[field]}")
        changed = [i for i, (x, y) in enumerate(zip(one["requests"], other["requests"], strict=False)) if x != y]
        if changed or len(one["requests"]) != len(other["requests"]):
            differences.append(f"replay {key}: {len(changed)} requests differ, the first at {changed[:1]}")
    if a["anthropic"] != b["anthropic"]:
        differences.append("the Anthropic session's requests differ")
    if a["dense"] != b["dense"]:
        rows = [i for i, (x, y) in enumerate(zip(a["dense"], b["dense"], strict=False)) if x != y]
        differences.append(f"dense rows differ: {rows[:5]} ({len(a['dense'])} and {len(b['dense'])} rows)")
    return differences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="one tree (compared with this one) or two")
    parser.add_argument("--sets", default=SETS, help="session_replays.py sets (default: %(default)s)")
    parser.add_argument("--budgets", default=BUDGETS, help="input budgets (default: %(default)s)")
    parser.add_argument("--dense-seeds", type=int, default=2, help="dense conversations per source and kind (0: none)")
    parser.add_argument("--first-seed", type=int, default=20, help="the dense bench's first seed (default 20)")
    parser.add_argument("--dense-policies", default=DENSE_POLICIES, help="of planted.py's (default: %(default)s)")
    parser.add_argument("--dump", metavar="TREE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump:
        _dump(args)
        return 0
    if not 1 <= len(args.trees) <= 2:
        parser.error("give one tree (compared with this one) or two")
    trees = [Path(t).resolve() for t in args.trees] + ([HERE] if len(args.trees) == 1 else [])
    a, b = (_run(tree, args) for tree in trees)
    for key in sorted(a["replays"]):
        x, y = a["replays"][key], b["replays"][key]
        figures = x["figures"]
        print(f"{key:40} requests={figures['requests']} hits={figures['cache_hit_rate']:.4f} "
              f"billed={figures['billed_input_tokens']:.0f} sent={figures['mean_tokens_sent']:.1f} "
              f"ms={x['ms']} / {y['ms']}")
    for kind in ("chat", "agent"):
        for policy in args.dense_policies.split(","):
            rows = [r for r in a["dense"] if r["kind"] == kind and r["policy"] == policy]
            if rows:
                recalled = [hit for r in rows for _, hit in r["recall"]]
                noise = [n for r in rows for n in r["noise"]]
                print(f"dense {kind:5} {policy:10} keep kept {sum(r['keep'][0] for r in rows)}/"
                      f"{sum(r['keep'][1] for r in rows)} recall {sum(recalled)}/{len(recalled)} noise "
                      f"{sum(noise) / max(len(noise), 1):.0f} tokens, fits {not any(r['over'] for r in rows)}")
    print(f"dense rows: {len(a['dense'])}; Anthropic requests: {len(a['anthropic'])}; "
          f"seconds: {a['seconds']} / {b['seconds']}")
    differences = _compare(a, b)
    print("\n".join(differences) if differences else f"identical: {trees[0]} and {trees[1]}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
