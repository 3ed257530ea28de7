"""Render a pytest-benchmark JSON run into the results region of ``benchmarks/README.md`` and ``results.png``.

    python benchmarks/render.py .benchmarks/latest.json [--readme benchmarks/README.md] [--chart benchmarks/results.png]

Only the text between the lines ``<!-- results:start -->`` and ``<!-- results:end -->`` is replaced, so the hand-written
parts of the page stay. Tables give the minimum over each benchmark's rounds (the least disturbed figure on a
shared machine) and ratios against langchain_core measured in the same run. Suites without a table of their own
(history, batch, the approximate counter's timings, anything new) are listed in a generic table. The chart needs
matplotlib (the ``plot`` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

START, END = "<!-- results:start -->", "<!-- results:end -->"
HERE = Path(__file__).parent
LANGCHAIN = "langchain_core"


@dataclass
class Bench:
    """One benchmark of the run; times in seconds."""

    suite: str  # file stem, e.g. "bench_trim"
    test: str  # function name, e.g. "test_trim"
    name: str
    params: dict[str, Any]
    group: str | None
    min: float
    median: float
    rounds: int
    extra: dict[str, Any]
    used: bool = field(default=False, compare=False)


class Run:
    def __init__(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
            raise ValueError("not a pytest-benchmark JSON file (no 'benchmarks' list)")
        self.machine: dict[str, Any] = data.get("machine_info") or {}
        self.commit: dict[str, Any] = data.get("commit_info") or {}
        self.datetime: str = data.get("datetime") or ""
        self.benches = [
            Bench(
                suite=Path(b["fullname"].split("::")[0]).stem,
                test=b["name"].split("[")[0],
                name=b["name"],
                params=b.get("params") or {},
                group=b.get("group"),
                min=b["stats"]["min"],
                median=b["stats"]["median"],
                rounds=b["stats"]["rounds"],
                extra=b.get("extra_info") or {},
            )
            for b in data["benchmarks"]
        ]

    def find(self, suite: str, test: str, **params: Any) -> Bench | None:
        for bench in self.benches:
            if bench.suite == suite and bench.test == test and all(bench.params.get(k) == v for k, v in params.items()):
                bench.used = True
                return bench
        return None

    def values(self, suite: str, test: str, key: str) -> list[Any]:
        """The distinct values of one parameter, in the order the suite ran them (sorted when numeric)."""
        seen = list(dict.fromkeys(b.params[key] for b in self.benches if b.suite == suite and b.test == test))
        return sorted(seen) if all(isinstance(v, int | float) for v in seen) else seen


# --- formatting -------------------------------------------------------------------------------------------------


def ms(seconds: float | None) -> str:
    if seconds is None:
        return ""
    value = seconds * 1e3
    return f"{value:,.3f}" if value < 1 else f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def ratio(numerator: float | None, denominator: float | None, suffix: str = "x") -> str:
    if not numerator or not denominator:
        return ""
    value = numerator / denominator
    return f"{value:.2f}{suffix}" if value < 10 else f"{value:.1f}{suffix}" if value < 100 else f"{value:.0f}{suffix}"


def speed(value: float | None) -> str:
    return "" if not value else f"{value:,.0f}" if value >= 1000 else f"{value:,.1f}"


def mb_per_s(bench: Bench | None) -> float | None:
    if bench is None or not bench.extra.get("bytes"):
        return None
    return float(bench.extra["bytes"]) / bench.min / 1e6


def table(header: list[str], rows: Iterable[list[str]], align: str) -> list[str]:
    """A Markdown table; ``align`` has one letter per column: l(eft) or r(ight)."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


# --- sections ---------------------------------------------------------------------------------------------------


