"""fit_many when processes die: an item that kills its worker, a script without the ``__main__`` guard, and short
inputs that need no pool at all. Real worker pools and real scripts in subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from batch_support import KILL, conversations, die_on_marker, in_session

import ctxwin
from ctxwin.batch import fit_many
from ctxwin.batch._pool import WORKER_DIED

FIT = {"model": "gpt-4o", "context_window": 2500, "reserve_output": 500}
ENV = {"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"}


@pytest.mark.slow
def test_an_item_that_kills_its_worker_is_that_items_error_and_the_run_goes_on() -> None:
    items = [c for c in conversations(40, seed=3) if isinstance(c, list)]
    items[5] = items[23] = KILL  # type: ignore[call-overload]
    results = list(fit_many(items, workers=2, chunksize=2, decode=die_on_marker, **FIT))
    reference = list(fit_many([[] if i == KILL else i for i in items], workers=1, **FIT))
    assert [r.index for r in results] == list(range(len(items)))
    for result, want in zip(results, reference, strict=True):
        if items[result.index] == KILL:
            assert result.error == WORKER_DIED and result.messages is None
        else:
            assert result.ok and result.messages is not None and want.messages is not None
            assert result.messages == want.messages and result.summary == want.summary


def _script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "pasted.py"
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=ENV)


README_PASTE = """
    from ctxwin.batch import fit_many

    conversations = [[{"role": "user", "content": f"question {i}"}] for i in range(COUNT)]
    results = fit_many(conversations, workers=2, model="gpt-4o-mini", context_window=8_000, reserve_output=1_000)
    print(sum(result.ok for result in results))
"""


@pytest.mark.slow
def test_a_script_without_the_main_guard_is_told_why_before_any_worker_starts(tmp_path: Path) -> None:
    result = _script(tmp_path, README_PASTE.replace("COUNT", "200"))
    assert result.returncode == 1 and "worker process died" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: fit_many starts worker processes, and each one imports")
    assert "(line 5)" in last and 'Put that code under `if __name__ == "__main__":`, or pass workers=1' in last
    guarded = README_PASTE.replace("COUNT", "200").replace("\n    results", "\n    if __name__ == '__main__':\n"
                                                           "        results").replace("\n    print", "\n        print")
    result = _script(tmp_path, guarded)
    assert result.returncode == 0 and result.stdout == "200\n", result.stderr


@pytest.mark.slow
def test_a_short_input_is_fitted_in_process_so_even_an_unguarded_script_works(tmp_path: Path) -> None:
    result = _script(tmp_path, README_PASTE.replace("COUNT", "3"))
    assert result.returncode == 0 and result.stdout == "3\n", result.stderr


RUN_UNTIL_KILLED = """
    import itertools, sys
    from ctxwin.batch import fit_many

    if __name__ == "__main__":
        turns = [{"role": "user", "content": "the build failed on step three " * 40}] * 30
        conversations = [turns] * 100_000
        source = conversations if sys.argv[1] == "list" else (c for c in conversations)
        for result in fit_many(source, workers=2, model="gpt-4o", context_window=2500, reserve_output=500):
            print(result.index, flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("source", ["list", "generator"])  # workers forked from the script, or from a fork server
def test_workers_die_with_a_script_killed_by_sigkill(tmp_path: Path, source: str) -> None:
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(RUN_UNTIL_KILLED), encoding="utf-8")
    checkout = str(Path(ctxwin.__file__).parents[1])  # the ctxwin under test, not whichever is installed
    process = subprocess.Popen(
        [sys.executable, str(script), source], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**ENV, "PYTHONPATH": checkout}, start_new_session=True,
    )
    assert process.stdout is not None
    for _ in range(100):  # results are coming back: the workers are fitting
        assert process.stdout.readline(), process.communicate()
    assert len(in_session(process.pid)) >= 3
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)  # EOF: no worker holds the script's stdout or stderr
    deadline = time.monotonic() + 10
    while (left := in_session(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []
