"""The offline summarizer: excerpts chosen by what they carry (facts, requests, decisions, errors), not by where they
sit, what the user asked for first; no model is called. Its rules: docs/planner.md, "The offline summarizer".
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from ctxwin.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ctxwin.strategies._facts import Fact, find_facts, items, message_text
from ctxwin.strategies._keep import QueryMatch, keep_cue, kept_pieces, own_words

# The weight of one fact, by kind: identifiers and the kinds people ask about most, then code symbols and names
# (a source file holds hundreds of symbols; the name rule also catches headings).
KIND_WEIGHTS = {
    "id": 3.0, "url": 3.0, "email": 3.0, "path": 2.0, "file": 2.0, "date": 2.0, "time": 1.5, "quantity": 2.0,
    "phone": 3.0, "ip": 2.5, "symbol": 1.0, "name": 1.5, "number": 1.0,
}
# Facts of these kinds make a sentence in a long user message a request to keep when a cue documentation also uses
# ("note that") is in it (``keep.kept_pieces``); code symbols and names do not (documentation is full of them),
# unless a symbol has digits (``acct_kkem695212`` is an identifier).
CHECKABLE = frozenset({"id", "url", "email", "path", "file", "date", "time", "quantity", "phone", "ip"})


def _checkable(pairs: Sequence[tuple[str, str]]) -> bool:
    return any(kind in CHECKABLE or (kind == "symbol" and any(c.isdigit() for c in item)) for item, kind in pairs)
# The first line of a summary message (the summarize step writes it; it sits here, below that step, so that this
# module reads earlier summaries without importing the step).
SUMMARY_HEADER = "Summary of the earlier conversation:"
# A fact in prose weighs this many times more when the user states it, or the assistant (a decision, an answer).
PROSE_FACT = {"user": 3.0, "assistant": 2.0, "summary": 2.0, "system": 2.0}
CUES = {
    # (and what the user says of themselves: "my manager is ...", "our budget is ...")
    "request": (1.0, r"please|pls|need|want|must|should|have to|make sure|ensure|don't|do not|never|always|only|"
                     r"my |our |I'm |we're |我的|我们的|私の|제 |мой |моя |наш|mein|unser|"
                     r"without|require|deadline|remember|keep in mind|can you|could you|bitte|muss|nicht vergessen|"
                     r"por favor|necesito|debe|s'il vous plaît|il faut|请|需要|必须|不要|务必|记住|ください|必要|"
                     r"しないで|忘れ|해 주세요|해주세요|필요|하지 마|пожалуйста|нужно|надо|должен|не забудь|запомни"),
    "decision": (0.8, r"decided|decision|let's|we'll|we will|going with|go with|agreed|chose|conclusion|root cause|"
                      r"the fix|fixed by|instead|switch to|the plan|决定|决定了|方案|原因|結論|決定|原因|결정|결론|"
                      r"원인|решили|решение|причина|итог"),
    "error": (0.8, r"error|exception|traceback|failed|failure|fatal|panic|denied|refused|timed out|not found|crash|"
                   r"错误|失败|异常|エラー|失敗|例外|오류|실패|예외|ошибк|сбой|исключени"),
}
# One scan finds every kind of cue in a lower-cased excerpt; a look-ahead at the cues' first characters rejects most
# positions (a CJK character, which no word edge guards) before the alternatives are tried.
_CUE_WORDS = {name: words.lower().split("|") for name, (_, words) in CUES.items()}
_CUES = re.compile(
    "(?<![a-z])(?=[" + re.escape("".join(sorted({w[0] for ws in _CUE_WORDS.values() for w in ws}))) + "])(?:"
    + "|".join(f"(?P<{name}>{'|'.join(words)})" for name, words in _CUE_WORDS.items()) + ")"
)
ROLE_WORTH = {"user": 0.6, "summary": 0.6, "system": 0.6, "assistant": 0.25, "tool": 0.05}
# An excerpt longer than this many characters is narrowed to the clauses around its facts.
EXCERPT_CHARS = 220
CONTEXT_CHARS = 48  # characters kept on each side of a fact in a narrowed excerpt
# Too short to say anything ("ok", "Danke.", "Hi!"): never quoted.
MIN_EXCERPT_CHARS = 12
MIN_CJK_CHARS = 5
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])")
_MARKUP = re.compile(r"^(?:[#>*+|\s-]|\d+[.)]\s)+|[|*`]+$")
# A line of code, a traceback or JSON outside a fence: a keyword first, a lone bracket or ``"key":`` first, a block
# opener or a statement end last, a traceback's frame (a log line's "[02:00:05]" is no code).
_CODE_LINE = re.compile(
    r'^(?:def|class|return|import|from|if|elif|else|for|while|try|except|raise|with|async|await|const|let|var|func|'
    r'fn|pub|impl|struct|package|public|private|static|#include|SELECT|INSERT|UPDATE|CREATE)\b|'
    r'^[{}\[\]],?$|^[{\[]\s*"|^"[^"]*":|[{;(\[]$|\):$|^File "[^"]+", line \d+'
)
CODE_WORTH = 0.4  # facts in code count this much (a source file is full of symbols, a traceback of paths)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_ROUNDS = 6
# Tiers (docs/planner.md, "The offline summarizer"): the newest message's matches, keep requests, the user's own
# words with facts, the rest.
QUERY_TIER, KEEP_TIER, USER_TIER, LAST_TIER = 0, 1, 2, 3
# The excerpts of the query tier: at most this many, each sharing at least QUERY_SHARE of the best match's weight.
QUERY_EXCERPTS = 6
QUERY_SHARE = 0.5
_DIGITS = re.compile(r"\d+")
TEMPLATE_CHARS = 32


@dataclass(frozen=True)
class Extract:
    """A summary text, how many excerpts it quotes of the messages it covers, and their facts."""

    text: str
    messages: int
    excerpts: int
    facts: tuple[Fact, ...] = ()


@dataclass
class _Excerpt:
    message: int  # index in the span
    order: int  # position in the span, for quoting in order
    text: str
    facts: list[str]
    worth: float  # what it is worth without its facts (cues, role)
    scale: float  # what its facts' weights are multiplied by: a user's prose weighs more, code less
    tier: int = LAST_TIER  # taken before every excerpt of a higher tier (the tiers above)


def _role(message: BaseMessage, tool_names: dict[str, str]) -> str:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, ToolMessage):
        return f"tool {message.name or tool_names.get(message.tool_call_id, 'result')}"
    if isinstance(message, SystemMessage):
        return "summary" if message.text.startswith(SUMMARY_HEADER) else "system"
    return "assistant" if isinstance(message, AIMessage) else message.type


def pieces(text: str, *, sentences: bool = True) -> list[tuple[str, bool]]:
    """The sentences (``sentences=False``: the lines) of a text, markup stripped, each with whether it is code (in a
    fence, indented, or shaped like code: pasted code, tracebacks, JSON, which state facts less than prose does)."""
    out: list[tuple[str, bool]] = []
    fenced = False
    for raw in text.split("\n"):
        if raw.lstrip().startswith("```"):
            fenced = not fenced
            continue
        line = _MARKUP.sub("", raw).strip()
        if not line:
            continue
        code = fenced or raw.startswith(("    ", "\t")) or _CODE_LINE.search(line) is not None
        parts = _SENTENCE.split(line) if sentences and not code else [line]
        out.extend((s.strip(), code) for s in parts if s.strip())
    return out


def _long_enough(text: str) -> bool:
    return len(text) >= MIN_EXCERPT_CHARS or len(_CJK.findall(text)) >= MIN_CJK_CHARS


def _narrow(text: str, facts: list[str]) -> str:
    """A long excerpt cut to its facts with some context each side, the gaps marked."""
    if len(text) <= EXCERPT_CHARS:
        return text
    spans: list[list[int]] = []
    for at, length in sorted((text.find(fact), len(fact)) for fact in set(facts)):
        if at < 0:
            continue
        start, end = max(at - CONTEXT_CHARS, 0), min(at + length + CONTEXT_CHARS, len(text))
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    if not spans:
        return text[: EXCERPT_CHARS - 1].rstrip() + "…"
    parts = [("…" if s > 0 else "") + text[s:e].strip() + ("…" if e < len(text) else "") for s, e in spans]
    return " ".join(parts)


def _shape(fact: str) -> str:
    """A fact's shape: letters and digits as classes, runs collapsed (``INC-48213`` and ``ABC-12345`` share one)."""
    if fact.startswith(("/", "~/", "./", "http")) or "\\" in fact:
        return "/".join(fact.split("/")[:3])  # paths and URLs: their first parts (a tree's files are alike)
    return re.sub(r"[A-Z]+", "A", re.sub(r"[a-z]+", "a", re.sub(r"\d+", "9", fact)))