def machine_section(run: Run) -> list[str]:
    m = run.machine
    cpu = m.get("cpu") or {}
    libraries = ", ".join(f"{k} {v}" for k, v in (m.get("libraries") or {}).items() if v)
    commit = run.commit.get("id", "")[:10] + (" + uncommitted changes" if run.commit.get("dirty") else "")
    load = m.get("load_average")
    parts = [
        f"{cpu.get('brand_raw') or m.get('processor') or 'unknown CPU'}, {cpu.get('count', '?')} cores"
        + (f" at {cpu['hz_advertised_friendly']}" if cpu.get("hz_advertised_friendly") else ""),
        f"{m['memory_gib']} GiB" if m.get("memory_gib") else "",
        f"{m.get('system', '')} {m.get('release', '')} {m.get('machine', '')}".strip(),
        f"{m.get('python_implementation', 'Python')} {m.get('python_version', '')}",
    ]
    lines = [f"Run of {run.datetime[:16].replace('T', ' ')} UTC" + (f", commit {commit}" if commit else "") + "."]
    lines.append("Machine: " + "; ".join(p for p in parts if p) + ".")
    if libraries:
        lines.append(f"Libraries: {libraries}.")
    if load:
        lines.append(f"Load average when the run started (1, 5, 15 min): {', '.join(map(str, load))}.")
    return [" ".join(lines)]


def langchain_trim(run: Run, counter: str, mode: str, size: int) -> tuple[Bench | None, bool]:
    """langchain_core's run matching ctxwin's ``counter``/``mode``, and whether its cold run stands in for warm.

    It gets the o200k callable where ctxwin uses its native counter; without a cache its warm run is its cold
    run again, so where the suite did not repeat it the cold run is used.
    """
    kind = "o200k" if counter == "o200k-native" else counter
    found = run.find("bench_trim", "test_trim", library="langchain", kind=kind, mode=mode, size=size)
    if found is None and mode == "warm":
        cold = run.find("bench_trim", "test_trim", library="langchain", kind=kind, mode="cold", size=size)
        return cold, cold is not None
    return found, False


def trim_rows(run: Run) -> Iterator[list[str]]:
    for size in run.values("bench_trim", "test_trim", "size"):
        floor = run.find("bench_trim", "test_floor", size=size)
        for counter in ("approx", "o200k", "o200k-native"):
            for mode in ("cold", "warm"):
                ours = run.find("bench_trim", "test_trim", library="ctxwin", kind=counter, mode=mode, size=size)
                if ours is None:
                    continue
                theirs, stand_in = langchain_trim(run, counter, mode, size)
                their_min = theirs.min if theirs else None
                mark = " †" if stand_in else ""
                to_floor = ratio(ours.min, floor.min, "") if floor and mode == "cold" and counter != "approx" else ""
                yield [f"{size:,}", counter, mode, ms(ours.min), ms(their_min) + mark, ratio(their_min, ours.min),
                       to_floor]
        if floor:
            engine = floor.extra.get("engine", "o200k")
            yield [f"{size:,}", f"floor: {engine} over the kept messages", "", ms(floor.min), "", "", ""]


def trim_section(run: Run) -> list[str]:
    rows = list(trim_rows(run))
    if not rows:
        return []
    kept = [b for b in run.benches if b.test == "test_trim" and b.params.get("library") == "ctxwin"]
    kept_note = ", ".join(
        f"{b.params['size']:,}: {b.extra['kept']:,} kept"
        for b in kept if b.params.get("kind") == "o200k" and b.params.get("mode") == "cold" and "kept" in b.extra
    )
    lines = ["### trim_messages, agent traces (`bench_trim.py`), milliseconds", ""]
    lines += table(["messages", "counter", "mode", "ctxwin", LANGCHAIN, "speed-up", "ctxwin / floor"], rows, "rllrrrr")
    note = "Speed-up = langchain_core's time / ctxwin's."
    if any("†" in row[4] for row in rows):
        note += (" † langchain_core has no cache, so its warm run is its cold run again; at this size it is not "
                 "repeated and the cold time is used.")
    if kept_note:
        note += f" Messages kept (o200k, cold): {kept_note}."
    lines += ["", note]
    return lines


ACTIONS = {
    "first-retrim": "first re-trim after appending one message",
    "next-turn": "next turn",
    "reloaded": "re-trim of the history read back from storage, one message appended",
}


