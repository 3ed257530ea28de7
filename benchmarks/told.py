"""What a conversation told, and what of it a fitted request still carries: the ledger bench of issue 50.

``told(split, source, kind, seed)`` builds a long conversation from text no one here wrote (``dense.py``'s
sources: the standard library's code, Python's reference, django, sphinx, package READMEs) and plants typed
statements in its first 65%: rules, limits, facts, goals and preferences, in the phrasings of ``told_dev.py``
(``split="dev"``, planted in the tuned sources) or ``told_heldout.py`` (``split="heldout"``: other authors' styles,
other languages, planted in the held-out sources), and corrections of some of them (the original early, the
correction later). ``[[...]]`` in a template marks what must reach the request: a statement is carried when all of
it is in the request's text (case-insensitive); a correction is sent when its new value is, and a stale value is
sent when the corrected one is.

``python benchmarks/told.py --split dev`` prints survival per type for each policy at 8,000 tokens: ``fit`` (the
default chain, one-off), ``summarize`` (the summarising chain, one-off), ``session`` (a cache-stable session with
the summarising chain, replayed request by request; survival at every cut and at the end) and ``session-trim`` (a
session with the default chain). The held-out split is meant to be run once, at the end (issue 50). ``--write DIR``
writes the conversations and typed probes for ``ctxwin bench --probes`` (its ``told`` and ``stale`` columns).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from dense import HELDOUT, TUNE, _agent, _chat, available_sources, documents

Message = dict[str, Any]
TYPES = ("rule", "limit", "fact", "goal", "preference")
SPLITS = ("dev", "heldout")
POLICIES = ("fit", "summarize", "session", "session-trim")
# Per conversation: statements planted of each type, and corrections.
PER_TYPE = {"rule": 3, "limit": 3, "fact": 4, "goal": 2, "preference": 2}
CORRECTIONS = 2
PLANTED_SHARE = 0.65  # statements go in the conversation's first 65% (by size)
NEUTRAL = "Thanks, that's clear. Let's continue with the next part."
_NEEDED = re.compile(r"\[\[(.+?)\]\]", re.S)

_WORDS = ("ledger", "payout", "quota", "tenant", "ingest", "billing", "relay", "harbor", "ember", "kestrel",
          "lattice", "meridian", "osprey", "quartz", "saffron", "tundra", "vellum", "wicket", "zephyr", "cobalt")
_SUFFIXES = ("sync", "gate", "worker", "api", "cron", "bridge", "vault", "feed", "router", "indexer")
_GIVEN = ("Ilse", "Tavi", "Oren", "Mireille", "Kofi", "Sunniva", "Radu", "Yara", "Emeka", "Liesl", "Anouk",
          "Teodor", "Nalani", "Bartek", "Ximena", "Jorunn")
_FAMILY = ("Varga", "Okonkwo", "Lindahl", "Ferreira", "Halvorsen", "Mbeki", "Castellano", "Dvorak", "Aaltonen",
           "Quispe", "Brannigan", "Szabo", "Oyelaran", "Vantongeren")
_ZONES = ("Asia/Kathmandu", "Pacific/Chatham", "America/St_Johns", "Australia/Eucla", "Asia/Colombo")
_FIELDS = ("risk_owner", "blast_radius", "rollback_plan", "cost_centre", "ship_window", "data_class")


def _d(rng: random.Random, n: int) -> str:
    return str(1 + int(rng.random() * 9)) + "".join(str(int(rng.random() * 10)) for _ in range(n - 1))


def _w(rng: random.Random, items: tuple[str, ...]) -> str:
    return items[int(rng.random() * len(items))]


# slot -> value maker; each value is drawn until the conversation does not hold it (so it is found only if carried)
MAKERS = {
    "svc": lambda r: f"{_w(r, _WORDS)}-{_w(r, _SUFFIXES)}-{_d(r, 2)}",
    "host": lambda r: f"{_w(r, ('pg', 'db', 'redis', 'kafka', 'mq'))}-{_w(r, ('eu', 'us', 'ap'))}{_d(r, 1)}-"
                      f"{_d(r, 2)}.{_w(r, _WORDS)}.lan",
    "branch": lambda r: f"release/{_d(r, 1)}.{_d(r, 2)}",
    "path": lambda r: f"/etc/{_w(r, _WORDS)}/{_w(r, _SUFFIXES)}-{_d(r, 3)}.conf",
    "url": lambda r: f"https://wiki.{_w(r, _WORDS)}.example/{_w(r, _SUFFIXES)}/{_d(r, 5)}",
    "acct": lambda r: _w(r, (f"ACC-{_d(r, 6)}", f"cus_{_w(r, _WORDS)}{_d(r, 5)}", f"T{_d(r, 7)}")),
    "person": lambda r: f"{_w(r, _GIVEN)} {_w(r, _FAMILY)}",
    "money": lambda r: _w(r, (f"${_d(r, 1)},{_d(r, 3)}", f"€{_d(r, 2)},{_d(r, 3)}", f"{_d(r, 4)} USD")),
    "size": lambda r: _d(r, 2),
    "n": lambda r: _d(r, 2),
    "date": lambda r: f"2027-{1 + int(r.random() * 12):02d}-{1 + int(r.random() * 28):02d}",
    "version": lambda r: f"v{_d(r, 1)}.{_d(r, 2)}.{_d(r, 1)}",
    "tag": lambda r: f"#{_w(r, _WORDS)}-{_d(r, 3)}",
    "prompt": lambda r: f"{_w(r, _WORDS)}@{_w(r, _SUFFIXES)}$",
    "alias": lambda r: f"{_w(r, _WORDS).capitalize()}{_w(r, _SUFFIXES).capitalize()}{_d(r, 1)}",
    "field": lambda r: f"{_w(r, _FIELDS)}_{_d(r, 2)}",
    "tz": lambda r: _w(r, _ZONES),
    "ticket": lambda r: f"OPS-{_d(r, 4)}",
    "word": lambda r: _w(r, _WORDS),
}


@dataclass
class Statement:
    """One planted statement: its type, language (phrasing set), where it went, the needed strings, and for a
    correction the stale value it replaced."""

    kind: str
    language: str
    placement: str
    needs: list[str]
    text: str
    stale: str | None = None  # a correction: the value it corrects
    at: int = 0  # the index of the message that states it (after planting)


@dataclass
class Told:
    split: str
    source: str
    kind: str
    seed: int
    messages: list[Message]
    statements: list[Statement] = field(default_factory=list)

    def neutral(self) -> list[Message]:
        return [*self.messages, {"role": "user", "content": NEUTRAL}]


def _phrasings(split: str) -> Any:
    if split == "dev":
        import told_dev as module
    elif split == "heldout":
        import told_heldout as module
    else:
        raise ValueError(f"split must be one of {SPLITS}")
    return module


def _fill(template: str, values: dict[str, str]) -> tuple[str, list[str]]:
    """The text of ``template`` with ``values`` in its slots, and its needed spans (``[[...]]``) filled."""
    filled = template.format(**values)
    return _NEEDED.sub(r"\1", filled), [n for n in _NEEDED.findall(filled)]


def _values(rng: random.Random, template: str, taken: str, used: set[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for slot in dict.fromkeys(re.findall(r"\{(\w+)\}", template)):  # (in order: the same values every run)
        for _ in range(200):
            value = MAKERS[slot](rng)
            if value not in used and value.lower() not in taken:
                break
        used.add(value)
        values[slot] = value
    return values


def told(split: str, source: str, kind: str, seed: int, tokens: int | None = None) -> Told:
    """A conversation of ``kind`` ("chat": 25,000 tokens, "agent": 40,000) from ``source`` with statements of the
    ``split``'s phrasings planted (see the module docstring)."""
    phrasings = _phrasings(split)
    rng = random.Random(f"told/{split}/{source}/{kind}/{seed}")
    docs = documents(source)
    size = tokens or (25_000 if kind == "chat" else 40_000)
    messages = _chat(rng, docs, int(size * 4.4)) if kind == "chat" else _agent(rng, docs, int(size * 3.6))
    taken = json.dumps(messages, ensure_ascii=False).lower()
    sizes = [len(json.dumps(m, ensure_ascii=False)) for m in messages]
    bounds, running, whole = [], 0, sum(sizes)
    for size_of in sizes:
        running += size_of
        bounds.append(running / whole)
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]

    def user_at(low: float, high: float) -> int:
        choices = [i for i in users if low <= bounds[i] <= high] or users[1:2]
        return choices[int(rng.random() * len(choices))]

    pool = [(language, *item) for language, items in phrasings.STATEMENTS.items() for item in items]
    if kind == "chat":
        pool = [p for p in pool if p[2] != "tool"]
    used: set[str] = set()
    plan: list[tuple[float, Statement, list[Message] | None, str]] = []  # (position, statement, insert, mode)
    for stype, count in PER_TYPE.items():
        candidates = [p for p in pool if p[1] == stype]
        rng.shuffle(candidates)
        for language, _, placement, template in candidates[:count]:
            values = _values(rng, template, taken, used)
            text, needs = _fill(template, values)
            statement = Statement(stype, language, placement, needs, text)
            if placement == "tool":
                ask = phrasings.ASKS[language].format(**values)
                plan.append((rng.random() * PLANTED_SHARE, statement, None, ask))
            else:
                plan.append((rng.random() * PLANTED_SHARE, statement, None, placement))
    # (a goal's "correction" is its next step, which any other next step planted would supersede too: not planted)
    corrections = [(language, *item) for language, items in phrasings.CORRECTIONS.items() for item in items
                   if item[0] != "goal"]
    rng.shuffle(corrections)
    for language, stype, placement, maker, original, correction in corrections[:CORRECTIONS]:
        extra = _values(rng, original.replace("{v}", "") + correction.replace("{v}", ""), taken, used)
        old, new = (_values(rng, "{" + maker + "}", taken, used)[maker] for _ in range(2))
        first, _ = _fill(original, {**extra, "v": old})
        second, needs = _fill(correction, {**extra, "v": new})
        plan.append((rng.random() * 0.3, Statement(stype, language, placement, [old], first), None, "original"))
        plan.append((0.35 + rng.random() * 0.3, Statement(stype, language, placement, needs, second, stale=old),
                     None, placement))
    conversation = Told(split, source, kind, seed, messages)
    inserts: list[tuple[int, list[Message], Statement]] = []
    for position, statement, _, mode in sorted(plan, key=lambda p: p[0]):
        at = user_at(position, position + 0.05)
        if statement.placement == "tool":
            call = f"call_told_{len(inserts):03d}"
            new = [{"role": "user", "content": mode},
                   {"role": "assistant", "content": None, "tool_calls": [{"id": call, "type": "function", "function": {
                       "name": "lookup", "arguments": json.dumps({"query": mode[:60]}, ensure_ascii=False)}}]},
                   {"role": "tool", "tool_call_id": call, "content": statement.text},
                   {"role": "assistant", "content": "Found it in the catalog."}]
        elif statement.placement == "assistant":
            new = [{"role": "user", "content": "Can you take care of that part?"},
                   {"role": "assistant", "content": statement.text}]
        elif rng.random() < 0.6:  # a turn of its own
            new = [{"role": "user", "content": statement.text}, {"role": "assistant", "content": "OK."}]
        else:  # added to the end of a user message
            messages[at]["content"] += "\n\n" + statement.text
            new = []
            statement.at = at
        if statement.stale is None and mode == "original":
            statement.kind = "original"  # stated to be corrected: measured by its correction, not on its own
        inserts.append((at, new, statement))
        conversation.statements.append(statement)
    for at, new, _ in sorted(inserts, key=lambda item: -item[0]):
        if new:
            messages[at:at] = new
    for statement in conversation.statements:  # where each statement ended up
        statement.at = next(i for i, m in enumerate(messages) if statement.text in (m.get("content") or ""))
    return conversation