def extractive_summary(
    messages: Sequence[BaseMessage], max_tokens: int | None = None, count: Callable[[str], int] | None = None,
    query: str = "", told: Collection[str] = (),
) -> Extract:
    """The summary of ``messages`` within ``max_tokens`` (as ``count`` counts them); without a cap, every excerpt.
    ``query`` (the newest user message) puts the excerpts sharing its terms first. ``told``: statements a ledger
    carries beside the summary, and those it superseded: no excerpt quotes them again."""
    tool_names = {c["id"]: c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls if c["id"]}
    roles = [_role(m, tool_names) for m in messages]
    split = [pieces(_body(message_text(m), role)) for m, role in zip(messages, roles, strict=True)]
    found = [[items(piece) for piece, _ in message] for message in split]
    facts = {f.text: f for f in find_facts(messages, [[i for p in message for i in p] for message in found])}
    shapes = Counter(_shape(f) for f in facts)
    weight = {
        text: KIND_WEIGHTS.get(f.kind, 1.0) / math.sqrt(shapes[_shape(text)]) * (1.0 if len(f.messages) == 1 else 0.75)
        for text, f in facts.items()
    }
    excerpts: list[_Excerpt] = []
    seen: set[str] = set()  # a sentence said again adds nothing: its first saying is quoted
    templates: Counter[str] = Counter()  # ... and the n-th line of a shape is worth 1/n of the first (facts aside)
    for index, role in enumerate(roles):
        who = role.split()[0]
        errors = 0
        text = messages[index].text
        own = own_words(split[index], text) if who == "user" else [False] * len(split[index])
        factual = [_checkable(pairs) for pairs in found[index]]
        kept = kept_pieces(split[index], text, factual) if who == "user" else [
            who == "summary" and keep_cue(piece) for piece, _ in split[index]]
        for n, ((piece, code), pairs) in enumerate(zip(split[index], found[index], strict=True)):
            found_facts = [item for item, _ in pairs if item in facts]
            worth = ROLE_WORTH.get(who, 0.05)
            # prose states facts, the user's most; a tool's output is data, code or not; code elsewhere is symbols
            scale = CODE_WORTH if code and who != "tool" else PROSE_FACT.get(who, 1.0) if not code else 1.0
            cues = {m.lastgroup or "" for m in _CUES.finditer(piece.lower())}
            for name in cues - ({"request"} if who != "user" else set()):
                errors += name == "error"
                if errors <= 2 or name != "error":  # a log's hundredth error line adds little to its first two
                    worth += CUES[name][0]
            worth *= CODE_WORTH if code else 1.0
            template = _DIGITS.sub("9", piece)[:TEMPLATE_CHARS]  # log lines alike but for their numbers
            worth /= 1 + templates[template]
            templates[template] += 1
            if (found_facts or _long_enough(piece)) and piece not in seen and not _told(piece, told):
                seen.add(piece)
                tier = KEEP_TIER if kept[n] else USER_TIER if own[n] and found_facts else LAST_TIER
                excerpts.append(_Excerpt(index, len(excerpts), _narrow(piece, found_facts), found_facts, worth, scale,
                                         tier))
    if query:
        _steer(excerpts, query)
    extract = _choose(excerpts, roles, weight, len(messages), max_tokens, count)
    return dataclasses.replace(extract, facts=tuple(facts.values()))


