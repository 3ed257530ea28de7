"""How a request marks the provider's prompt cache: whether it can, which lifetime its writes ask for and whether
writing pays at all (a write costs more than input and pays only if read before it expires).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ctxwin._errors import InvalidInputError
from ctxwin.counters._caching import CachingRules
from ctxwin.messages._request_forms.registry import get_form

# A lifetime is chosen for gaps up to this share of it: a request that comes later than usual must still find the
# prefix its predecessor wrote.
TTL_SLACK = 0.8


def check_cache_control(value: object, output: str, rules: CachingRules | None, model: str | None, *,
                        model_known: bool = True) -> None:
    """``cache_control`` for a planner or session of ``output`` for a model with ``rules``; ValueError naming the
    fix when the request could not carry marks (``model_known=False``: the output only, the model checked later)."""
    if not isinstance(value, bool):
        raise InvalidInputError(f"cache_control must be a bool, got {value!r}")
    if not value:
        return
    form = get_form(output)
    if not form.marks_cache:
        raise InvalidInputError(f"cache_control=True marks cache breakpoints in a provider request: it needs "
                                f"output='anthropic', or 'openai'/'responses' for a model that takes them (got "
                                f"output={output!r})")
    refusal = form.cache_marks_refusal(rules, model) if model_known else None
    if refusal is not None:
        raise InvalidInputError(refusal)


def checked_ttl(value: object, rules: CachingRules | None) -> str | None:
    """``value`` as a ``cache_ttl``: None (chosen from the gap between requests) or one of the model's lifetimes;
    ValueError naming them."""
    if value is None:
        return None
    allowed = [] if rules is None else [t for t in (rules.ttl, rules.long_ttl) if t and rules.ttl_seconds(t)]
    if value not in allowed:
        raise InvalidInputError(f"cache_ttl must be None (chosen from the gap between requests) or one of the model's "
                                f"cache "
                                f"lifetimes {allowed or '(none known)'}, got {value!r}")
    return str(value)


def checked_gap(value: object) -> float | None:
    """``value`` as an ``expected_gap`` in seconds (positive), or None (measured); ValueError naming it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise InvalidInputError(f"expected_gap must be the seconds expected between requests (> 0), or None "
                                f"(measured), "
                                f"got {value!r}")
    return float(value)


@dataclass(frozen=True)
class TtlChoice:
    """The lifetime a request's writes ask for: ``ttl`` (the provider's name for it), ``long`` when it is the
    rules' ``long_ttl`` (sent; the short one is the default and is not), ``writes`` False when no lifetime outlasts
    the gap (the request marks nothing)."""

    ttl: str
    long: bool = False
    writes: bool = True

    @property
    def sent(self) -> str | None:
        return self.ttl if self.long else None


def choose_ttl(rules: CachingRules | None, gap: float | None, forced: str | None = None) -> TtlChoice:
    """The lifetime for requests ``gap`` seconds apart (None: not known yet, taken as short): the short one while
    the gap is within ``TTL_SLACK`` of it, else the long one, else none (``writes=False``); ``forced`` when given."""
    if rules is None:
        return TtlChoice("")
    if forced is not None:
        return TtlChoice(forced, long=forced == rules.long_ttl and forced != rules.ttl)
    short = rules.ttl_seconds(rules.ttl)
    if gap is None or short is None or gap <= TTL_SLACK * short:
        return TtlChoice(rules.ttl)
    long = rules.ttl_seconds(rules.long_ttl) if rules.long_ttl else None
    if long is not None and gap <= TTL_SLACK * long:
        return TtlChoice(rules.long_ttl, long=True)
    return TtlChoice(rules.ttl, writes=False)


def write_ratio(rules: CachingRules | None, choice: TtlChoice) -> float | None:
    """What a write at ``choice`` costs against plain input."""
    if rules is None:
        return None
    if choice.long and rules.long_write_ratio is not None:
        return rules.long_write_ratio
    return rules.write_ratio


def payback_turns(rules: CachingRules | None, choice: TtlChoice) -> int:
    """How many requests after a cut must read its prefix for the cut's cache write to pay for itself: a write
    costs ``write_ratio - 1`` more than plain input, each read saves ``1 - read_ratio``; at least one (and one when
    nothing is written, or a write costs what input costs)."""
    ratio = write_ratio(rules, choice)
    if rules is None or not choice.writes or rules.read_ratio is None or ratio is None or rules.read_ratio >= 1:
        return 1
    return max(1, math.ceil((ratio - 1) / (1 - rules.read_ratio)))
