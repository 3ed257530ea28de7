"""What the calling process costs per conversation on each dataset path, and the speed-up that allows on many cores.

For each path — a plain ``fit`` loop, ``fit_many`` over a list of conversations, over an open file with
``decode=json.loads`` and over a list of JSON lines, ``ctxwin fit FILE --workers`` (its ``main()`` in the measuring
process, and the whole command in a process of its own) and Ray (``read_jsonl`` + ``fit_dataset`` +
``write_json``) — and for each number of cores, one subprocess pinned to those cores (``sched_setaffinity``,
inherited by every process it starts) runs the path on the first N conversations, then on the first 4N, and
reports for each run:

- wall time, and so conversations per second (the 4N run's);
- the calling process's CPU (``getrusage(RUSAGE_SELF)``: all its threads); its **whole-run CPU** at N and 4N, pool
  start included, and its **marginal CPU per conversation** ``(cpu(4N) - cpu(N)) / 3N``, which leaves out what a
  run pays once (starting the pool); a first run over N conversations, not counted, pays what only the first run in
  a process pays (imports). The command path's figure is the command's whole CPU, interpreter start and imports
  included;
- the workers' CPU: the fork server's reaped children (``cutime + cstime`` in ``/proc/<fork server>/stat``) and
  this process's own (``RUSAGE_CHILDREN``: workers forked from it);
- the peak private memory of each worker process (pool workers, Ray workers), sampled every 50 ms (``PeakMemory``).

The loop's CPU (cold count caches) is the reference: the judged figures are the calling process's CPU as a share
of the loop's over the same conversations, whole runs and marginal. Amdahl's law with the marginal share as the
serial part gives the speed-up on P cores, ``1 / (s + (1 - s) / P)``, and its ceiling ``1 / s``.

    python benchmarks/batch_scaling.py --count 80 --json scaling.json     # prints a Markdown table
    python benchmarks/batch_scaling.py --count 64 --cores 2 --rounds 5 --trees before=/tmp/main,after=.

``--rounds`` runs every case that many times, interleaved (round by round, tree by tree), and the table gives the
median of each figure; ``--trees`` runs each case with another checkout's ``ctxwin`` first on the path (its
compiled extensions built), so trees are compared on the same machine in the same minutes.

Conversations: ``conversations.generate("agent", n, seed)`` with n drawn from 10..400 messages (agent sessions with
tool calls and long tool outputs, OpenAI format), one JSON list per line; fitted for gpt-4o-mini (o200k) into an
8,000-token window with 1,000 reserved, so most are cut.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

FIT = {"model": "gpt-4o-mini", "context_window": 8000, "reserve_output": 1000}
# fit_many_lines: an open file with decode=json.loads; fit_many_line_list: its lines read into a list first;
# cli_command: the whole ``ctxwin fit --workers`` command in a process of its own.
PATHS = ("loop", "fit_many", "fit_many_lines", "fit_many_line_list", "cli", "cli_command", "ray")
CORES = "1,2"
PROJECTED = (16, 64, 256)
SCALE = 4  # the second run fits SCALE times as many conversations as the first


def corpus(count: int, seed: int = 7) -> list[list[dict[str, Any]]]:
    """The conversations, generated once per count and seed and kept as JSON lines in the temporary directory:
    every case of a run (and of the next run) reads the same file instead of generating them again."""
    from conversations import generate

    kept = Path(tempfile.gettempdir()) / f"ctxwin-batch-scaling-{count}-{seed}.jsonl"
    if not kept.exists():
        rng = random.Random(seed)
        items = (generate("agent", rng.randint(10, 400), seed * 100_000 + i) for i in range(count))
        partial = kept.with_suffix(f".{os.getpid()}")
        partial.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in items), encoding="utf-8")
        partial.replace(kept)
    return [json.loads(line) for line in kept.read_text(encoding="utf-8").splitlines()]


def cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_children() -> float:
    """CPU seconds of this process's reaped children: the workers ``fit_many`` forked itself."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _children(pid: int) -> list[int]:
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for thread in threads:
        with contextlib.suppress(OSError):
            out += [int(p) for p in Path(f"/proc/{pid}/task/{thread}/children").read_text().split()]
    return out