def _told(piece: str, told: Collection[str]) -> bool:
    """Whether ``piece`` is (part of) a statement in ``told``, or holds one."""
    return bool(told) and any(piece in statement or statement in piece for statement in told)


def _steer(excerpts: list[_Excerpt], query: str) -> None:
    """Move the excerpts with facts that share most of ``query``'s terms to the first tier."""
    scores = QueryMatch(query, (e.text for e in excerpts)).scores()
    best = max((score for score, e in zip(scores, excerpts, strict=True) if e.facts), default=0.0)
    if best <= 0:
        return
    chosen = sorted((i for i, e in enumerate(excerpts) if e.facts and scores[i] >= QUERY_SHARE * best),
                    key=lambda i: -scores[i])
    for i in chosen[:QUERY_EXCERPTS]:
        excerpts[i].tier = QUERY_TIER


def _body(text: str, role: str) -> str:
    """What a message contributes excerpts from: its text; an earlier summary's without its header and coverage
    line. (A system message in the span is not the system prompt, which never is: an instruction given mid-way.)"""
    if role == "summary":
        return "\n".join(line for line in text.removeprefix(SUMMARY_HEADER).split("\n") if not line.startswith("("))
    return text


def _gain(excerpt: _Excerpt, weight: dict[str, float], covered: set[str]) -> float:
    return excerpt.worth + excerpt.scale * sum(weight[f] for f in set(excerpt.facts) if f not in covered)


