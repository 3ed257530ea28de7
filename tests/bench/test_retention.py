"""Retention (ctxwin.cli._bench.retention): facts kept, weighted to the user's; probes; and `ctxwin bench --probes`
as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_support import write_jsonl

from ctxwin.cli._bench.retention import USER_WEIGHT, Facts, Probe, ProbeFileError, probes_kept, read_probes
from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

ENV = {"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"}


def support_chat(n: int) -> list[BaseMessage]:
    """A chat whose user states a ticket id early, a tool reports a host, then many turns of filler."""
    messages: list[BaseMessage] = [
        SystemMessage("You are the support assistant."),
        HumanMessage(f"My ticket is INC-{48_210 + n} and the refund is $1,250.00, please keep it in mind."),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "ticket"}, "id": "c1"}]),
        ToolMessage(f"ticket assigned to host db-prod-{10 + n}.billing.internal", tool_call_id="c1"),
        AIMessage("The ticket is assigned; I will follow up."),
    ]
    for t in range(40):
        messages += [HumanMessage(f"And what about the weather in the mountains this week, turn {t}?"),
                     AIMessage("It looks sunny with a few clouds in the afternoon and a cool breeze. " * 3)]
    return messages


def test_facts_kept_by_a_message_sent_unchanged_or_by_their_text_in_a_new_one() -> None:
    messages = support_chat(0)
    facts = Facts.of(messages)
    assert {f.text for f in facts.facts} == {"INC-48210", "$1,250.00", "db-prod-10.billing.internal"}
    assert facts.kept(messages).share == 1.0
    assert facts.kept(messages[5:]).share == 0.0 and facts.kept(messages[5:]).user_share == 0.0
    tool_only = facts.kept(messages[3:])  # the tool result sent unchanged: its fact, which the user did not state
    assert tool_only.share == pytest.approx(1 / (2 * USER_WEIGHT + 1)) and tool_only.user_share == 0.0
    summary = SystemMessage("Summary: user asked about INC-48210 (refund $1,250.00).")
    kept = facts.kept([summary, *messages[5:]])  # the user's two facts, in a summary: weighed USER_WEIGHT each
    assert kept.share == pytest.approx(2 * USER_WEIGHT / (2 * USER_WEIGHT + 1)) and kept.user_share == 1.0
    assert Facts.of([HumanMessage("hello there")]).kept([]).share is None  # nothing to measure


def test_a_probe_is_kept_when_every_string_it_needs_is_in_the_request() -> None:
    messages = support_chat(0)
    probes = [Probe(("INC-48210",)), Probe(("INC-48210", "db-prod-10.billing.internal")), Probe(("INC-99999",))]
    assert probes_kept(probes, messages) == [True, True, False]
    assert probes_kept(probes, [messages[1]]) == [True, False, False]
    assert probes_kept([{"needs": "lookup"}], messages) == [True]  # tool calls are part of the request


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON or JSONL probes"),
        ("", "no probes"),
        ('{"question": "which ticket?"}', "a probe needs 'needs'"),
        ('{"needs": []}', "a probe needs 'needs'"),
        ('{"needs": ["x", 3]}', "a probe needs 'needs'"),
        ('{"needs": "x", "conversation": 0}', "'conversation' must be a line number"),
        ('{"needs": "x", "conversation": true}', "'conversation' must be a line number"),
        ('[{"needs": "x"}, 7]', ":2: a probe must be a JSON object"),
    ],
)
def test_bad_probe_files_are_named_by_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "probes.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ProbeFileError, match=message) as caught:
        read_probes(path)
    assert str(path) in str(caught.value)


def test_probes_by_conversation_line(tmp_path: Path) -> None:
    path = tmp_path / "probes.json"
    path.write_text(json.dumps([{"needs": "a"}, {"needs": ["b"], "conversation": 2, "id": 7, "question": "q?"}]))
    assert read_probes(path) == {None: [Probe(("a",))], 2: [Probe(("b",), "q?", "7")]}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom ctxwin.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=ENV)


@pytest.mark.slow
def test_bench_reports_facts_and_probes_for_every_chain(tmp_path: Path) -> None:
    chats = write_jsonl(tmp_path / "chats.jsonl", [support_chat(n) for n in range(3)])
    probes = tmp_path / "probes.jsonl"
    probes.write_text("\n".join(json.dumps({"conversation": n + 1, "needs": [f"INC-{48_210 + n}"]}) for n in range(3)))
    chains = "last,summarize+trim,fit"
    result = run("bench", str(chats), "-c", "tiktoken:o200k_base", "--budgets", "400", "--strategies", chains,
                 "--probes", str(probes), "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["strategy"]: r for r in json.loads(result.stdout)["results"]}
    # the trim drops what the user stated; the ledger carries it back (docs/planner.md, "The ledger")
    assert rows["last"]["probes"] == 3 and rows["last"]["probes_kept"] == 1.0
    assert rows["summarize+trim"]["probes_kept"] == 1.0 and rows["summarize+trim"]["user_facts_kept"] == 1.0
    table = run("bench", str(chats), "-c", "tiktoken:o200k_base", "--budgets", "400", "--strategies", chains,
                "--probes", str(probes))
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if line.strip().startswith("strategy"))
    assert header.split()[-5:-3] == ["facts", "recall"]
    row = next(line for line in table.stdout.splitlines() if line.strip().startswith("summarize+trim"))
    assert row.split()[-5:-3] == ["100%", "100%"]


@pytest.mark.slow
def test_bench_rejects_probes_about_a_missing_conversation(tmp_path: Path) -> None:
    chats = write_jsonl(tmp_path / "chats.jsonl", [support_chat(0)])
    probes = tmp_path / "probes.jsonl"
    probes.write_text(json.dumps({"conversation": 5, "needs": "x"}))
    result = run("bench", str(chats), "-c", "tiktoken:o200k_base", "--probes", str(probes))
    assert result.returncode == 1 and "probes about conversation 5" in result.stderr and result.stdout == ""
    probes.write_text("{")
    result = run("bench", str(chats), "-c", "tiktoken:o200k_base", "--probes", str(probes))
    assert result.returncode == 1 and "not JSON or JSONL probes" in result.stderr


@pytest.mark.slow
def test_the_chart_has_a_facts_panel_and_a_probes_panel_when_there_are_probes(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")  # the optional plot extra; test_bench_cli covers the error without it
    from ctxwin.cli._bench.plot import write_plot
    from ctxwin.cli._bench.runner import BenchResult

    def row(strategy: str, budget: int, probes: int) -> BenchResult:
        result = BenchResult(strategy, budget, conversations=2, seconds=0.01, tokens_used=budget, tokens_total=budget)
        result.facts_shares, result.probes, result.probes_answerable = [0.5, 0.7], probes, probes // 2
        return result

    widths = []
    for probes in (0, 4):
        out = tmp_path / f"chart{probes}.png"
        write_plot([row("last", 1000, probes), row("last", 4000, probes)], out)
        widths.append(int.from_bytes(out.read_bytes()[16:20], "big"))  # the PNG header's width
    assert widths[1] * 4 == widths[0] * 5  # four panels, then five (probes answerable)


def test_a_typed_probe_is_read_with_its_kind_place_and_stale_values(tmp_path: Path) -> None:
    path = tmp_path / "typed.jsonl"
    path.write_text('{"needs": "a", "kind": "limit", "at": 3, "stale": "b"}\n{"needs": "c", "kind": "wish"}\n')
    with pytest.raises(ProbeFileError, match=":2: a probe's 'kind' must be one of rule"):
        read_probes(path)
    path.write_text('{"needs": "a", "kind": "limit", "at": 3, "stale": "b"}\n')
    assert read_probes(path) == {None: [Probe(("a",), kind="limit", at=3, stale=("b",))]}