def request_text(messages: list[Any]) -> str:
    """What a request says, lower case: every message's text and its tool calls' arguments."""
    from ctxwin.strategies._facts import message_text

    return "\n".join(message_text(m) for m in messages).lower()


def carried(statement: Statement, text: str) -> bool:
    return all(need.lower() in text for need in statement.needs)


@dataclass
class Outcome:
    """One policy on one conversation: per type, statements carried / planted (at the end, and the worst cut of a
    session); corrections sent; stale values sent."""

    policy: str
    carried: dict[str, tuple[int, int]]
    worst: dict[str, tuple[int, int]]
    corrections: tuple[int, int]
    stale: int
    fits: bool
    cuts: int
    seconds: float


def _score(statements: list[Statement], text: str) -> tuple[dict[str, tuple[int, int]], tuple[int, int], int]:
    kept: dict[str, tuple[int, int]] = {}
    for stype in TYPES:
        group = [s for s in statements if s.kind == stype]
        kept[stype] = (sum(carried(s, text) for s in group), len(group))
    fixes = [s for s in statements if s.stale is not None]
    corrections = (sum(carried(s, text) for s in fixes), len(fixes))
    stale = sum(s.stale is not None and s.stale.lower() in text for s in fixes)
    return kept, corrections, stale


def evaluate(conversation: Told, policy: str, budget: int = 8_000) -> Outcome:
    """``conversation`` (ended by a neutral user message) through ``policy`` at ``budget`` tokens (o200k_base, no
    reserved output)."""
    from ctxwin import Planner, fit
    from ctxwin.cli._bench.replay import request_points
    from ctxwin.counters import get_counter
    from ctxwin.messages import convert_to_messages

    counter = get_counter("tiktoken:o200k_base")
    parsed = convert_to_messages(conversation.neutral())
    summarizing = ["filter", "truncate_tool_output", "summarize", "trim"]
    started = time.perf_counter()
    if policy in ("fit", "summarize"):
        plan = fit(parsed, counter=counter, model=None, context_window=budget, reserve_output=0,
                   strategies=summarizing if policy == "summarize" else None)
        kept, corrections, stale = _score(conversation.statements, request_text(plan.messages))
        fits = counter.count_messages(plan.messages) <= budget
        return Outcome(policy, kept, kept, corrections, stale, fits, 1, time.perf_counter() - started)
    planner = Planner(counter=counter, context_window=budget, reserve_output=0,
                      strategies=summarizing if policy == "session" else None)
    session = planner.session()
    done, fits, cuts = 0, True, 0
    worst: dict[str, tuple[int, int]] = {}
    sent: list[Any] = []
    for end in request_points(parsed):
        session.add_messages(parsed[done:end])
        plan = session.plan()
        sent, done = list(plan.messages), end
        fits &= counter.count_messages(sent) <= budget
        if plan.cache is not None and plan.cache.cut and end < len(parsed):
            cuts += 1
            said = [s for s in conversation.statements if s.at < end]
            kept_now, _, _ = _score(said, request_text(sent))
            for stype, (k, n) in kept_now.items():
                if n and (stype not in worst or k / n < worst[stype][0] / max(worst[stype][1], 1)):
                    worst[stype] = (k, n)
    kept, corrections, stale = _score(conversation.statements, request_text(sent))
    for stype in TYPES:
        worst.setdefault(stype, kept[stype])
    return Outcome(policy, kept, worst, corrections, stale, fits, cuts, time.perf_counter() - started)