def _render(chosen: list[_Excerpt], roles: list[str], covered: int) -> str:
    counts = Counter(role.split()[0] for role in roles)
    who = ", ".join(f"{n} {role}" for role, n in counts.most_common())
    lines = [f"(covers {covered} messages: {who}; excerpts kept for their facts, requests, decisions and errors)"]
    last = -1
    for excerpt in sorted(chosen, key=lambda e: e.order):
        if excerpt.message == last:
            lines[-1] += " … " + excerpt.text
        else:
            lines.append(f"- {roles[excerpt.message]}: {excerpt.text}")
            last = excerpt.message
    return "\n".join(lines)


def _rank(excerpts: list[_Excerpt], weight: dict[str, float], cost: list[float], limit: float) -> list[int]:
    """Greedy weighted coverage with lazy gains, tier by tier: excerpts in the order they are worth taking (worth
    per token, facts already taken no longer counting), until about ``limit`` tokens are ranked."""
    heap = [(e.tier, -_gain(e, weight, set()) / cost[i], i) for i, e in enumerate(excerpts)]
    heapq.heapify(heap)
    ranked: list[int] = []
    covered: set[str] = set()
    spent = 0.0
    while heap and spent < limit:
        tier, _, i = heapq.heappop(heap)
        score = _gain(excerpts[i], weight, covered) / cost[i]
        if heap and (tier, -score) > heap[0][:2] and tier == heap[0][0]:
            heapq.heappush(heap, (tier, -score, i))  # stale: some of its facts were taken by another excerpt
            continue
        ranked.append(i)
        covered.update(excerpts[i].facts)
        spent += cost[i]
    return ranked


def _choose(
    excerpts: list[_Excerpt], roles: list[str], weight: dict[str, float], covered: int,
    max_tokens: int | None, count: Callable[[str], int] | None,
) -> Extract:
    """The best-ranked excerpts the cap holds: taken in rank order, a long one skipped when it would overflow (a
    shorter one after it may fit); costs are estimated, the text counted, and the estimate rescaled a few rounds."""
    if max_tokens is None or count is None:
        return Extract(_render(excerpts, roles, covered), covered, len(excerpts))
    sample = "\n".join(e.text for e in excerpts[:: max(len(excerpts) // 200, 1)])[:8000]
    per_char = count(sample) / max(len(sample), 1) if sample else 0.3
    cost = [per_char * (len(e.text) + 4) + 1.5 for e in excerpts]
    ranked = _rank(excerpts, weight, cost, max_tokens * 2 + 100)
    header = count(_render([], roles, covered))
    best: list[int] = []
    best_tokens, scale = header, 1.0
    picked: list[int] = []
    for _ in range(_ROUNDS):
        picked, estimate = [], 0.0
        for i in ranked:
            if estimate + cost[i] * scale <= max_tokens - header:
                picked.append(i)
                estimate += cost[i] * scale
        tokens = count(_render([excerpts[i] for i in picked], roles, covered))
        if best_tokens < tokens <= max_tokens:
            best, best_tokens = picked, tokens
        if tokens <= max_tokens and (tokens >= 0.97 * max_tokens or len(picked) == len(ranked)):
            break
        scale *= (tokens - header) / estimate if tokens > header and estimate > 0 else 1.0
    if not best and picked:  # every round over: the longest prefix of the last pick that fits
        low, high = 0, len(picked)
        while low < high:
            middle = (low + high + 1) // 2
            if count(_render([excerpts[i] for i in picked[:middle]], roles, covered)) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        best = picked[:low]
    chosen = [excerpts[i] for i in best]
    return Extract(_render(chosen, roles, covered), covered, len(chosen))


def stated_tokens(messages: Sequence[BaseMessage], count: Callable[[str], int]) -> int:
    """About how many tokens the user's keep requests and the facts in their own words take when quoted: what the
    summarize step adds to the summary's room (within its cap)."""
    quoted: list[str] = []
    for message in messages:
        if not isinstance(message, HumanMessage):
            continue
        text = message.text
        split = pieces(text)
        found = [items(piece) if not code else [] for piece, code in split]  # a keep request is prose
        factual = [_checkable(pairs) for pairs in found]
        kept = kept_pieces(split, text, factual)
        for (piece, _), pairs, keep, own in zip(split, found, kept, own_words(split, text), strict=True):
            facts = [item for item, _ in pairs] if own or keep else []
            if keep or (own and facts):
                quoted.append(_narrow(piece, facts))
    return count("\n".join(quoted)) + 2 * len(quoted) if quoted else 0


def extractive_summarizer(messages: list[BaseMessage]) -> str:
    """The offline summarizer (docs/planner.md, "The offline summarizer"), uncapped: every excerpt, in order. The
    ``summarize`` step calls the capped form (``extractive_summary``), which keeps the most salient excerpts that
    fill its room."""
    return extractive_summary(messages).text
