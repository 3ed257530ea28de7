"""`ctxwin fit -o`: the target is replaced by a complete file or left as it was, whatever happens mid-run.

Real subprocesses: bad inputs, unwritable targets, an output equal to an input, SIGINT and SIGKILL while a JSONL
batch streams into its temporary file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_support import CHAT, ENV, FAST, assert_one_line_errors, command, leftovers, run, write_json

OLD = "the user's own file\n"


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "out.json"
    path.write_text(OLD, encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "error"),
    [
        ('[{"role": "ghost", "content": "x"}]', "messages[0]: unexpected message type: 'ghost'"),
        ("[\n  {\"role\": \"user\",\n  \"content\": }\n]\n", "not valid JSON: Expecting value at line 3 column 14"),
        ('[{"role": "tool", "content": "x"}]', "messages[0]:"),
        ("", "empty file"),
    ],
)
def test_a_bad_input_leaves_the_target_as_it_was(tmp_path: Path, target: Path, content: str, error: str) -> None:
    source = tmp_path / "bad.json"
    source.write_text(content, encoding="utf-8")
    result = run("fit", str(source), *FAST, "-o", str(target))
    assert result.returncode == 1 and error in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: ")
    assert target.read_text(encoding="utf-8") == OLD and leftovers(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["FILE", "--tools"])
def test_an_output_that_is_an_input_is_refused_before_anything_is_read(tmp_path: Path, flag: str) -> None:
    source = write_json(tmp_path / "chat.json", CHAT)
    tools = write_json(tmp_path / "tools.json", [])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    same = source if flag == "FILE" else tools
    (tmp_path / "link.json").symlink_to(same)  # the same file by another name
    for output in (str(same), str(tmp_path / "link.json"), f"{tmp_path}/./{same.name}"):
        result = run("fit", str(source), *FAST, "--tools", str(tools), "-o", output)
        assert result.returncode == 2, result.stderr
        said = f"ctxwin fit: error: -o/--output: {output} is the same file as {flag}; write to another file\n"
        assert result.stderr == said
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "link.json"} == before


@pytest.mark.slow
@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("{tmp}/missing/out.json", "no such directory"),
        ("{tmp}", "is a directory"),
        ("/dev/full", "No space left on device"),
        ("/proc/version", "cannot write /proc/version"),
    ],
)
def test_an_unwritable_output_is_one_line_and_exit_1(tmp_path: Path, output: str, reason: str) -> None:
    source = write_json(tmp_path / "chat.json", CHAT)
    result = run("fit", str(source), *FAST, "--json", "-o", output.format(tmp=tmp_path))  # no table on stderr
    assert result.returncode == 1 and reason in result.stderr
    assert result.stderr.splitlines()[-1].startswith("error: cannot write ")
    assert_one_line_errors(result.stderr)
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_the_output_replaces_the_target_whole_keeping_its_permissions(tmp_path: Path, target: Path) -> None:
    source = write_json(tmp_path / "chat.json", CHAT)
    target.chmod(0o640)
    result = run("fit", str(source), *FAST, "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert json.loads(target.read_text(encoding="utf-8")) == CHAT
    assert target.stat().st_mode & 0o777 == 0o640 and leftovers(tmp_path) == []
    fresh = tmp_path / "new.json"
    assert run("fit", str(source), *FAST, "-o", str(fresh)).returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600


def test_dash_is_stdout(tmp_path: Path) -> None:
    source = write_json(tmp_path / "chat.json", CHAT)
    result = run("fit", str(source), *FAST, "-o", "-")
    assert result.returncode == 0 and json.loads(result.stdout) == CHAT
    assert not (tmp_path / "-").exists() and not Path("-").exists()


def _batch(path: Path, lines: int) -> Path:
    long_chat = [{"role": "user" if i % 2 else "assistant", "content": f"message {i} " * 30} for i in range(20)]
    path.write_text("".join(json.dumps({"id": n, "messages": long_chat}) + "\n" for n in range(lines)))
    return path


def _start_mid_run(tmp_path: Path, target: Path) -> subprocess.Popen[bytes]:
    """A big JSONL batch fitting into ``target``; returns once its temporary file has data in it."""
    source = _batch(tmp_path / "big.jsonl", 5_000)
    process = subprocess.Popen(
        command("fit", str(source), *FAST, "-o", str(target)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        temps = leftovers(tmp_path)
        if temps and (tmp_path / temps[0]).stat().st_size > 0:
            return process
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    process.kill()
    raise AssertionError("the batch never started writing")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "code", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_ctrl_c_or_sigterm_mid_batch_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, target: Path, signum: int, code: int, said: str
) -> None:
    process = _start_mid_run(tmp_path, target)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code
    assert stderr.decode() == f"error: {said}\n"
    assert target.read_text(encoding="utf-8") == OLD and leftovers(tmp_path) == []


@pytest.mark.slow
def test_ctrl_c_with_workers_stops_them_quietly(tmp_path: Path, target: Path) -> None:
    source = _batch(tmp_path / "big.jsonl", 5_000)
    process = subprocess.Popen(
        command("fit", str(source), *FAST, "--workers", "2", "-o", str(target)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        start_new_session=True,  # Ctrl-C in a terminal reaches the whole process group: send it to the group
    )
    deadline = time.monotonic() + 60
    while not any((tmp_path / t).stat().st_size for t in leftovers(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and stderr.decode() == "error: interrupted\n"
    assert target.read_text(encoding="utf-8") == OLD and leftovers(tmp_path) == []


@pytest.mark.slow
def test_sigkill_mid_batch_never_touches_the_target(tmp_path: Path, target: Path) -> None:
    process = _start_mid_run(tmp_path, target)
    process.kill()
    process.communicate(timeout=60)
    assert target.read_text(encoding="utf-8") == OLD
    assert all(name.startswith(".out.json.ctxwin-tmp-") for name in leftovers(tmp_path))  # recognisable
    # Without an earlier file, there is still no partial target.
    (tmp_path / "big.jsonl").unlink()
    target.unlink()
    process = _start_mid_run(tmp_path, target)
    process.kill()
    process.communicate(timeout=60)
    assert not target.exists()


@pytest.mark.slow
def test_a_batch_that_completes_replaces_the_target(tmp_path: Path, target: Path) -> None:
    source = _batch(tmp_path / "small.jsonl", 3)
    result = run("fit", str(source), *FAST, "-o", str(target))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [row["id"] for row in rows] == [0, 1, 2] and leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_batch_of_only_bad_lines_does_not_empty_the_target(tmp_path: Path, target: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text('{"messages": [{"role": "ghost", "content": "x"}]}\nnot json\n', encoding="utf-8")
    result = run("fit", str(source), *FAST, "-o", str(target))
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 2
    assert target.read_text(encoding="utf-8") == OLD and leftovers(tmp_path) == []
