"""``ctxwin bench --session``: where requests are made, how each is billed against the previous one, the replay of
the policies (the cache-stable session bills less than a sliding trim and re-fitting), and the command itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_support import generated, turn, write_jsonl

from ctxwin.batch._conversation import Conversation
from ctxwin.cli._bench.billing import STANDARD_RULES, Biller
from ctxwin.cli._bench.replay import make_policy, parse_session_chains, request_points, run_session_bench
from ctxwin.cli._bench.retention import Probe
from ctxwin.counters import get_counter, get_model
from ctxwin.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.planner import Planner
from ctxwin.strategies._meter import Meter

ENV = {"CTXWIN_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"}
COUNTER = get_counter("gpt-4o")


def test_a_request_after_each_user_message_and_each_batch_of_tool_results() -> None:
    call = {"name": "search", "args": {}, "id": "c1"}
    call2 = {"name": "search", "args": {}, "id": "c2"}
    messages = [SystemMessage("s"), HumanMessage("q"), AIMessage("", tool_calls=[call, call2]),
                ToolMessage("r1", tool_call_id="c1"), ToolMessage("r2", tool_call_id="c2"), AIMessage("a"),
                HumanMessage("q2"), AIMessage("a2")]
    assert request_points(messages) == [2, 5, 7]


def test_billing_reads_the_shared_prefix_from_1024_tokens_in_128_token_steps() -> None:
    big = [SystemMessage("policy " * 1500), *turn(0), *turn(1)]
    biller = Biller(STANDARD_RULES, Meter(COUNTER))
    first = biller.bill(big[:2], COUNTER.count_messages(big[:2]))
    assert (first.shared, first.cached, first.billed) == (0, 0, first.tokens)  # nothing cached yet
    second = biller.bill(big, COUNTER.count_messages(big))
    shared = sum(COUNTER.count_message(m) for m in big[:2])
    assert second.shared == shared and second.cached == shared // 128 * 128 and second.hit
    assert second.billed == pytest.approx(second.tokens - second.cached + 0.1 * second.cached)
    moved = biller.bill(big[1:], COUNTER.count_messages(big[1:]))  # the system prompt dropped: nothing shared
    assert moved.shared == 0 and not moved.hit
    small = Biller(STANDARD_RULES, Meter(COUNTER))
    small.bill(big[1:3], 10)
    assert small.bill(big[1:5], COUNTER.count_messages(big[1:5])).cached == 0  # under 1,024 shared tokens


def test_explicit_caching_writes_the_rest_at_the_write_price() -> None:
    rules = get_model("claude-sonnet-4-5").caching
    assert rules is not None
    messages = [SystemMessage("policy " * 1500), *turn(0), *turn(1)]
    biller = Biller(rules, Meter(COUNTER))
    first = biller.bill(messages[:2], 2000)
    assert first.written == 2000 and first.billed == pytest.approx(2000 * 1.25)
    second = biller.bill(messages, 2300)
    assert second.cached == second.shared and second.written == 2300 - second.cached
    assert second.cost == pytest.approx((second.cached * 0.3 + second.written * 3.75) / 1e6)


def test_where_writes_are_billed_a_prefix_is_read_only_up_to_a_mark() -> None:
    """A chain that marks nothing is billed as marking its last message: a request that keeps all of the previous
    one reads it; one that keeps only a part of it (the system prompt and some turns) reads nothing, where automatic
    caching without a write fee reads the part. With the previous request's marks, the part up to a mark is read."""
    rules = get_model("gpt-5.6").caching
    assert rules is not None and rules.bills_writes
    messages = [SystemMessage("policy " * 1500), *turn(0), *turn(1), *turn(2)]
    whole = Biller(rules, Meter(COUNTER))
    whole.bill(messages[:3], COUNTER.count_messages(messages[:3]))
    grown = whole.bill(messages[:5], COUNTER.count_messages(messages[:5]))
    assert grown.cached == sum(COUNTER.count_message(m) for m in messages[:3]) and grown.hit
    assert grown.written == grown.tokens - grown.cached
    assert grown.billed == pytest.approx(grown.cached * 0.1 + grown.written * 1.25)
    cut = [*messages[:3], *messages[5:]]  # the previous request's last turn dropped: its mark is gone
    assert not whole.bill(cut, COUNTER.count_messages(cut)).hit
    automatic = Biller(STANDARD_RULES, Meter(COUNTER))
    automatic.bill(messages[:5], COUNTER.count_messages(messages[:5]))
    assert automatic.bill(cut, COUNTER.count_messages(cut)).hit
    marked = Biller(rules, Meter(COUNTER))
    marked.bill(messages[:5], COUNTER.count_messages(messages[:5]), marks=(1, 3, 5))  # system, a head, the whole
    head = marked.bill(cut, COUNTER.count_messages(cut))
    assert head.cached == sum(COUNTER.count_message(m) for m in messages[:3])