def chat_loop_section(run: Run) -> list[str]:
    rows = []
    for size in run.values("bench_trim", "test_chat_loop", "size"):
        for action, label in ACTIONS.items():
            ours = run.find("bench_trim", "test_chat_loop", library="ctxwin", action=action, size=size)
            if ours is None:
                continue
            theirs = run.find("bench_trim", "test_chat_loop", library="langchain", action=action, size=size)
            their_min = theirs.min if theirs else None
            rows.append([f"{size:,}", label, f"{ours.extra.get('kept', 0):,}", ms(ours.min), ms(their_min),
                         ratio(their_min, ours.min)])
    for size in run.values("bench_history", "test_windowed_turn", "size"):
        ours = run.find("bench_history", "test_windowed_turn", library="ctxwin", size=size)
        if ours is None:
            continue
        theirs = run.find("bench_history", "test_windowed_turn", library="langchain", size=size)
        their_min = theirs.min if theirs else None
        rows.append([f"{size:,}", "WindowedHistory turn (add + read window)", f"{ours.extra.get('window', 0):,}",
                     ms(ours.min), ms(their_min), ratio(their_min, ours.min)])
    if not rows:
        return []
    header = ["messages", "user action", "kept", "ctxwin", LANGCHAIN, "speed-up"]
    return ["### A chat loop, agent traces, o200k callable (`test_chat_loop`, `test_windowed_turn`), milliseconds", "",
            *table(header, rows, "llrrrr"), "",
            "Stateless rows: the history trimmed on the previous turn, one message appended (`history + [new]`, "
            "the same objects otherwise) and the list trimmed again, keeping about half its tokens; langchain_core "
            "trims the same list. The WindowedHistory turn adds one message and reads a 32k-token window; "
            "langchain_core's row adds it to its InMemoryChatMessageHistory and trims that history's messages."]


def planner_section(run: Run) -> list[str]:
    rows = []
    for budget in run.values("bench_planner", "test_fit", "budget_name"):
        for kind in run.values("bench_planner", "test_fit", "kind"):
            found = {key: run.find("bench_planner", "test_fit", run=key, kind=kind, budget_name=budget)
                     for key in ("trim", "plan", "plan+report", "langchain")}
            trim, plan, report, theirs = found.values()
            if trim is None or plan is None:
                continue
            their_min = theirs.min if theirs else None
            report_min = report.min if report else None
            rows.append([kind, budget, f"{trim.extra.get('max_tokens', 0):,}",
                         f"{plan.extra.get('kept', 0):,} / {trim.extra.get('kept', 0):,}", ms(trim.min),
                         ms(plan.min), ratio(plan.min, trim.min), ms(report_min), ratio(report_min, trim.min),
                         ms(their_min), ratio(their_min, plan.min)])
    if not rows:
        return []
    header = ["kind", "budget", "tokens", "kept: plan / trim", "ctxwin trim", "ctxwin plan", "plan / trim",
              "plan + report", "(+report) / trim", f"{LANGCHAIN} trim", "plan speed-up"]
    return ["### Planner end to end, cold (`bench_planner.py`), milliseconds", "",
            *table(header, rows, "llrrrrrrrrr"), "",
            "10,000 messages. \"plan + report\" also reads every figure of the plan's report, which tokenizes the "
            "messages the plan dropped without reading them. The plan speed-up is langchain_core's trim_messages "
            "(o200k callable, its closest equivalent) against the whole plan."]


def counting_section(run: Run) -> list[str]:
    rows = []
    for kind in run.values("bench_counters", "test_count_conversation", "kind"):
        for counter in ("approximate", "o200k"):
            ours = run.find("bench_counters", "test_count_conversation", kind=kind, library="ctxwin", counter=counter)
            theirs = run.find("bench_counters", "test_count_conversation", kind=kind, library="langchain",
                              counter=counter)
            if ours is None:
                continue
            rows.append([kind, counter, ms(ours.min), ms(theirs.min if theirs else None),
                         ratio(theirs.min if theirs else None, ours.min), speed(mb_per_s(ours))])
    if not rows:
        return []
    return ["### Counting a 1,000-message conversation (`bench_counters.py`), milliseconds", "",
            *table(["kind", "counter", "ctxwin", LANGCHAIN, "speed-up", "ctxwin MB/s"], rows, "llrrrr"), "",
            "langchain_core's `approximate` is `count_tokens_approximately` (characters / 4 plus framing); its "
            "`o200k` is the per-message o200k callable summed, as its trim_messages uses it. ctxwin's are "
            "`count_messages` of `approximate` (script- and code-aware) and `tiktoken:o200k_base` (batched). A "
            "speed-up below 1 means langchain_core is faster."]


TEXT_COUNTERS = ("o200k", "approximate", "approximate:safe", "chars/4")


def text_kind_section(run: Run) -> list[str]:
    rows = []
    for kind in run.values("bench_counters", "test_text_kind_throughput", "kind"):
        found = {c: run.find("bench_counters", "test_text_kind_throughput", kind=kind, counter=c)
                 for c in TEXT_COUNTERS}
        speeds = {c: mb_per_s(b) for c, b in found.items()}
        size = next((b.extra["bytes"] for b in found.values() if b and b.extra.get("bytes")), 0)
        rows.append([kind, f"{size / 1e3:,.0f}", *(speed(speeds[c]) for c in TEXT_COUNTERS),
                     ratio(speeds["approximate"], speeds["o200k"])])
    if not rows:
        return []
    return ["### Counter throughput by text kind (`bench_counters.py`), MB/s", "",
            *table(["kind", "KB", *TEXT_COUNTERS, "approximate / o200k"], rows, "lrrrrrr"), "",
            "The approximate counter's held-out corpus (`corpus.py`), one `count_texts` call per kind. o200k is "
            "`TiktokenCounter.count_texts`, threaded, ctxwin's fastest exact path (the approximate counter's own "
            "throughput target is against a one-thread loop, below); chars/4 is langchain_core's estimate."]


def batch_counting_section(run: Run) -> list[str]:
    benches = [b for b in run.benches if b.suite == "bench_counters" and b.test == "test_count_texts_throughput"]
    rows = []
    for bench in benches:
        bench.used = True
        loop_name = bench.params["name"].replace("count_texts", "loop")
        loop = next((b.min for b in benches if b.params.get("name") == loop_name), None)
        megabytes = float(bench.extra.get("MB", 0))
        rows.append([bench.params["name"], speed(megabytes / bench.min), ratio(loop, bench.min)])
    if not rows:
        return []
    return ["### Batch counting against a loop (`bench_counters.py`)", "",
            *table(["variant", "MB/s", "speed-up over the loop"], rows, "lrr")]


ENGINE_TESTS = {"test_engine_cold", "test_trim_engine", "test_fit_engine", "test_fit_many_engine"}
ENGINE_REFERENCE_ROWS = ("tokenizers encode", "tiktoken encode_ordinary")


def _engine_reference(run: Run, bench: Bench) -> Bench | None:
    """The row ``bench`` is compared with: the reference engine called directly (counting rows), else the same
    row with ``engine="reference"``."""
    if bench.test == "test_engine_cold":
        return next((b for b in run.benches if b.group == bench.group and b.params.get("row") in ENGINE_REFERENCE_ROWS),
                    None)
    same = {k: v for k, v in bench.params.items() if k != "engine"}
    return next((b for b in run.benches if b.test == bench.test and b.params.get("engine") == "reference"
                 and all(b.params.get(k) == v for k, v in same.items())), None)


def engine_section(run: Run) -> list[str]:
    benches = [b for b in run.benches if b.test in ENGINE_TESTS]
    rows = []
    for bench in benches:
        bench.used = True
        reference = _engine_reference(run, bench)
        label = bench.params.get("row") or " ".join(str(v) for k, v in bench.params.items() if k != "engine")
        engine = bench.extra.get("engine", "")
        differing = bench.extra.get("differing")
        rows.append([bench.group or "", label, engine, ms(bench.min), ms(bench.median),
                     ratio(reference.min if reference else None, bench.min),
                     "" if differing is None else f"{differing}/{bench.extra.get('documents', '')}"])
    if not rows:
        return []
    return ["### Engines side by side (`bench_counters.py`, `bench_trim.py`, `bench_planner.py`, `bench_batch.py`), "
            "milliseconds", "",
            *table(["group", "row", "engine", "min", "median", "reference / row", "documents differing"], rows,
                   "lllrrrr")]


def other_section(run: Run) -> list[str]:
    rest = [b for b in run.benches if not b.used]
    if not rest:
        return []
    rows = []
    for bench in rest:
        notes = ", ".join(f"{k}={v}" for k, v in bench.extra.items() if k not in ("bytes", "MB"))
        rows.append([f"`{bench.suite}`", bench.name, bench.group or "", ms(bench.min), ms(bench.median),
                     str(bench.rounds), notes])
    return ["### Other suites, milliseconds", "",
            *table(["suite", "benchmark", "group", "min", "median", "rounds", "notes"], rows, "lllrrrl")]


