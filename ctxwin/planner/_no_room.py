"""What a plan that does not fit says: what the part that must stay holds, in tokens, and what would make room,
only among what can (a summary never replaces what must stay)."""

from __future__ import annotations

from dataclasses import dataclass

from ctxwin.strategies._base import Budget


@dataclass(frozen=True)
class MustStay:
    """The tokens of what no step may remove: the leading system messages (a summary among them), the tool
    definitions, the pinned messages, the last user message, and the whole request of them alone (``total``, its
    framing included)."""

    system: int
    tools: int
    pinned: int
    last_user: int
    total: int


def no_room(tokens: int, budget: Budget, must: MustStay, *, model_window: int | None, drops_turns: bool,
            estimated: bool) -> str:
    """The warning of a plan of ``tokens`` over ``budget``: what stays and, by how much it is over, what would
    help (``model_window``: the most the model takes; ``drops_turns``: a step drops whole turns (a trim))."""
    limit = budget.max_input_tokens
    about = "about " if estimated else ""
    head = f"does not fit: {about}{tokens:,} tokens for an input budget of {limit:,}"
    if must.total <= limit:  # the steps stopped above what must stay
        fix = ("add 'trim' (or 'summarize') to strategies" if not drops_turns
               else "a smaller keep_last, or a larger budget")
        return (f"{head}; what must stay needs only {about}{must.total:,}, but the steps left more: {fix}")
    framing = must.total - must.system - must.tools - must.pinned - must.last_user
    parts = [f"{what} {tokens:,}" for what, tokens in (
        ("the system prompt", must.system), ("tools", must.tools), ("pinned messages", must.pinned),
        ("the last user message", must.last_user), ("framing", framing)) if tokens > 0]
    short = must.total - limit
    return (f"{head}; what must stay alone needs {about}{must.total:,} ({', '.join(parts)}), {short:,} over. "
            f"Would help: {'; '.join(_helps(short, budget, must, model_window))}")


def _helps(short: int, budget: Budget, must: MustStay, model_window: int | None) -> list[str]:
    """What makes ``short`` tokens of room, each with how much it can give."""
    helps = []
    window = budget.context_window + short
    if model_window is None:
        helps.append(f"a context_window of at least {window:,}")
    elif window <= model_window:
        helps.append(f"a context_window of at least {window:,} (the model takes {model_window:,})")
    else:
        helps.append(f"a model with a larger context window (this one takes {model_window:,})")
    if budget.reserve_output:
        helps.append(f"a reserve_output of at most {budget.reserve_output - short:,}" if budget.reserve_output > short
                     else f"a smaller reserve_output (now {budget.reserve_output:,}; all of it is not enough alone)")
    if budget.safety_margin:
        helps.append(f"a smaller safety_margin (now {budget.safety_margin:,})")
    for what, tokens in (("fewer or shorter tools", must.tools), ("a shorter system prompt", must.system),
                         ("fewer pinned messages", must.pinned), ("a shorter last user message", must.last_user)):
        if tokens >= short:  # what could make the room alone
            helps.append(f"{what} (now {tokens:,} tokens)")
    return helps