def _share(pairs: list[tuple[int, int]]) -> str:
    kept, total = sum(k for k, _ in pairs), sum(n for _, n in pairs)
    return f"{kept:>3}/{total:<3} {kept / total:>4.0%}" if total else f"{'–':>12}"


def _write(out: Path, split: str, sources: tuple[str, ...], kinds: list[str], seeds: range) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for source in sources:
        for kind in kinds:
            name = out / f"{split}-{source}-{kind}"
            with open(f"{name}.jsonl", "w", encoding="utf-8") as conversations, \
                    open(f"{name}.probes.jsonl", "w", encoding="utf-8") as probes:
                for line, seed in enumerate(seeds, start=1):
                    conversation = told(split, source, kind, seed)
                    conversations.write(json.dumps(conversation.neutral(), ensure_ascii=False) + "\n")
                    for s in conversation.statements:
                        if s.kind in TYPES:
                            probe = {"conversation": line, "needs": s.needs, "kind": s.kind, "at": s.at,
                                     **({"stale": [s.stale]} if s.stale else {})}
                            probes.write(json.dumps(probe, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Survival of what a conversation told, fitted into 8,000 tokens.")
    parser.add_argument("--split", choices=SPLITS, default="dev")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--kinds", default="chat,agent")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--sources", help="comma-separated (default: the split's: tuned sources for dev, held-out "
                        "sources for heldout)")
    parser.add_argument("--json", metavar="FILE", help="also write the outcomes as JSON")
    parser.add_argument("--write", metavar="DIR", help="write <split>-<source>-<kind>.jsonl and .probes.jsonl (typed "
                        "probes: kind, where said, stale values) for ctxwin bench --probes (and --session) instead")
    args = parser.parse_args(argv)
    sources = available_sources(tuple(args.sources.split(",")) if args.sources else
                                (TUNE if args.split == "dev" else HELDOUT))
    if args.write:
        _write(Path(args.write), args.split, sources, args.kinds.split(","), range(args.first_seed,
                                                                                  args.first_seed + args.seeds))
        return 0
    policies = args.policies.split(",")
    outcomes: list[tuple[str, str, int, Outcome]] = []
    for source in sources:
        for kind in args.kinds.split(","):
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                conversation = told(args.split, source, kind, seed)
                for policy in policies:
                    outcome = evaluate(conversation, policy)
                    outcomes.append((source, kind, seed, outcome))
                    print(source, kind, seed, policy, {t: f"{k}/{n}" for t, (k, n) in outcome.carried.items()},
                          "corr", outcome.corrections, "stale", outcome.stale, "cuts", outcome.cuts,
                          "fits" if outcome.fits else "OVER", f"{outcome.seconds:.1f}s", file=sys.stderr)
    print(f"split {args.split}: {', '.join(sources)}; {args.seeds} seeds")
    print(f"{'policy':<13} {'at':<6} " + " ".join(f"{t:>12}" for t in TYPES) + f" {'corrections':>12} stale fits")
    for policy in policies:
        rows = [o for _, _, _, o in outcomes if o.policy == policy]
        for label, pick in (("end", lambda o: o.carried), ("worst", lambda o: o.worst)):
            if label == "worst" and not policy.startswith("session"):
                continue
            cells = " ".join(f"{_share([pick(o)[t] for o in rows]):>12}" for t in TYPES)
            print(f"{policy:<13} {label:<6} {cells} {_share([o.corrections for o in rows]):>12} "
                  f"{sum(o.stale for o in rows):>5} {'yes' if all(o.fits for o in rows) else 'NO'}")
    if args.json:
        Path(args.json).write_text(json.dumps([{"source": s, "kind": k, "seed": d, **o.__dict__}
                                               for s, k, d, o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