# One short conversation in the fast tier; three long ones in the slow tier.
@pytest.mark.parametrize(("count", "turns", "budget"),
                         [(1, 40, 4_000), pytest.param(3, 80, 10_000, marks=pytest.mark.slow)])
def test_the_session_bills_less_than_sliding_and_refit(count: int, turns: int, budget: int) -> None:
    conversations = [Conversation("gen", seed, generated(seed, turns=turns)) for seed in range(count)]
    sliding, refit, session = run_session_bench(conversations, ["sliding", "refit", "session"], budget=budget,
                                                counter=COUNTER, rules=STANDARD_RULES, model="gpt-4o")
    assert sliding.requests == refit.requests == session.requests > count * turns
    for result in (sliding, refit, session):
        assert (result.over_budget, result.broken_pairs) == (0, 0)
        assert result.conversations == count and len(result.curves) == count
        assert result.missing_last_user == 0
    assert session.billed_tokens < 0.8 * sliding.billed_tokens and session.billed_tokens < 0.4 * refit.billed_tokens
    assert session.hit_rate is not None and sliding.hit_rate is not None and session.hit_rate > sliding.hit_rate
    assert session.mean_tokens is not None and sliding.mean_tokens is not None
    assert session.mean_tokens > 0.6 * sliding.mean_tokens


def test_the_langchain_policy_sends_what_the_sliding_one_sends() -> None:
    messages = generated(3, turns=30)
    planner = Planner("gpt-4o", context_window=2_500, reserve_output=0)
    ours, theirs = make_policy("sliding", planner), make_policy("langchain", planner)
    done = 0
    for end in request_points(messages):
        ours.add(messages[done:end])
        theirs.add(messages[done:end])
        done = end
        assert theirs.request() == ours.request()


def test_recall_counts_a_probe_whose_strings_are_in_the_last_request_and_no_other() -> None:
    messages = generated(4, turns=40)
    last, first = messages[-1].text.split()[0], "zq-never-said-77"
    gone = next(m.text for m in messages if isinstance(m, HumanMessage)).split()[0] + " NOT-SENT-4821"
    probes = {1: [Probe((last,)), Probe((first,)), Probe((gone,))]}
    (sliding,) = run_session_bench([Conversation("gen", 1, messages)], ["sliding"], budget=3_000, counter=COUNTER,
                                   rules=STANDARD_RULES, probes=probes)
    assert sliding.answered == [True, False, False]
    assert sliding.recall == pytest.approx(1 / 3) and sliding.as_json()["probes"] == 3
    (unasked,) = run_session_bench([Conversation("gen", 1, messages)], ["sliding"], budget=3_000, counter=COUNTER,
                                   rules=STANDARD_RULES)
    assert unasked.recall is None


@pytest.mark.parametrize(("text", "match"), [("sliding,,session", "empty"), ("session,session", "more than once"),
                                             ("slide", "unknown session policy"), ("session@low", "a number"),
                                             ("session@1.5", "low_water")])
def test_bad_policies_are_named(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_session_chains(text)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom ctxwin.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=ENV)


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("session") / "chats.jsonl", [generated(s, turns=15) for s in range(2)])


def test_the_command_prints_a_row_per_policy(chats: Path) -> None:
    result = run("bench", str(chats), "-m", "gpt-4o", "--session", "--budgets", "4k")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"ctxwin bench --session: 2 conversations from {chats}"
    header = next(i for i, line in enumerate(lines) if line.startswith("budget 4,000"))
    rows = [line.split() for line in lines[header + 2 : header + 5]]
    assert [row[0] for row in rows] == ["sliding", "refit", "session"]
    assert all(row[-1] == "0/0/0" for row in rows)
    assert "recall" not in lines[header + 1]


def test_the_command_reports_recall_with_probes(chats: Path, tmp_path: Path) -> None:
    probes = tmp_path / "probes.jsonl"
    probes.write_text(json.dumps({"needs": ["zq-never-said-77"]}))
    result = run("bench", str(chats), "-m", "gpt-4o", "--session", "--budgets", "4k", "--probes", str(probes))
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.strip().startswith("policy"))
    assert "recall" in header.split()
    rows = [line.split() for line in result.stdout.splitlines() if line.strip().startswith(("sliding", "session"))]
    assert rows and all(row[-3] == "0%" for row in rows)  # recall, then ms/turn and checks


