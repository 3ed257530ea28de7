"""Long conversations with planted facts, and the retention they keep once fitted: the evaluation of issue 30.

``planted(style, tokens, seed, facts=20, phrasing="tune")`` returns ``(messages, probes)``: a conversation of about
``tokens`` tokens (o200k_base) in OpenAI chat format and the facts planted in its first 70%, each a probe
``{"id", "question", "needs": [value]}``. Facts are rare, checkable strings (ticket and order ids, amounts with
currencies, dates and times, names, emails, hosts, IP addresses, paths, URLs, versions, commit hashes, code symbols,
quantities with units, phone numbers) placed where a real conversation has them: a user message of their own or a
sentence added to one, an assistant's answer, a line or a JSON field of a tool result.

Styles (the conversation around the facts):

- ``agent``, ``multilingual``, ``code``: the bench corpus of ``conversations.py`` (tool outputs of every kind;
  English, Chinese, Japanese, Korean, Russian chats; pasted code and stack traces);
- ``support``: many short turns of a customer-support chat (English and Russian small talk, order lookups through a
  tool returning JSON): a style none of the others has.

Phrasings come in two disjoint sets, ``tune`` and ``heldout`` (different sentences, languages, tool-output shapes),
so a summarizer tuned on one set can be checked on the other; ``casual`` plants ten facts the facts rule reads
poorly or not at all (a lower-case name, a four-digit PIN, ``63k EUR``, a password, ...).

``python benchmarks/planted.py`` prints the retention table of the issue's setting (8,000 tokens, ``filter,
truncate_tool_output, summarize, trim``), one row per style and phrasing set; ``--write DIR`` writes conversations
and probes for ``ctxwin bench --probes``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # the corpus modules sit beside this file

from conversation_sources import sources
from conversation_text import Text
from conversations import generate

Message = dict[str, Any]
STYLES = ("agent", "multilingual", "code", "support")
PHRASINGS = ("tune", "heldout", "casual")
_FIRST_NAMES = ("Priya", "Jonas", "Mei", "Olusegun", "Ingrid", "Tomás", "Aiko", "Dmitri", "Fatima", "Lars")
_LAST_NAMES = ("Raman", "Albrecht", "Okafor", "Lindqvist", "Tanaka", "Novak", "Haddad", "Fernández", "Kowalski")
_VERBS = ("reconcile", "flush", "resolve", "compact")
_WORDS = ("ledger", "invoice", "payout", "refund", "webhook", "ingest", "tenant", "billing", "quota", "shard")


def _letters(rng: random.Random, n: int) -> str:
    return "".join(chr(65 + int(rng.random() * 26)) for _ in range(n))


def _digits(rng: random.Random, n: int) -> str:
    return str(int(rng.random() * 9) + 1) + "".join(str(int(rng.random() * 10)) for _ in range(n - 1))


def _pick(rng: random.Random, items: tuple[str, ...]) -> str:
    return items[int(rng.random() * len(items))]


# kind -> (value maker, question). Values are unique per conversation (a retry draws again).
_KINDS: dict[str, tuple[Callable[[random.Random], str], str]] = {
    "ticket": (lambda r: f"{_letters(r, 3)}-{_digits(r, 5)}", "Which ticket is this about?"),
    "order": (lambda r: f"{_digits(r, 3)}-{_digits(r, 7)}", "What is the order number?"),
    "amount": (lambda r: f"{_pick(r, ('$', '€', '£'))}{_digits(r, 2)},{_digits(r, 3)[:3]}.{_digits(r, 2)}",
               "How much was it?"),
    "date": (lambda r: f"20{_digits(r, 2)[:2]}-{1 + int(r.random() * 12):02d}-{1 + int(r.random() * 28):02d}",
             "What is the date?"),
    "time": (lambda r: f"{int(r.random() * 24):02d}:{int(r.random() * 60):02d} UTC", "At what time?"),
    "person": (lambda r: f"{_pick(r, _FIRST_NAMES)} {_pick(r, _LAST_NAMES)}", "Who is the contact?"),
    "email": (lambda r: f"{_pick(r, _WORDS)}.{_digits(r, 3)}@{_pick(r, ('acme-corp.io', 'example.org'))}",
              "Which email address?"),
    "host": (lambda r: f"{_pick(r, ('db', 'api', 'cache', 'mq'))}-prod-{_digits(r, 2)}.{_pick(r, _WORDS)}.internal",
             "Which host?"),
    "ip": (lambda r: f"10.{int(r.random() * 250)}.{int(r.random() * 250)}.{2 + int(r.random() * 250)}",
           "Which IP address?"),
    "path": (lambda r: f"/srv/{_pick(r, _WORDS)}/exports/{_pick(r, _WORDS)}_{_digits(r, 4)}.csv", "Which file?"),
    "url": (lambda r: f"https://status.{_pick(r, _WORDS)}.io/incidents/{_digits(r, 5)}", "Which page?"),
    "version": (lambda r: f"v{_digits(r, 1)}.{int(r.random() * 40)}.{int(r.random() * 20)}-rc{_digits(r, 1)}",
                "Which version?"),
    "commit": (lambda r: "".join("0123456789abcdef"[int(r.random() * 16)] for _ in range(9)), "Which commit?"),
    "symbol": (lambda r: f"{_pick(r, _WORDS)}_{_pick(r, _VERBS)}_v{_digits(r, 1)}", "Which function?"),
    "quantity": (lambda r: f"{_digits(r, 3)} {_pick(r, ('ms', 'MB', 'GB', 'kg', 'req/s'))}", "How much?"),
    "phone": (lambda r: f"+{_digits(r, 2)} {_digits(r, 3)} {_digits(r, 4)} {_digits(r, 3)}", "Which phone number?"),
}

# Where and how a fact is stated: (placement, template). ``{v}`` is the value; placements: "user" (a user turn of
# its own, answered briefly), "user+" (added to an existing user message), "assistant" (added to an answer),
# "tool" (a line of a tool result), "json" (a field of a JSON tool result, or a line when the result is not JSON).
_TUNE = (
    ("user", "My {k} is {v}, please keep it in mind for later."),
    ("user", "For the record: {k} = {v}."),
    ("user+", "Also, the {k} we're talking about is {v}."),
    ("user", "请记住，{k}是 {v}。"),
    ("user+", "Кстати, {k}: {v}."),
    ("assistant", "Noted — the {k} is {v}; I'll use it from now on."),
    ("tool", "INFO  2025-01-07 resolved {k} -> {v}"),
    ("json", "{v}"),
)
_HELDOUT = (
    ("user", "ok so, quick thing before I forget: {v} ({k}). that's the one"),
    ("user+", "(fwiw the {k} should be {v})"),
    ("user", "Die {k} lautet {v} – bitte nicht vergessen."),
    ("user", "念のため：{k}は{v}です。"),
    ("user+", "{k}는 {v} 입니다."),
    ("assistant", "I checked: {k} {v} is the right one, so we go with that."),
    ("tool", "[warn] {k} set to {v} by operator"),
    ("json", "{v}"),
)
# "casual": facts the facts rule reads poorly or not at all, each in its own sentence (written after the other two
# sets were tuned on; it led to two fixes, so it is not held out): (placement, template, value maker, question).
_CASUAL: tuple[tuple[str, str, Callable[[random.Random], str], str], ...] = (
    ("user+", "my PIN for the portal is {v}", lambda r: _digits(r, 4), "What is the PIN?"),
    ("user+", "we fly with LH {v} on friday", lambda r: _digits(r, 4), "Which flight?"),
    ("user+", "my manager is {v}, cc her on everything",
     lambda r: f"{_pick(r, _FIRST_NAMES)} {_pick(r, _LAST_NAMES)}".lower(), "Who is the manager?"),
    ("user+", "the wifi password is {v}", lambda r: f"blue-harbor-{_digits(r, 2)}", "What is the password?"),
    ("user+", "I can spend at most {v} on this", lambda r: f"{_digits(r, 2)}k EUR", "What is the budget?"),
    ("assistant", "The root cause is the {v} migration; we roll it back.", lambda r: f"m{_digits(r, 3)}_add_index",
     "Which migration?"),
    ("user+", "预算上限是{v}元。", lambda r: _digits(r, 5), "What is the budget cap?"),
    ("user+", "Room {v}, second floor.", lambda r: f"{_digits(r, 3)}B", "Which room?"),
    ("tool", "ALERT fired: disk {v} on node-3", lambda r: f"9{int(r.random() * 10)}.{_digits(r, 1)}%",
     "How full is the disk?"),
    ("user+", "the customer id is cus_{v}", lambda r: "".join(_pick(r, tuple("abcdefghijklmnop0123456789"))
                                                            for _ in range(10)), "Which customer?"),
)
_ACKS = ("Got it.", "Understood, thanks.", "OK, noted.", "好的。", "Понял.")


def _support(n_tokens: int, seed: int) -> list[Message]:
    """A customer-support chat: short turns of small talk in English and Russian, now and then an order lookup."""
    t = Text(random.Random(10_007 * seed + 3), sources())
    messages: list[Message] = [{"role": "system", "content": "You are the support assistant of an online shop. Be "
                                "brief and friendly; look orders up with lookup_order(query) before answering."}]
    chars = 0
    while chars < n_tokens * 3.2:
        language = "ru" if t.chance(0.3) else "en"
        question = t.chat(language, 1, 2)
        messages.append({"role": "user", "content": question})
        if t.chance(0.25):
            call = t.call_id()
            rows = [{"order": t.name().strip("_"), "status": t.pick(("shipped", "pending", "returned")),
                     "items": t.between(1, 9), "note": t.chat(language, 1, 1)} for _ in range(t.between(2, 12))]
            messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": call, "type": "function",
                             "function": {"name": "lookup_order", "arguments": json.dumps({"query": question[:40]},
                                                                                           ensure_ascii=False)}}]})
            body = json.dumps({"orders": rows}, ensure_ascii=False, indent=1)
            messages.append({"role": "tool", "tool_call_id": call, "content": body})
            chars += len(body)
        answer = t.chat(language, 1, 4) + ("\n\n" + t.prose(language, t.size(300, 0.7, 60, 1500)) if t.chance(0.5)
                                           else "")
        messages.append({"role": "assistant", "content": answer})
        chars += len(question) + len(answer)
    return messages


def _base(style: str, n_tokens: int, seed: int) -> list[Message]:
    if style == "support":
        return _support(n_tokens, seed)
    # generate() counts messages: grow the count until the conversation has about n_tokens tokens (chars / 3.5)
    n = 20
    while True:
        messages = generate(style, n, seed)
        size = sum(len(json.dumps(m, ensure_ascii=False)) for m in messages) / 3.5
        if size >= n_tokens or n > 2_000:
            return messages
        n = max(n + 4, int(n * min(n_tokens / max(size, 1), 1.5)))


def _turn_starts(messages: list[Message], end: int) -> list[int]:
    return [i for i, m in enumerate(messages[:end]) if m["role"] == "user" and i > 0]


def planted(
    style: str, tokens: int, seed: int, *, facts: int = 20, phrasing: str = "tune"
) -> tuple[list[Message], list[dict[str, Any]]]:
    """A conversation of ``style`` of about ``tokens`` tokens with ``facts`` facts planted in its first 70%."""
    if style not in STYLES or phrasing not in PHRASINGS:
        raise ValueError(f"style must be one of {STYLES} and phrasing one of {PHRASINGS}")
    rng = random.Random(seed * 7919 + STYLES.index(style) * 31 + PHRASINGS.index(phrasing))
    messages = _base(style, tokens, seed)
    sizes = [len(json.dumps(m, ensure_ascii=False)) for m in messages]
    total, running, end = sum(sizes), 0, len(messages)
    for i, size in enumerate(sizes):  # the first 70% of the conversation, by size
        running += size
        if running > 0.7 * total:
            end = i
            break
    templates = _TUNE if phrasing == "tune" else _HELDOUT
    kinds = list(_KINDS)
    probes: list[dict[str, Any]] = []
    seen: set[str] = set()
    inserts: list[tuple[int, list[Message]]] = []
    for n in range(facts):
        if phrasing == "casual":
            placement, template, make, question = _CASUAL[n % len(_CASUAL)]
            kind = f"casual{n % len(_CASUAL)}"
        else:
            kind = kinds[int(rng.random() * len(kinds))]
            make, question = _KINDS[kind]
            placement, template = templates[int(rng.random() * len(templates))]
        text = json.dumps(messages, ensure_ascii=False)
        value = make(rng)
        for _ in range(100):  # a value found elsewhere in the conversation would count as kept by chance
            if value not in seen and value not in text:
                break
            value = make(rng)
        else:
            raise ValueError(f"no value for {kind} that the conversation does not already hold")
        seen.add(value)
        sentence = template.format(k=kind, v=value)
        where = _place(messages, end, placement, sentence, kind, value, rng, inserts)
        probes.append({"id": f"{style}-{seed}-{n}", "question": question, "needs": [value], "kind": kind,
                       "placement": where})
    for at, new in sorted(inserts, key=lambda item: -item[0]):
        messages[at:at] = new
    return messages, probes


def _place(messages: list[Message], end: int, placement: str, sentence: str, kind: str, value: str,
           rng: random.Random, inserts: list[tuple[int, list[Message]]]) -> str:
    """Plant one fact; returns where it went (a placement without a fitting message falls back to a user turn)."""
    def among(indexes: list[int]) -> int | None:
        return indexes[int(rng.random() * len(indexes))] if indexes else None

    if placement in ("tool", "json"):
        at = among([i for i, m in enumerate(messages[:end]) if m["role"] == "tool" and len(m["content"]) > 200])
        if at is not None:
            content = messages[at]["content"]
            try:
                data = json.loads(content)
            except ValueError:
                data = None
            if placement == "json" and isinstance(data, dict):
                data[f"{kind}_ref"] = value
                messages[at]["content"] = json.dumps(data, ensure_ascii=False, indent=1)
                return "tool-json"
            lines = content.split("\n")
            cut = 1 + int(rng.random() * max(len(lines) - 1, 1))
            line = sentence if placement == "tool" else f"{kind}: {value}"
            messages[at]["content"] = "\n".join([*lines[:cut], line, *lines[cut:]])
            return "tool-line"
    if placement == "assistant":
        at = among([i for i, m in enumerate(messages[:end]) if m["role"] == "assistant" and m.get("content")])
        if at is not None:
            messages[at]["content"] += "\n\n" + sentence
            return "assistant"
    if placement == "user+":
        at = among([i for i, m in enumerate(messages[:end]) if m["role"] == "user"])
        if at is not None:
            messages[at]["content"] = f"{messages[at]['content']}\n\n{sentence}"
            return "user-inline"
    at = among(_turn_starts(messages, end)) or 1
    inserts.append((at, [{"role": "user", "content": sentence},
                         {"role": "assistant", "content": _ACKS[int(rng.random() * len(_ACKS))]}]))
    return "user-turn"


def evaluate(style: str, seed: int, phrasing: str, *, tokens: int = 25_000, budget: int = 8_000) -> dict[str, Any]:
    """Fit one planted conversation into ``budget`` with the issue's chain; the facts kept and whether it fits."""
    from ctxwin import fit
    from ctxwin.cli._bench.retention import probes_kept
    from ctxwin.counters import get_counter
    from ctxwin.messages import convert_to_messages

    messages, probes = planted(style, tokens, seed, phrasing=phrasing)
    counter = get_counter("tiktoken:o200k_base")
    parsed = convert_to_messages(messages)
    fact_tokens = sum(counter.count_text(p["needs"][0]) for p in probes)
    started = time.perf_counter()
    plan = fit(parsed, counter=counter, model=None, context_window=budget, reserve_output=0,
               strategies=["filter", "truncate_tool_output", "summarize", "trim"])
    seconds = time.perf_counter() - started
    kept = probes_kept(probes, plan.messages)
    return {"style": style, "seed": seed, "phrasing": phrasing, "tokens": counter.count_messages(parsed),
            "fact_tokens": fact_tokens, "kept": sum(kept), "facts": len(probes), "fits": plan.fits,
            "fitted": counter.count_messages(plan.messages), "seconds": seconds,
            "lost": [f"{p['kind']}@{p['placement']}" for p, k in zip(probes, kept, strict=True) if not k]}