def descendants(pid: int) -> list[int]:
    found, todo = [], _children(pid)
    while todo:
        child = todo.pop()
        found.append(child)
        todo += _children(child)
    return found


class PeakMemory:
    """The peak private memory of the worker processes, sampled every 50 ms by a subprocess: a thread here would
    make this process multi-threaded, and ``fit_many`` forks its workers only from a single-threaded process.

    Private memory (``Private_Clean + Private_Dirty`` in ``/proc/<pid>/smaps_rollup``), not the resident set: a
    forked worker's resident set counts every page it shares with this process (the whole corpus), which it does
    not cost."""

    def __init__(self, ray: bool) -> None:
        self.ray, self.peaks, self.cpu = ray, dict[int, int](), 0.0

    def __enter__(self) -> PeakMemory:
        command = [sys.executable, __file__, "--sample", str(os.getpid()), "ray" if self.ray else "pool"]
        self._sampler = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc: object) -> None:
        reaped = cpu_children()
        out, _ = self._sampler.communicate("")  # end of input: the sampler prints its peaks and exits
        self.cpu = cpu_children() - reaped  # the sampler's CPU, which is not the workers'
        self.peaks = {int(pid): mb for pid, mb in json.loads(out).items()}


def workers_of(parent: int, ray: bool) -> list[int]:
    """Ray's workers, or a pool's: forked from ``parent`` (its children running the same command) or from the
    fork server (its children)."""
    if ray:
        return [pid for pid in descendants(parent) if _cmdline(pid).startswith("ray::")]
    own, out = _cmdline(parent), []
    for pid in _children(parent):
        command = _cmdline(pid)
        out += _children(pid) if "multiprocessing.forkserver" in command else [pid] if command == own else []
    return out


def sample(parent: int, ray: bool) -> None:
    """Sample the peak private MB of ``parent``'s workers until stdin ends; print them as JSON."""
    import select

    peaks: dict[int, int] = {}
    while not select.select([sys.stdin], [], [], 0.05)[0]:
        for pid in workers_of(parent, ray):
            try:
                rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            except OSError:
                continue
            kb = sum(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Private_"))
            peaks[pid] = max(peaks.get(pid, 0), kb // 1024)
    print(json.dumps(peaks))


def _forkserver_pid() -> int | None:
    from multiprocessing import forkserver

    return getattr(forkserver._forkserver, "_forkserver_pid", None)


def _forkserver_reaped() -> float:
    """CPU seconds of the fork server's reaped children (the pool workers) and its own."""
    pid = _forkserver_pid()
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks  # utime stime cutime cstime


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def run_case(path: str, cores: int, count: int, folder: str) -> dict[str, Any]:
    """One path on ``cores`` CPUs, at N and 4N conversations, in this (pinned) process."""
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))
    items = corpus(SCALE * count)
    runs = []
    for n in (count, count, SCALE * count):  # a first run to warm up, not counted: imports, the first pool's costs
        source = Path(folder) / f"in-{n}.jsonl"
        source.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in items[:n]), encoding="utf-8")
        runs.append(_run(path, cores, items[:n], str(source), Path(folder) / f"out-{path}-{n}"))
    _, first, second = runs
    marginal = (second["parent_cpu"] - first["parent_cpu"]) / ((SCALE - 1) * count)
    worker = (second["worker_cpu"] - first["worker_cpu"]) / ((SCALE - 1) * count) if second["worker_cpu"] else None
    return {
        "path": path,
        "cores": cores,
        "conversations": SCALE * count,
        "per_second": SCALE * count / second["wall"],
        "parent_ms": 1000 * marginal,
        "parent_small_ms": 1000 * first["parent_cpu"],  # the N run's whole CPU, pool start included
        "parent_total_ms": 1000 * second["parent_cpu"],  # the 4N run's
        "worker_ms": None if worker is None else 1000 * worker,
        "worker_mb": second["worker_mb"],
        "output": second["digest"],
    }


COMMAND = """
import json, resource, sys
from ctxwin.cli._main import main
code = main(sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"code": code, "cpu": usage.ru_utime + usage.ru_stime}), file=sys.stderr)
"""


