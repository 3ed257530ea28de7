"""Exit codes scripts can trust, usage errors named by their flag, and the CLI's rough edges, as real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import CHAT, FAST, assert_one_line_errors, plugin_site, run, write_json

from ctxwin.cli._budgets import parse_budget

HUGE_SYSTEM = [{"role": "system", "content": "rule " * 6000}, {"role": "user", "content": "hi"}]


def test_help_lists_the_exit_codes_and_version_and_python_m_ctxwin_work() -> None:
    help_text = run("--help")
    assert help_text.returncode == 0
    assert "exit codes: 0 done; 1 bad input or I/O error" in " ".join(help_text.stdout.split())
    assert "3 `fit --strict` and a conversation does not fit" in " ".join(help_text.stdout.split())
    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("ctxwin 0.")
    strategies = run("strategies")
    names = [line.split()[0] for line in strategies.stdout.splitlines()[1:]]
    assert strategies.returncode == 0 and {"filter", "summarize", "trim", "truncate_tool_output"} <= set(names)
    listed = json.loads(run("strategies", "--json").stdout)["strategies"]
    assert {s["name"] for s in listed} == set(names) and all(s["description"] for s in listed)


@pytest.mark.slow
def test_gpt_4_fits_out_of_the_box_with_half_its_window_reserved(tmp_path: Path) -> None:
    source = write_json(tmp_path / "chat.json", CHAT)
    result = run("fit", str(source), "-m", "gpt-4")  # max output 8,192 = its window
    assert result.returncode == 0, result.stderr
    assert "R reserved output 4,096" in result.stderr and json.loads(result.stdout) == CHAT


def test_over_budget_warns_and_writes_the_output(tmp_path: Path) -> None:
    source = write_json(tmp_path / "big.json", HUGE_SYSTEM)
    out = tmp_path / "out.json"
    out.write_text("old", encoding="utf-8")
    loose = run("fit", str(source), *FAST, "--json", "-o", str(out))
    assert loose.returncode == 0 and not json.loads(loose.stdout)["fits"]
    assert loose.stderr.startswith("warning: the conversation does not fit the budget (its plan says what must stay")
    assert len(loose.stderr.splitlines()) == 1 and json.loads(out.read_text(encoding="utf-8")) == HUGE_SYSTEM


def test_over_budget_strict_exits_3_leaving_the_output(tmp_path: Path) -> None:
    source = write_json(tmp_path / "big.json", HUGE_SYSTEM)
    out = tmp_path / "out.json"
    out.write_text("old", encoding="utf-8")
    strict = run("fit", str(source), *FAST, "--strict", "--json", "-o", str(out))
    assert strict.returncode == 3 and out.read_text(encoding="utf-8") == "old"
    assert strict.stderr == (
        "error: the conversation does not fit the budget (its plan says what must stay and what would help); "
        f"{out} left as it was\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("over", "total", "text"), [(2, 3, "2 of 3 conversations do not fit"), (1, 2, "1 of 2 conversations does not fit")]
)
def test_a_batch_names_how_many_do_not_fit(tmp_path: Path, over: int, total: int, text: str) -> None:
    lines = [HUGE_SYSTEM] * over + [CHAT] * (total - over)
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    loose = run("fit", str(source), *FAST)
    assert loose.returncode == 0 and text in loose.stderr and len(loose.stdout.splitlines()) == total
    strict = run("fit", str(source), *FAST, "--strict")
    assert strict.returncode == 3 and strict.stderr.startswith(f"error: {text} the budget")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--keep-last", "-1"], "--keep-last: expected a whole number, 0 or more, got '-1'"),
        (["--keep-last", "-3"], "--keep-last: expected a whole number, 0 or more, got '-3'"),
        (["--context-window", "0"], "--context-window: amount '0' must be positive"),
        (["--context-window", "-5"], "--context-window: amount '-5' must be positive"),
        (["--context-window", "lots"], "--context-window: amount 'lots' is not a number of tokens"),
        (["--context-window", "1e4"], "--context-window: amount '1e4' is not a number of tokens"),
        (["--context-window", "10" + "0" * 17], "--context-window: amount '1000000000000000000' is more tokens than"),
        (["--reserve", "-5"], "--reserve-output/--reserve: amount '-5' must be non-negative"),
        (["--reserve", "5k"], "--reserve-output/--reserve: reserve_output (5000) must be smaller than the context "
                              "window (4000)"),
        (["--strategy", ""], "--strategies/--strategy: expected strategy names, got an empty value"),
        (["--strategy", "trim,"], "--strategies/--strategy: 'trim,' has an empty name"),
        (["--strategy", "shred"], "--strategies/--strategy: strategies[0]: unknown strategy 'shred'"),
        (["--strategy", "trim", "--summarize"], "--summarizer/--summarize: needs 'summarize' in --strategies"),
        (["--strategy", "trim", "--keep-last", "2"], "--keep-last: needs 'summarize' in --strategies"),
        (["-m", "gpt-99"], "--model: unknown model 'gpt-99'"),
        (["--counter", "tiktoken:nope"], "--counter: counter 'tiktoken:nope': unknown tiktoken encoding 'nope'"),
        (["--workers", "-1"], "--workers/-w: expected a number of processes"),
    ],
)
@pytest.mark.slow
def test_usage_errors_exit_2_naming_the_flag(tmp_path: Path, args: list[str], error: str) -> None:
    source = write_json(tmp_path / "chat.json", CHAT)
    out = tmp_path / "out.json"
    base = ["-c", "approximate", "--context-window", "4k"] if "-m" not in args and "--counter" not in args else []
    if "--context-window" in args:
        base = ["-c", "approximate"]
    result = run("fit", str(source), *base, *args, "-o", str(out))
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()  # one line, no usage block
    assert line.startswith(f"ctxwin fit: error: {error}") and not out.exists()
    assert_one_line_errors(result.stderr)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["count", "bench"])
def test_unknown_models_and_counters_are_usage_errors_in_every_command(tmp_path: Path, command: str) -> None:
    source = write_json(tmp_path / "chat.json", CHAT)
    model = run(command, str(source), "-m", "gpt-4oo")
    assert model.returncode == 2 and model.stderr.startswith(f"ctxwin {command}: error: --model: unknown model")
    counter = run(command, str(source), "-c", "nope")
    assert counter.returncode == 2 and counter.stderr.startswith(f"ctxwin {command}: error: --counter: unknown")


@pytest.mark.parametrize(
    ("text", "tokens"), [("8k", 8000), ("8_000", 8000), ("8,000", 8000), ("1.5k", 1500), ("1k", 1000), ("0", 0)]
)
def test_token_amounts_are_read_like_bench_budgets(text: str, tokens: int) -> None:
    assert parse_budget(text, zero=True) == tokens
    if tokens:
        assert parse_budget(text) == tokens


@pytest.mark.slow
def test_fit_reads_token_amounts_and_json_prints_only_json(tmp_path: Path) -> None:
    source = write_json(tmp_path / "chat.json", CHAT)
    result = run("fit", str(source), "-c", "approximate", "--context-window", "8,000", "--reserve", "1.5k", "--json")
    assert result.returncode == 0 and result.stderr == ""
    report = json.loads(result.stdout)
    assert report["context_window"] == 8000 and report["reserve_output"] == 1500 and report["messages"] == CHAT


@pytest.mark.slow
def test_tools_given_twice_must_agree(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    other = [{"type": "function", "function": {"name": "other", "parameters": {"type": "object"}}}]
    tools_file = write_json(tmp_path / "tools.json", tools)
    same = write_json(tmp_path / "same.json", {"messages": CHAT, "tools": tools})
    assert run("fit", str(same), *FAST, "--tools", str(tools_file)).returncode == 0
    differ = write_json(tmp_path / "differ.json", {"messages": CHAT, "tools": other})
    result = run("fit", str(differ), *FAST, "--tools", str(tools_file))
    assert result.returncode == 2 and result.stderr == (
        f"ctxwin fit: error: --tools: {differ} has its own 'tools', which differ from {tools_file}; give one\n"
    )
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps({"messages": CHAT, "tools": other}) + "\n" + json.dumps(CHAT) + "\n")
    batch = run("fit", str(lines), *FAST, "--tools", str(tools_file))
    assert batch.returncode == 1 and len(batch.stdout.splitlines()) == 1
    assert batch.stderr == f"error: {lines}:1: the line has its own 'tools', which differ from --tools; give one\n"


@pytest.mark.slow
def test_a_broken_pretty_printed_file_is_one_error_with_line_and_column(tmp_path: Path) -> None:
    text = json.dumps(CHAT, indent=2).replace('"hello"', '"hello",,')
    source = tmp_path / "pretty.json"
    source.write_text(text, encoding="utf-8")
    for command in ("count", "fit", "bench"):
        result = run(command, str(source), *(FAST if command == "fit" else ["-c", "approximate"]))
        assert result.returncode == 1
        assert result.stderr == f"error: {source}: not valid JSON: Expecting property name enclosed in double " \
            "quotes at line 12 column 24\n"


@pytest.mark.slow
def test_count_figures_have_separators_and_right_plurals(tmp_path: Path) -> None:
    one = write_json(tmp_path / "one.json", [{"role": "user", "content": "word " * 3000}])
    result = run("count", str(one), "-m", "gpt-4")
    assert result.returncode == 0
    last = result.stdout.splitlines()
    assert last[-2].startswith("1 message: 3,00") and last[-2].endswith(" tokens")
    assert last[-1] == "context window 8,192 (max output 8,192)"


@pytest.mark.slow
def test_a_broken_plugin_is_one_warning_line(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "ctxwin_broken-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ctxwin-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[ctxwin]\nbroken = ctxwin_broken_plugin\n")
    (site / "ctxwin_broken_plugin.py").write_text("raise ImportError('broken on purpose')\n")
    source = write_json(tmp_path / "chat.json", CHAT)
    env = {"PYTHONPATH": str(site), "CTXWIN_LOAD_PLUGINS": "broken"}
    result = run("count", str(source), env=env)
    assert result.returncode == 0
    assert result.stderr == (
        "warning: plugin 'broken' failed in load: ImportError: broken on purpose (the other plugins work; see "
        "`ctxwin counters`)\n"
    )
    lines = tmp_path / "many.jsonl"
    lines.write_text("".join(json.dumps(CHAT) + "\n" for _ in range(70)), encoding="utf-8")  # enough for a pool
    batch = run("fit", str(lines), *FAST, "--workers", "2", env=env)
    assert batch.returncode == 0 and len(batch.stdout.splitlines()) == 70
    assert batch.stderr == result.stderr  # the workers load the plugins too, and say nothing


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["bench", "CHAT", "-m", "gpt-4o-mini", "--budgets", "0"], "ctxwin bench: error: --budgets: budget '0' must"),
        (["fit"], "ctxwin fit: error: the following arguments are required: file (see `ctxwin fit --help`)"),
        (["count", "CHAT", "--jsn"], "ctxwin: error: unrecognized arguments: --jsn (see `ctxwin --help`)"),
        (["shrink"], "ctxwin: error: command: invalid choice: 'shrink'"),
    ],
)
def test_every_usage_error_is_one_line(tmp_path: Path, args: list[str], error: str) -> None:
    source = str(write_json(tmp_path / "chat.json", CHAT))
    result = run(*(source if arg == "CHAT" else arg for arg in args))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(error), line


RAISING_PLUGIN = """
from ctxwin import BaseTokenCounter, hookimpl

