"""SIGTERM reaching ``ctxwin`` at the moments a run is most fragile (real subprocesses, real signals, bounded
waits): while a counter is built or a plugin loads, and after ``-o`` was replaced; and outputs that are an input
reached another way (``-o /dev/stdin``, stdout appending to FILE)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_support import CHAT, ENV, FAST, command, leftovers, plugin_site, run, write_json

pytestmark = pytest.mark.slow

OLD = "the user's own file\n"
WAIT = 60  # seconds: the bound on every wait for a subprocess to get somewhere


def wait_for(condition: object, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():  # type: ignore[operator]
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the subprocess never got there"
        time.sleep(0.01)


SLOW_COUNTER = """
import time
from pathlib import Path
from ctxwin import BaseTokenCounter, hookimpl

class Words(BaseTokenCounter):
    name = "words"
    def count_text(self, text):
        return len(text.split())

def build(arg):
    Path({ready!r}).write_text("building")
    time.sleep(30)  # SIGTERM comes long before
    return Words()

@hookimpl
def register_counters(register):
    register("slow", build)
"""

SLOW_IMPORT = """
import time
from pathlib import Path
Path({ready!r}).write_text("importing")
time.sleep(30)
"""


@pytest.mark.parametrize("where", ["building a counter", "loading a plugin"])
def test_sigterm_while_plugin_code_runs_exits_143(tmp_path: Path, where: str) -> None:
    ready = tmp_path / "ready"
    module = (SLOW_COUNTER if where == "building a counter" else SLOW_IMPORT).format(ready=str(ready))
    env = plugin_site(tmp_path / "site", "slow", module)
    source, target = write_json(tmp_path / "chat.json", CHAT), tmp_path / "out.json"
    target.write_text(OLD, encoding="utf-8")
    counter = "slow" if where == "building a counter" else "approximate"
    args = ["fit", str(source), "-c", counter, "--context-window", "4k", "-o", str(target)]
    process = subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**ENV, **env})
    wait_for(ready.exists, process)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=WAIT)
    assert (process.returncode, stderr.decode()) == (143, "error: terminated\n")  # not the plugin's failure
    assert target.read_text(encoding="utf-8") == OLD and leftovers(tmp_path) == []


def test_sigterm_after_the_output_was_replaced_changes_nothing(tmp_path: Path) -> None:
    """A broken plugin's warning is the last thing the run writes, after ``-o`` is in place; with stderr a full
    pipe, the run is held there while SIGTERM arrives."""
    env = plugin_site(tmp_path / "site", "broken", "raise ImportError('broken on purpose')\n")
    source, target = write_json(tmp_path / "chat.json", CHAT), tmp_path / "out.json"
    target.write_text(OLD, encoding="utf-8")
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    filled = 0
    try:
        while True:
            filled += os.write(write_end, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(write_end, True)
    args = ["fit", str(source), *FAST, "--json", "-o", str(target)]
    process = subprocess.Popen(command(*args), stdout=subprocess.DEVNULL, stderr=write_end, env={**ENV, **env})
    os.close(write_end)
    try:
        wait_for(lambda: target.read_text(encoding="utf-8") != OLD, process)
        process.send_signal(signal.SIGTERM)
        time.sleep(0.2)  # let the signal's handler run while the write waits
    finally:
        with os.fdopen(read_end, "rb") as stderr:
            said = stderr.read()[filled:].decode()
        process.wait(timeout=WAIT)
    assert process.returncode == 0 and "terminated" not in said
    assert said.startswith("warning: plugin 'broken' failed in load")
    assert json.loads(target.read_text(encoding="utf-8")) == CHAT and leftovers(tmp_path) == []


def test_an_output_that_is_the_input_reached_another_way_is_refused(tmp_path: Path) -> None:
    source = write_json(tmp_path / "in.json", CHAT)
    before = source.read_bytes()
    with source.open("rb") as stdin:
        through_stdin = subprocess.run(command("fit", "-", *FAST, "-o", "/dev/stdin"), stdin=stdin,
                                       capture_output=True, env=ENV, timeout=WAIT)
    with source.open("ab") as stdout:
        appending = subprocess.run(command("fit", str(source), *FAST), stdout=stdout, stderr=subprocess.PIPE,
                                   env=ENV, timeout=WAIT)
    for result, where in ((through_stdin, "/dev/stdin"), (appending, "stdout")):
        assert result.returncode == 2
        assert result.stderr.decode() == (
            f"ctxwin fit: error: -o/--output: {where} is the same file as FILE; write to another file\n"
        )
    assert source.read_bytes() == before
    piped = run("fit", "-", *FAST, stdin=json.dumps(CHAT))  # stdin and stdout pipes are no file
    assert piped.returncode == 0 and json.loads(piped.stdout) == CHAT


def test_a_batch_with_bad_lines_writes_the_others_and_exits_1_as_help_says(tmp_path: Path) -> None:
    source, target = tmp_path / "many.jsonl", tmp_path / "out.jsonl"
    target.write_text(OLD, encoding="utf-8")
    source.write_text(f"{json.dumps(CHAT)}\nnot json\n{json.dumps(CHAT)}\n", encoding="utf-8")
    result = run("fit", str(source), *FAST, "-o", str(target))
    assert result.returncode == 1 and result.stderr.startswith(f"error: {source}:2: not valid JSON")
    assert [json.loads(line)["ctxwin"]["line"] for line in target.read_text(encoding="utf-8").splitlines()] == [1, 3]
    said = " ".join(run("fit", "--help").stdout.split())
    assert "1 bad input or I/O error (-o is left as it was, except that a JSONL batch with bad lines writes" in said
