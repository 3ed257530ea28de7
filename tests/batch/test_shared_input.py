"""fit_many over a list: workers forked from a single-threaded caller read the conversations from the memory they
inherit, and the caller never writes one down; with another thread running, items travel pickled as before.

Each case runs in a fresh subprocess, whose threads the test controls (pytest's own process may run threads of
earlier tests, e.g. tiktoken's thread pool).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from batch_support import ProcessTag, conversations

from ctxwin.batch import fit_many
from ctxwin.batch._pool import WORKER_DIED

FIT = {"model": "gpt-4o", "context_window": 600, "reserve_output": 100}
ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import gc, json, os, sys, threading, types
from batch_support import KILL, ProcessTag, conversations, die_on_marker
from ctxwin.batch import fit_many

def main():
    mode = sys.argv[1]
    if mode == "thread":  # another thread, idle: forking is ruled out all the same
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    items = [c for c in conversations(60, seed=5) if isinstance(c, list) and all(isinstance(m, dict) for m in c)]
    # a mapping proxy cannot be pickled: such an item is fitted where it is, in a worker only if the worker has it
    items = [[types.MappingProxyType(m) for m in c] for c in items]
    options = {"workers": 2, "chunksize": 3, "strategies": [ProcessTag(), "trim"], "model": "gpt-4o",
               "context_window": 600, "reserve_output": 100}
    if mode == "kill":
        items[4] = items[17] = KILL
        options["decode"] = die_on_marker
    if mode == "frozen":  # the caller froze objects of its own: the run leaves them frozen
        gc.freeze()
    if mode == "counted":  # a long conversation fitted here first: tiktoken's batches started a thread pool
        from ctxwin.planner import fit
        fit([{"role": "user", "content": "the build failed on step three " * 2000}] * 4, model="gpt-4o")
        assert threading.active_count() > 1
    frozen = gc.get_freeze_count()
    count = len(items)
    runs = []
    for _ in range(2 if mode == "twice" else 1):  # a second run right after the first pool shut down
        results = fit_many(list(items), **options)
        first = next(results)
        runs.append({"during": gc.get_freeze_count(), "rows": rows([first, *results])})
    items.clear()  # the list as it was at the call is what is fitted
    print(json.dumps({"pid": os.getpid(), "count": count, "rows": runs[-1]["rows"], "runs": runs,
                      "frozen": [frozen, gc.get_freeze_count()]}))

def rows(results):
    return [{"index": r.index, "error": r.error, "messages": [m.content for m in r.messages or []],
             "tags": [w.split(": ")[1].split(":")[0] for w in (r.summary or {}).get("warnings", [])
                      if w.startswith("process_tag")]} for r in results]

if __name__ == "__main__":
    main()
"""


def _run(tmp_path: Path, mode: str) -> dict[str, Any]:
    script = tmp_path / "shared_input.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "CTXWIN_LOAD_PLUGINS": "",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "batch")])}
    done = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _reference(count: int) -> list[list[str]]:
    items = [c for c in conversations(60, seed=5) if isinstance(c, list) and all(isinstance(m, dict) for m in c)]
    assert len(items) == count
    results = fit_many(items, workers=1, strategies=[ProcessTag(), "trim"], **FIT)
    return [[m.content for m in r.messages or []] for r in results]


def _where(run: dict[str, Any]) -> set[str]:
    return {pid for row in run["rows"] for pid in row["tags"]}


def _forked(run: dict[str, Any]) -> bool:
    """Whether every run's items were fitted by workers (mapping proxies cannot travel: they had them)."""
    return all({pid for row in r["rows"] for pid in row["tags"]} - {str(run["pid"])} and not any(
        str(run["pid"]) in row["tags"] for row in r["rows"]) for r in run["runs"])


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked only on Linux")


@pytest.mark.slow
def test_a_single_threaded_caller_forks_workers_that_read_the_list_themselves(tmp_path: Path) -> None:
    run = _run(tmp_path, "single")
    assert [row["index"] for row in run["rows"]] == list(range(run["count"]))
    assert [row["messages"] for row in run["rows"]] == _reference(run["count"])  # the list as it was at the call
    where = _where(run)
    # items that cannot be pickled were fitted by the workers: they never travelled, the workers had them
    assert where and str(run["pid"]) not in where and len(where) <= 2
    # while the workers ran, the caller's objects were out of its collector's view (no page copied for it); after,
    # back in it
    assert run["runs"][0]["during"] > 0 and run["frozen"] == [0, 0]


@pytest.mark.slow
def test_a_run_right_after_another_forks_its_workers_too(tmp_path: Path) -> None:
    run = _run(tmp_path, "twice")
    assert len(run["runs"]) == 2 and _forked(run)
    assert [row["messages"] for row in run["rows"]] == _reference(run["count"])


@pytest.mark.slow
def test_a_caller_that_fitted_here_first_still_forks_its_workers(tmp_path: Path) -> None:
    """Issue 49: fitting in this process once started tiktoken's thread pool, and from then on every item of a list
    was pickled for the workers of a fork server; ctxwin's idle pools are now stopped for the fork."""
    run = _run(tmp_path, "counted")
    assert _forked(run)
    assert [row["messages"] for row in run["rows"]] == _reference(run["count"])


@pytest.mark.slow
def test_objects_the_caller_froze_stay_frozen(tmp_path: Path) -> None:
    run = _run(tmp_path, "frozen")
    before, after = run["frozen"]
    # frozen objects that die leave the frozen ones; none are added, and the run unfreezes none of them
    assert 0.9 * before < after <= run["runs"][0]["during"] <= before and _forked(run)


@pytest.mark.slow
def test_with_another_thread_running_items_travel_pickled_and_unpicklable_ones_are_fitted_in_the_caller(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, "thread")
    assert [row["messages"] for row in run["rows"]] == _reference(run["count"])
    assert _where(run) == {str(run["pid"])}  # nothing could travel: every chunk fell back to the caller


@pytest.mark.slow
def test_a_killed_forked_worker_is_replaced_by_forking_again(tmp_path: Path) -> None:
    run = _run(tmp_path, "kill")
    rows = run["rows"]
    assert [row["index"] for row in rows] == list(range(run["count"]))
    assert [row["error"] for row in rows if row["error"]] == [WORKER_DIED, WORKER_DIED]
    assert rows[4]["error"] == rows[17]["error"] == WORKER_DIED
    reference = _reference(run["count"])
    assert all(row["messages"] == reference[row["index"]] for row in rows if not row["error"])
    assert str(run["pid"]) not in _where(run)  # the new pool's workers read the list too