def _run(path: str, cores: int, items: list[Any], source: str, out: Path) -> dict[str, Any]:
    import hashlib

    from ctxwin.counters import get_counter
    from ctxwin.planner import fit
    from ctxwin.trim._count_cache import cache_for

    if in_process(path, cores):
        fit([{"role": "user", "content": "warm up"}], **FIT)  # the tokenizer is loaded once, before any run
    cache = cache_for(get_counter("tiktoken:o200k_base"))
    if cache is not None:
        cache.clear()  # every run cold, as a new worker is: the 4N run must not reuse the N run's counts
    reaped = _forkserver_reaped() + cpu_children() if path != "ray" else 0.0
    digest = hashlib.sha256()
    kept: list[Any] = []  # what the run gave, hashed after it: the consumer's work is not the path's
    texts = Path(source).read_text(encoding="utf-8").splitlines(keepends=True) if path == "fit_many_line_list" else []
    fit_options = {"workers": cores, "progress": False, "output": "openai", **FIT}
    cli_args = ["fit", source, "-m", FIT["model"], "--context-window", "8000", "--reserve", "1000"]
    cli_args += ["--workers", str(cores), "-o", f"{out}.jsonl"]
    with PeakMemory(path == "ray") as memory:
        start, cpu = time.perf_counter(), cpu_self()
        if path == "loop":
            for conversation in items:
                plan = fit(conversation, output="openai", **FIT)
                kept.append([plan.messages, plan.summary()])
        elif path == "fit_many":
            from ctxwin.batch import fit_many

            for result in fit_many(items, **fit_options):
                kept.append([result.messages, result.summary])
        elif path == "fit_many_lines":
            from ctxwin.batch import fit_many

            with open(source, encoding="utf-8") as lines:
                for result in fit_many(lines, decode=json.loads, **fit_options):
                    kept.append([result.messages, result.summary])
        elif path == "fit_many_line_list":  # the lines were read before the run: the caller's list
            from ctxwin.batch import fit_many

            for result in fit_many(texts, decode=json.loads, **fit_options):
                kept.append([result.messages, result.summary])
        elif path == "cli":
            from ctxwin.cli._main import main

            assert main(cli_args) == 0
        elif path == "cli_command":
            done = subprocess.run([sys.executable, "-c", COMMAND, *cli_args], capture_output=True, text=True)
            command = json.loads(done.stderr.strip().splitlines()[-1])
            assert command["code"] == 0, done.stderr
        else:
            from ctxwin.integrations.ray import fit_dataset, read_jsonl

            ds = fit_dataset(read_jsonl(source, shard_bytes=1 << 20), column="text", **FIT)
            ds.write_json(str(out))
        wall, parent = time.perf_counter() - start, cpu_self() - cpu
    if path == "cli_command":
        parent = command["cpu"]  # the command's own CPU: this process only waited for it
    if path.startswith("cli"):
        for line in Path(f"{out}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            kept.append([row["messages"], row["ctxwin"]["plan"]])
    for item in kept:
        digest.update(json.dumps(item, sort_keys=True).encode())
    time.sleep(0.3)  # the fork server reaps the workers the pool shut down
    pooled = path not in ("ray", "cli_command") and not in_process(path, cores)  # Ray's and the command's: uncounted
    worker = _forkserver_reaped() + cpu_children() - memory.cpu - reaped if pooled else 0.0
    peaks = [mb for pid, mb in memory.peaks.items()]
    return {
        "wall": wall,
        "parent_cpu": parent,
        "worker_cpu": worker,
        "worker_mb": max(peaks) if peaks else None,
        "digest": digest.hexdigest()[:12] if path != "ray" else None,
    }


def in_process(path: str, cores: int) -> bool:
    """Whether the calling process fits the conversations itself: the loop, and one worker (``workers=1``)."""
    return path == "loop" or (cores == 1 and path != "ray")


def amdahl(serial: float, cores: int) -> float:
    return 1 / (serial + (1 - serial) / cores)


def shares(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run with the calling process's CPU as a share of the loop's (on the fewest cores, same tree and round):
    marginal, and whole runs at N and 4N conversations."""
    loops = {}
    for r in sorted(results, key=lambda r: -r["cores"]):
        if r["path"] == "loop":
            loops[r["tree"], r["round"]] = r
    out = []
    for r in results:
        loop = loops[r["tree"], r["round"]]
        out.append({
            **r,
            "share": r["parent_ms"] / loop["parent_ms"],
            "share_small": r["parent_small_ms"] / loop["parent_small_ms"],
            "share_total": r["parent_total_ms"] / loop["parent_total_ms"],
        })
    return out


def _median(values: list[float]) -> float:
    return statistics.median(values)


def table(results: list[dict[str, Any]]) -> str:
    """One row per tree, path and cores: the median of each figure over the rounds (the range after it when there
    were several)."""
    rows: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in shares(results):
        rows.setdefault((r["tree"], r["path"], r["cores"]), []).append(r)
    count = results[0]["conversations"] // SCALE
    lines = [
        f"| tree | path | cores | conversations/s | parent ms/conv. (marginal) | share of the loop's CPU, marginal | "
        f"whole run, {count} conv. | whole run, {SCALE * count} conv. | workers' ms/conv. | peak private MB per "
        f"worker | {' | '.join(f'Amdahl {p} cores' for p in PROJECTED)} | ceiling |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(PROJECTED) + "---:|",
    ]

    def figure(runs: list[dict[str, Any]], key: str, form: str, scale: float = 1.0) -> str:
        values = [scale * run[key] for run in runs if run[key] is not None]
        if not values:
            return "—"
        spread = f" ({min(values):{form}}-{max(values):{form}})" if len(values) > 1 else ""
        return f"{_median(values):{form}}{spread}"

    for (tree, path, cores), runs in rows.items():
        share = _median([run["share"] for run in runs])
        alone = in_process(path, cores)  # the calling process is the worker: nothing to project
        noise = share <= 0  # the run-to-run noise of the fixed costs is larger than what the parent added
        projected = " | ".join("—" if alone or noise else f"{amdahl(share, p):.0f}x" for p in PROJECTED)
        ceiling = "—" if alone else ("below noise" if noise else f"{1 / share:.0f}x")
        lines.append(
            f"| {tree} | {path} | {cores} | {figure(runs, 'per_second', '.1f')} | {figure(runs, 'parent_ms', '.3f')} "
            f"| {figure(runs, 'share', '.2%')} | {figure(runs, 'share_small', '.2%')} | "
            f"{figure(runs, 'share_total', '.2%')} | {figure(runs, 'worker_ms', '.2f')} | "
            f"{figure(runs, 'worker_mb', '.0f')} | {projected} | {ceiling} |"
        )
    digests = {r["output"] for r in results if r["output"]}
    lines.append("")
    lines.append(f"Outputs (messages and summaries of every conversation, hashed): {len(digests)} distinct among "
                 "the loop, fit_many and CLI runs" + (" — identical." if len(digests) == 1 else "."))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="N: runs fit N, then 4N conversations")
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--cores", default=CORES, help="the numbers of cores to run each path on (default: 1,2)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of every case, interleaved")
    parser.add_argument("--trees", default="this=.", help="NAME=PATH,...: checkouts whose ctxwin to run")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # PATH:CORES, run in a pinned subprocess
    parser.add_argument("--sample", nargs=2, help=argparse.SUPPRESS)  # PID pool|ray: PeakMemory's sampler
    args = parser.parse_args(argv)
    if args.sample:
        sample(int(args.sample[0]), args.sample[1] == "ray")
        return 0
    if args.case:
        path, cores = args.case.split(":")
        if path == "ray":
            import ray

            ray.init(num_cpus=int(cores), include_dashboard=False, log_to_driver=False, logging_level="ERROR")
            import ray.data

            ray.data.DataContext.get_current().enable_progress_bars = False
        with tempfile.TemporaryDirectory() as folder:
            print(json.dumps(run_case(path, int(cores), args.count, folder)))
        return 0
    trees = dict(tree.split("=", 1) for tree in args.trees.split(","))
    results = []
    for round_ in range(args.rounds):
        for path in args.paths.split(","):
            for cores in map(int, args.cores.split(",")):
                for tree, checkout in trees.items():
                    command = [sys.executable, __file__, "--count", str(args.count), "--case", f"{path}:{cores}"]
                    root = str(Path(checkout).resolve())
                    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
                    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
                    if done.returncode:
                        print(f"{tree}: {path} on {cores} cores failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                        continue
                    results.append({**json.loads(done.stdout.strip().splitlines()[-1]), "tree": tree,
                                    "round": round_})
                    print(json.dumps(results[-1]), file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