DENSE_POLICIES = ("fit", "summarize", "session", "langchain")
_SUMMARIZING = ["filter", "truncate_tool_output", "summarize", "trim"]


def _fitted(policy: str, messages: list[Message], budget: int) -> tuple[list[Any], list[Any]]:
    """The request ``policy`` sends for ``messages`` at ``budget`` tokens (o200k_base, no reserved output), and
    the converted input: ``fit`` and ``summarize`` plan the whole conversation once; ``session`` replays it turn by
    turn through a cache-stable ``PlanSession`` (the summarising chain) and sends its last request; ``langchain`` is
    langchain_core's ``trim_messages(strategy="last", include_system=True, start_on="human")``."""
    from ctxwin import Planner, fit
    from ctxwin.cli._bench.replay import make_policy, request_points
    from ctxwin.counters import get_counter
    from ctxwin.messages import convert_to_messages

    counter = get_counter("tiktoken:o200k_base")
    parsed = convert_to_messages(messages)
    if policy in ("fit", "summarize"):
        strategies = _SUMMARIZING if policy == "summarize" else None
        plan = fit(parsed, counter=counter, model=None, context_window=budget, reserve_output=0,
                   strategies=strategies)
        return list(plan.messages), parsed
    planner = Planner(counter=counter, context_window=budget, reserve_output=0,
                      strategies=_SUMMARIZING if policy == "session" else None)
    chat = make_policy(policy if policy == "langchain" else "session", planner)
    if policy == "langchain":
        chat.add(parsed)
        return chat.request(), parsed
    done, sent = 0, []
    for end in request_points(parsed):
        chat.add(parsed[done:end])
        sent, done = chat.request(), end
    return sent, parsed