def test_json_with_the_models_prices(chats: Path) -> None:
    result = run("bench", str(chats), "-m", "gpt-4o", "--session", "--budgets", "4k", "--billing", "model",
                 "--strategies", "refit,session@0.5", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["billing"]["read_ratio"] == pytest.approx(0.5)  # gpt-4o's cached input: half the price
    rows = {row["strategy"]: row for row in data["results"]}
    assert set(rows) == {"refit", "session@0.5"}
    assert rows["session@0.5"]["estimated_cost_usd"] < rows["refit"]["estimated_cost_usd"]


@pytest.mark.slow  # matplotlib in a new process; the chart test below draws it in this one
def test_a_chart_beside_the_table(chats: Path, tmp_path: Path) -> None:
    chart = tmp_path / "cost.png"
    result = run("bench", str(chats), "-m", "gpt-4o", "--session", "--budgets", "4k", "--strategies", "session",
                 "--plot", str(chart))
    assert result.returncode == 0, result.stderr
    assert "session" in result.stdout and chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.slow
def test_billing_as_a_models_provider_bills(chats: Path) -> None:
    result = run("bench", str(chats), "-m", "gpt-4o", "--session", "--budgets", "4k", "--billing", "gpt-5.6",
                 "--strategies", "sliding,session", "--json")
    assert result.returncode == 0, result.stderr
    billing = json.loads(result.stdout)["billing"]
    assert billing["bills_writes"] and billing["write_ratio"] == pytest.approx(1.25)
    assert "gpt-5.6-sol" in billing["source"]
    for bad, match in (("no-such-model-9", "no-such-model-9"), ("gpt-3.5-turbo", "no prompt caching prices")):
        result = run("bench", str(chats), "-m", "gpt-4o", "--session", "--billing", bad)
        assert result.returncode == 2 and result.stdout == ""
        assert "--billing" in result.stderr and match in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_bad_policy_is_a_usage_error(chats: Path) -> None:
    result = run("bench", str(chats), "-m", "gpt-4o", "--session", "--strategies", "sliding,last")
    assert result.returncode == 2 and "--strategies" in result.stderr and "'last'" in result.stderr


def test_the_session_chart_counts_whole_requests_and_says_where_it_stops(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from ctxwin.cli._bench.plot import session_figure, write_session_plot
    from ctxwin.cli._bench.replay import SessionResult

    curves = [[100.0 * (i + 1) for i in range(n)] for n in (2, 3, 40)]  # the median conversation makes 3 requests
    results = [SessionResult(chain, 8_000, STANDARD_RULES, curves=curves) for chain in ("sliding", "session")]
    figure = session_figure(results)
    [ax] = figure.axes
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert ax.get_xlim() == (1, 3) and "median conversation's 3 requests" in figure.get_supxlabel()
    assert all(max(line.get_xdata()) == 3 for line in ax.get_lines())
    write_session_plot(results, tmp_path / "cost.png")  # as `--session --plot` writes it
    assert (tmp_path / "cost.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="known gap: a request whose current turn fills the budget (25 messages in, "
                   "10,684 tokens for 6,000) leaves the ledger's block 87 tokens, and the oldest rule goes to recall")
def test_typed_probes_are_kept_per_kind_across_every_cut_and_stale_values_are_counted() -> None:
    messages = generated(4, turns=80)
    rule = "Never restart payments-api during business hours."
    messages.insert(1, HumanMessage(rule))
    messages.insert(2, AIMessage("OK."))
    probes = {1: [Probe(("payments-api",), kind="rule", at=1),
                  Probe((messages[-1].text.split()[0],), kind="fact", at=len(messages) - 1, stale=("zq-stale-77",))]}
    sliding, session = run_session_bench([Conversation("gen", 1, messages)], ["sliding", "session"], budget=6_000,
                                         counter=COUNTER, rules=STANDARD_RULES, probes=probes)
    assert sliding.told == {"rule": [0, 1], "fact": [1, 1]} and sliding.told_kept == 0.0
    assert session.told == {"rule": [1, 1], "fact": [1, 1]}  # the ledger carried it across the cuts
    assert session.as_json()["told_kept"] == {"rule": 1.0, "fact": 1.0} and session.stale_sent == 0
