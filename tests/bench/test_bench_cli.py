"""`ctxwin bench` as a real subprocess: the table, --json, --plot, and every kind of bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_support import generated, turn, write_jsonl

from ctxwin.counters import get_counter
from ctxwin.messages import HumanMessage, SystemMessage

ENV = {"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"}
CHAINS = ("last", "first", "summarize+trim", "truncate-tools+trim", "fit")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh interpreter; ``prelude`` runs first (e.g. to make an import fail)."""
    code = f"{prelude}\nimport sys\nfrom ctxwin.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=ENV)


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "chats.jsonl"
    return write_jsonl(path, [generated(seed, turns=12) for seed in range(8)])


@pytest.mark.slow
def test_table_for_every_default_chain_and_budget(chats: Path) -> None:
    result = run("bench", str(chats), "-m", "gpt-4o-mini", "--budgets", "1k,4000")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"ctxwin bench: 8 conversations from {chats}"
    for budget in ("1,000", "4,000"):
        header = lines.index(f"budget {budget} input tokens")
        rows = lines[header + 2 : header + 2 + len(CHAINS)]
        assert [row.split()[0] for row in rows] == list(CHAINS)
        assert all(f"/ {budget} " in row and "%" in row and "!" not in row for row in rows)
    assert all(len(line) <= 100 for line in lines[1:])


@pytest.mark.slow
def test_json_rows(chats: Path, tmp_path: Path) -> None:
    small = write_jsonl(tmp_path / "small.jsonl", [[SystemMessage("be brief"), *turn(0, tool=True), HumanMessage("q")]])
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "search", "parameters": {}}}]))
    result = run("bench", str(small), "-m", "gpt-4o-mini", "--budgets", "2k", "--strategies", "last,fit", "--json")
    with_tools = run(
        "bench",
        str(small),
        "-m",
        "gpt-4o-mini",
        "--budgets",
        "2k",
        "--strategies",
        "last",
        "--json",
        "--tools",
        str(tools),
    )
    assert result.returncode == 0 and with_tools.returncode == 0, result.stderr + with_tools.stderr
    report = json.loads(result.stdout)
    assert list(report) == ["results"]
    rows = report["results"]
    assert [(r["strategy"], r["budget"]) for r in rows] == [("last", 2000), ("fit", 2000)]
    counter = get_counter("gpt-4o-mini")
    conversation = [SystemMessage("be brief"), *turn(0, tool=True), HumanMessage("q")]
    for row in rows:  # the conversation fits: everything is kept
        assert row["conversations"] == 1 and isinstance(row["seconds_per_conversation"], float)
        assert row["tokens_used"] == counter.count_messages(conversation)
        assert row["recent_turns_kept"] == row["tool_pairs_intact"] == row["system_kept"] == 1.0
        assert row["messages_summarized"] == 0
    tool_definitions = json.loads(tools.read_text())
    assert (
        json.loads(with_tools.stdout)["results"][0]["tokens_used"]
        == counter.count_messages(conversation, tools=tool_definitions)
        > rows[0]["tokens_used"]
    )


@pytest.mark.slow
def test_counter_instead_of_a_model(chats: Path) -> None:
    result = run("bench", str(chats), "-c", "approximate", "--budgets", "3k", "--strategies", "last", "--json")
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["results"]
    assert row["conversations"] == 8 and 0 < row["tokens_used"] <= 3000


@pytest.mark.slow
def test_plot_writes_a_png(chats: Path, tmp_path: Path) -> None:
    out = tmp_path / "chart.png"
    result = run("bench", str(chats), "-m", "gpt-4o-mini", "--budgets", "1k,2k,4k", "--plot", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(PNG_MAGIC) and out.stat().st_size > 10_000
    assert f"chart written to {out}" in result.stderr


@pytest.mark.slow
def test_plot_without_matplotlib_says_how_to_install_it(chats: Path, tmp_path: Path) -> None:
    out = tmp_path / "chart.png"
    block = "import sys\nsys.modules['matplotlib'] = None  # any import of matplotlib now fails"
    result = run("bench", str(chats), "-m", "gpt-4o-mini", "--budgets", "1k", "--plot", str(out), prelude=block)
    assert result.returncode == 1
    assert "budget 1,000 input tokens" in result.stdout  # the table came first
    assert "pip install 'matplotlib" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.slow
def test_a_chart_that_cannot_be_written(chats: Path, tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "chart.png"
    result = run(
        "bench", str(chats), "-m", "gpt-4o-mini", "--budgets", "1k", "--strategies", "last", "--plot", str(out)
    )
    assert result.returncode == 1 and "budget 1,000 input tokens" in result.stdout
    assert f"cannot write the chart to {out}" in result.stderr


@pytest.mark.slow
def test_a_bad_line_is_reported_and_the_rest_measured(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mixed.jsonl", [generated(1, turns=3), generated(2, turns=3)], ["not json"])
    result = run("bench", str(path), "-m", "gpt-4o-mini", "--budgets", "1k", "--strategies", "last", "--json")
    assert result.returncode == 1
    assert f"{path}:3: not valid JSON" in result.stderr
    assert json.loads(result.stdout)["results"][0]["conversations"] == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--strategies", "last,lats"], "unknown strategy 'lats'"),
        (["--strategies", "fit+trim"], "cannot be combined"),
        (["--budgets", "4k,0"], "budget '0' must be positive"),
        (["--budgets=-4k"], "budget '-4k' must be positive"),
        (["--budgets", "4kb"], "budget '4kb' is not a number of tokens"),
    ],
)
def test_usage_errors_exit_2(chats: Path, args: list[str], error: str) -> None:
    result = run("bench", str(chats), "-m", "gpt-4o-mini", *args)
    assert result.returncode == 2 and error in result.stderr and not result.stdout
    assert len(result.stderr.splitlines()) == 1  # one line, no usage block
    if "lats" in error:
        valid = result.stderr.split("valid names: ", 1)[1].strip().split(", ")
        assert valid[:4] == ["last", "first", "truncate-tools", "fit"]  # the CLI's own names lead
        assert {"trim", "summarize", "filter", "clear_reasoning"} <= set(valid) and "lats" not in valid


@pytest.mark.slow
def test_model_or_counter_is_required(chats: Path) -> None:
    result = run("bench", str(chats))
    assert result.returncode == 2 and result.stderr == (
        "ctxwin bench: error: --model: give a model (see `ctxwin models`), or --counter SPEC\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["missing.jsonl", "-m", "gpt-4o-mini"], "missing.jsonl: no such file"),
        (["{chats}", "-m", "gpt-4o-mini", "--tools", "missing-tools.json"], "cannot read tool definitions"),
        (["{garbage}", "-m", "gpt-4o-mini"], "no conversation could be read"),
    ],
)
def test_bad_input_exits_1(chats: Path, tmp_path: Path, args: list[str], error: str) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json\n", encoding="utf-8")
    result = run("bench", *(a.format(chats=chats, garbage=garbage) for a in args))
    assert result.returncode == 1 and error in result.stderr and not result.stdout