def evaluate_dense(conversation: Any, policy: str, budget: int = 8_000) -> dict[str, Any]:
    """One dense conversation through one policy: the share of its keep-requested (and of all) planted facts in
    the request sent after a neutral last message; for each late question, whether the request sent after it
    holds what the answer needs (``recall``); for questions about things never said, the tokens of the request that
    neither the original conversation nor a summary or shortened output of it holds (``added``), and those of
    them recalled for the question itself (``noise``; the rest is a session's recall of earlier questions)."""
    from dense import added_tokens, recalled_for

    from ctxwin.cli._bench.retention import probes_kept
    from ctxwin.counters import get_counter

    counter = get_counter("tiktoken:o200k_base")
    started = time.perf_counter()
    sent, parsed = _fitted(policy, conversation.neutral(), budget)
    facts = [{"needs": [f.value]} for f in conversation.facts]
    kept = probes_kept(facts, sent)
    keep = [k for k, f in zip(kept, conversation.facts, strict=True) if f.placement == "keep"]
    over = counter.count_messages(sent) > budget
    recall: list[tuple[str, bool]] = []
    noise: list[int] = []
    added: list[int] = []
    for question in conversation.questions:
        sent, parsed = _fitted(policy, conversation.ending(question["question"]), budget)
        over |= counter.count_messages(sent) > budget
        if question["needs"]:
            recall.append((question["placement"], probes_kept([question], sent)[0]))
        else:
            added.append(added_tokens(sent, parsed, counter))
            noise.append(recalled_for(sent, question["question"], counter))
    return {"source": conversation.source, "kind": conversation.kind, "seed": conversation.seed, "policy": policy,
            "keep": (sum(keep), len(keep)), "facts": (sum(kept), len(kept)), "recall": recall, "noise": noise,
            "added": added, "over": over, "seconds": time.perf_counter() - started}