class Fussy(BaseTokenCounter):
    name = "fussy"
    def count_text(self, text):
        if "boom" in text:
            raise RuntimeError("cannot count this")
        return len(text.split())

@hookimpl
def register_counters(register):
    register("fussy", lambda arg: Fussy())
"""


@pytest.mark.slow
def test_a_plugin_counter_that_raises_is_named_in_every_command(tmp_path: Path) -> None:
    env = plugin_site(tmp_path / "site", "fussy", RAISING_PLUGIN)
    boom = [{"role": "user", "content": "boom"}]
    one = write_json(tmp_path / "one.json", boom)
    many = tmp_path / "many.jsonl"
    many.write_text(f"{json.dumps(CHAT)}\n{json.dumps(boom)}\n", encoding="utf-8")
    budget = ["-c", "fussy", "--context-window", "4k"]
    for args in (["count", str(one), "-c", "fussy"], ["fit", str(one), *budget],
                 ["fit", str(many), *budget], ["fit", str(many), *budget, "-w", "2"]):
        result = run(*args, env=env)
        assert result.returncode == 1, result.stderr
        assert_one_line_errors(result.stderr)
        [line] = result.stderr.splitlines()
        assert "token counter 'fussy' (plugin 'fussy') failed on " in line and "cannot count this" in line, line
        assert "1 items" not in line