def render_markdown(run: Run, chart: str | None) -> str:
    sections = [
        trim_section(run), chat_loop_section(run), planner_section(run), counting_section(run), text_kind_section(run),
        batch_counting_section(run), engine_section(run), other_section(run),
    ]
    lines = ["<!-- generated by benchmarks/render.py from a pytest-benchmark run: edits here are overwritten -->", "",
             *machine_section(run), ""]
    if chart:
        lines += [f"![trim scaling, speed-ups over langchain_core, planner and counter throughput]({chart})", ""]
    for section in sections:
        if section:
            lines += [*section, ""]
    return "\n".join(lines)


def replace_region(text: str, region: str) -> str:
    """``text`` with what lies between the marker lines replaced; markers quoted inside a line are prose."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == START]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(f"the page needs one line {START} and, after it, one line {END} around the results region")
    return "".join(lines[: starts[0] + 1]) + region + "\n" + "".join(lines[ends[0] :])


# --- chart ------------------------------------------------------------------------------------------------------


def draw_chart(run: Run, path: Path) -> bool:
    """Four panels: trim scaling, speed-ups over langchain_core, the planner, counter throughput by text kind."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("the chart needs matplotlib: pip install 'ctxwin[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    drawn = [
        _trim_scaling(run, axes[0][0]), _speedups(run, axes[0][1]), _planner(run, axes[1][0]),
        _text_kinds(run, axes[1][1]),
    ]
    for ax, ok in zip(axes.flat, drawn, strict=True):
        if not ok:
            ax.set_axis_off()
            ax.text(0.5, 0.5, "not in this run", ha="center", va="center", color="grey")
    cpu = (run.machine.get("cpu") or {}).get("brand_raw", "")
    fig.suptitle(f"ctxwin against {LANGCHAIN}: min of rounds, {cpu} ({(run.machine.get('cpu') or {}).get('count', '?')}"
                 f" cores, shared), {run.datetime[:10]}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return any(drawn)


def _trim_scaling(run: Run, ax: Any) -> bool:
    sizes = run.values("bench_trim", "test_trim", "size")
    series = [
        (f"{LANGCHAIN}, o200k callable", {"library": "langchain", "kind": "o200k", "mode": "cold"}, "#ff7f0e", "-"),
        ("ctxwin cold, o200k callable", {"library": "ctxwin", "kind": "o200k", "mode": "cold"}, "#1f77b4", "-"),
        ("ctxwin cold, tiktoken:o200k_base", {"library": "ctxwin", "kind": "o200k-native", "mode": "cold"}, "#9ecae1",
         "--"),
        ("ctxwin warm (+1 message)", {"library": "ctxwin", "kind": "o200k", "mode": "warm"}, "#2ca02c", "-"),
    ]
    drawn = False
    for label, params, color, style in series:
        points = [(s, b.min * 1e3) for s in sizes if (b := run.find("bench_trim", "test_trim", size=s, **params))]
        if points:
            ax.plot(*zip(*points, strict=True), style, color=color, marker="o", label=label)
            drawn = True
    floor = [(s, b.min * 1e3) for s in sizes if (b := run.find("bench_trim", "test_floor", size=s))]
    if floor:
        ax.plot(*zip(*floor, strict=True), ":", color="grey", label="floor: tokenize the kept messages once")
    if drawn:
        ax.set(xscale="log", yscale="log", xlabel="messages (agent traces, half kept)", ylabel="ms",
               title="trim_messages: time by conversation size")
        ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
        ax.minorticks_off()
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    return drawn


def _speedups(run: Run, ax: Any) -> bool:
    sizes = run.values("bench_trim", "test_trim", "size")
    cases = [("o200k", "cold", "#1f77b4"), ("o200k-native", "cold", "#9ecae1"), ("o200k", "warm", "#2ca02c"),
             ("approx", "cold", "#7f7f7f"), ("approx", "warm", "#c7c7c7")]
    width = 0.8 / len(cases)
    drawn, top = False, 1.0
    for i, (counter, mode, color) in enumerate(cases):
        values = []
        for size in sizes:
            ours = run.find("bench_trim", "test_trim", library="ctxwin", kind=counter, mode=mode, size=size)
            theirs, _ = langchain_trim(run, counter, mode, size)
            values.append(theirs.min / ours.min if ours and theirs else 0.0)
        if any(values):
            positions = [j + (i - (len(cases) - 1) / 2) * width for j in range(len(sizes))]
            bars = ax.bar(positions, values, width, label=f"{counter} {mode}", color=color)
            ax.bar_label(bars, labels=[f"{v:.0f}" if v >= 10 else f"{v:.1f}" if v else "" for v in values],
                         fontsize=7)
            drawn, top = True, max(top, *values)
    if drawn:
        ax.axhline(1, color="black", linewidth=0.8)
        # log scale from 0.5x; the top leaves room for the legend above the bars
        ax.set(yscale="log", ylim=(0.5, top * 8), xticks=range(len(sizes)), xticklabels=[f"{s:,}" for s in sizes],
               xlabel="messages", ylabel=f"{LANGCHAIN} time / ctxwin time",
               title=f"trim_messages: speed-up over {LANGCHAIN} (1 = same)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
    return drawn


def _planner(run: Run, ax: Any) -> bool:
    kinds = run.values("bench_planner", "test_fit", "kind")
    runs = [("trim", "ctxwin trim"), ("plan", "ctxwin plan"), ("langchain", f"{LANGCHAIN} trim")]
    colors = {"trim": "#1f77b4", "plan": "#9ecae1", "langchain": "#ff7f0e"}
    width = 0.8 / len(runs)
    drawn = False
    for i, (key, label) in enumerate(runs):
        values = [b.min if (b := run.find("bench_planner", "test_fit", run=key, kind=k, budget_name="half")) else 0.0
                  for k in kinds]
        if any(values):
            bars = ax.bar([j + (i - 1) * width for j in range(len(kinds))], values, width, label=label,
                          color=colors[key])
            ax.bar_label(bars, labels=[f"{v:.2f}s" if v else "" for v in values], fontsize=7)
            drawn = True
    if drawn:
        size = next((b.extra.get("total") for b in run.benches if b.test == "test_fit" and b.extra.get("total")), "")
        ax.set(xticks=range(len(kinds)), xticklabels=kinds, ylabel="seconds",
               title=f"fitting {size:,} messages to half their tokens, cold" if size else "planner, cold")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return drawn


def _text_kinds(run: Run, ax: Any) -> bool:
    kinds = run.values("bench_counters", "test_text_kind_throughput", "kind")
    counters = TEXT_COUNTERS[:3]
    colors = {"o200k": "#7f7f7f", "approximate": "#1f77b4", "approximate:safe": "#9ecae1"}
    width = 0.8 / len(counters)
    drawn = False
    for i, counter in enumerate(counters):
        values = [mb_per_s(run.find("bench_counters", "test_text_kind_throughput", kind=k, counter=counter)) or 0.0
                  for k in kinds]
        if any(values):
            ax.bar([j + (i - 1) * width for j in range(len(kinds))], values, width, label=counter,
                   color=colors[counter])
            drawn = True
    if drawn:
        ax.set(xticks=range(len(kinds)), ylabel="MB/s",
               title="counter throughput by text kind (chars/4 runs at GB/s, not shown)")
        ax.set_xticklabels(kinds, rotation=30, ha="right")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return drawn


# --- command ----------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="pytest-benchmark JSON (pytest --benchmark-json=FILE)")
    parser.add_argument("--readme", type=Path, default=HERE / "README.md")
    parser.add_argument("--chart", type=Path, default=HERE / "results.png")
    args = parser.parse_args(argv)
    try:
        run = Run(json.loads(args.run.read_text(encoding="utf-8")))
        page = args.readme.read_text(encoding="utf-8")
        replace_region(page, "")  # the markers are there before anything is written
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    chart = os.path.relpath(args.chart, args.readme.parent) if draw_chart(run, args.chart) else None
    args.readme.write_text(replace_region(page, render_markdown(run, chart)), encoding="utf-8")
    print(f"wrote {args.readme} and {args.chart} from {len(run.benches)} benchmarks", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