def _dense_main(args: argparse.Namespace) -> int:
    from dense import HELDOUT, TUNE, available_sources, dense

    sources = available_sources(tuple(args.sources.split(",")) if args.sources else TUNE + HELDOUT)
    policies = args.policies.split(",")
    if args.write:
        _write_dense(Path(args.write), sources, range(args.first_seed, args.first_seed + args.seeds), args.phrasing)
        return 0
    rows: list[dict[str, Any]] = []
    for source in sources:
        for kind, tokens in (("chat", 25_000), ("agent", 57_000)):
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                conversation = dense(source, kind, tokens, seed, phrasing=args.phrasing)
                for policy in policies:
                    row = evaluate_dense(conversation, policy)
                    rows.append(row)
                    if args.verbose:
                        print(source, kind, seed, policy, row["keep"], row["facts"],
                              sum(r for _, r in row["recall"]), len(row["recall"]), row["noise"], row["added"],
                              f"{row['seconds']:.1f}s", file=sys.stderr)
    print(f"{'source':<20} {'held out':<8} {'kind':<5} {'policy':<10} {'keep kept':>9} {'facts':>6} "
          f"{'recall':>6} {'tool':>5} {'noise':>5} {'added':>5} fits")
    for source in sources:
        for kind in ("chat", "agent"):
            for policy in policies:
                chosen = [r for r in rows if r["source"] == source and r["kind"] == kind and r["policy"] == policy]
                print(_dense_line(source, "yes" if source in HELDOUT else "no", kind, policy, chosen))
    for label, group in (("tuned sources", TUNE), ("held-out sources", HELDOUT)):
        for kind in ("chat", "agent"):
            for policy in policies:
                chosen = [r for r in rows if r["source"] in group and r["kind"] == kind and r["policy"] == policy]
                if chosen:
                    print(_dense_line(label, "", kind, policy, chosen))
    return 0


def _write_dense(out: Path, sources: tuple[str, ...], seeds: range, phrasing: str) -> None:
    """``<source>-<kind>.jsonl``: one conversation per late question about a planted fact (the conversation and
    the question), and ``.probes.jsonl`` beside it (``{"conversation": line, "needs": [...]}``), for ``ctxwin
    bench --probes`` (with ``--session`` too)."""
    from dense import dense

    out.mkdir(parents=True, exist_ok=True)
    for source in sources:
        for kind, tokens in (("chat", 25_000), ("agent", 57_000)):
            with open(out / f"{source}-{kind}.jsonl", "w", encoding="utf-8") as conversations, \
                    open(out / f"{source}-{kind}.probes.jsonl", "w", encoding="utf-8") as probes:
                line = 0
                for seed in seeds:
                    conversation = dense(source, kind, tokens, seed, phrasing=phrasing)
                    for question in conversation.questions:
                        if not question["needs"]:
                            continue
                        line += 1
                        conversations.write(json.dumps(conversation.ending(question["question"]),
                                                       ensure_ascii=False) + "\n")
                        probes.write(json.dumps({"conversation": line, **question}, ensure_ascii=False) + "\n")


def _share(pairs: list[tuple[int, int]]) -> str:
    total = sum(n for _, n in pairs)
    return f"{sum(k for k, _ in pairs) / total:>6.0%}" if total else f"{'–':>6}"


def _dense_line(source: str, heldout: str, kind: str, policy: str, rows: list[dict[str, Any]]) -> str:
    recall = [(int(hit), 1) for r in rows for _, hit in r["recall"]]
    tool = [(int(hit), 1) for r in rows for where, hit in r["recall"] if where == "tool"]
    noise = [n for r in rows for n in r["noise"]]
    added = [n for r in rows for n in r["added"]]
    fits = "yes" if not any(r["over"] for r in rows) else "NO"
    return (f"{source:<20} {heldout:<8} {kind:<5} {policy:<10} {_share([r['keep'] for r in rows]):>9} "
            f"{_share([r['facts'] for r in rows])} {_share(recall)} {_share(tool) if kind == 'agent' else '':>5} "
            f"{(sum(noise) / len(noise) if noise else 0):>5.0f} {(sum(added) / len(added) if added else 0):>5.0f} "
            f"{fits}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Retention of planted facts, fitted into 8,000 tokens.")
    parser.add_argument("--seeds", type=int, default=3, help="conversations per style and phrasing (default 3)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--styles", default=",".join(STYLES))
    parser.add_argument("--phrasings", default="tune,heldout", help=f"of {', '.join(PHRASINGS)} (default: %(default)s)")
    parser.add_argument("--verbose", action="store_true", help="list the facts lost")
    parser.add_argument("--write", metavar="DIR", help="write <style>-<phrasing>.jsonl and .probes.jsonl instead "
                        "(with --dense: <source>-<kind>.jsonl, one conversation per late question)")
    parser.add_argument("--dense", action="store_true",
                        help="the fact-dense conversations of dense.py: facts kept and late-question recall")
    parser.add_argument("--sources", help="--dense: comma-separated sources (default: all available)")
    parser.add_argument("--policies", default=",".join(DENSE_POLICIES), help="--dense: of %(default)s")
    parser.add_argument("--phrasing", default="heldout", help="--dense: keep and question phrasings, tune or heldout")
    args = parser.parse_args(argv)
    if args.dense:
        return _dense_main(args)
    styles, phrasings = args.styles.split(","), args.phrasings.split(",")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    if args.write:
        out = Path(args.write)
        out.mkdir(parents=True, exist_ok=True)
        for style in styles:
            for phrasing in phrasings:
                with open(out / f"{style}-{phrasing}.jsonl", "w", encoding="utf-8") as conversations, \
                        open(out / f"{style}-{phrasing}.probes.jsonl", "w", encoding="utf-8") as probes:
                    for line, seed in enumerate(seeds, start=1):
                        messages, planted_probes = planted(style, 25_000, seed, phrasing=phrasing)
                        conversations.write(json.dumps(messages, ensure_ascii=False) + "\n")
                        for probe in planted_probes:
                            probes.write(json.dumps({"conversation": line, **probe}, ensure_ascii=False) + "\n")
        return 0
    print(f"{'style':<13} {'phrasing':<8} {'kept':>9} {'share':>6}  fits  facts' tokens  seconds")
    grand: dict[str, list[int]] = {}
    for phrasing in phrasings:
        for style in styles:
            rows = [evaluate(style, seed, phrasing) for seed in seeds]
            kept, facts = sum(r["kept"] for r in rows), sum(r["facts"] for r in rows)
            grand.setdefault(phrasing, [0, 0])
            grand[phrasing][0] += kept
            grand[phrasing][1] += facts
            fits = all(r["fits"] and r["fitted"] <= 8_000 for r in rows)
            print(f"{style:<13} {phrasing:<8} {kept:>4}/{facts:<4} {kept / facts:>6.0%}  {'yes' if fits else 'NO':<4}"
                  f"  {max(r['fact_tokens'] for r in rows):>13}  {sum(r['seconds'] for r in rows) / len(rows):>7.2f}")
            if args.verbose:
                for r in rows:
                    print("   ", r["seed"], r["tokens"], "lost:", ", ".join(r["lost"]))
    for phrasing, (kept, facts) in grand.items():
        print(f"all           {phrasing:<8} {kept:>4}/{facts:<4} {kept / facts:>6.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
