"""The request forms by name, the built-in three and any registered (``register_form``): what ``output=`` names, and
which form a request is in (``form_of``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxwin._errors import InvalidInputError
from ctxwin.messages._request_forms.anthropic import ANTHROPIC
from ctxwin.messages._request_forms.chat import CHAT
from ctxwin.messages._request_forms.form import CALLER, RequestForm
from ctxwin.messages._request_forms.responses import RESPONSES

FORMS: dict[str, RequestForm] = {form.name: form for form in (CHAT, RESPONSES, ANTHROPIC)}
# The output that gives each whole request back in the form it came in (settled per request: ``form_of``).
AS_GIVEN = "request"


def register_form(form: RequestForm) -> None:
    """Make ``output=form.name`` write requests in ``form``; ValueError for a name taken by another form."""
    taken = FORMS.get(form.name)
    if form.name in (CALLER.name, AS_GIVEN) or (taken is not None and taken is not form):
        raise InvalidInputError(f"a request form named {form.name!r} exists already")
    FORMS[form.name] = form


def unregister_form(form: RequestForm) -> None:
    """Forget ``form`` (tests register toy forms for a while)."""
    if FORMS.get(form.name) is form:
        del FORMS[form.name]


def is_output(name: object) -> bool:
    """Whether ``name`` is an ``output=`` a planner takes."""
    return name in (CALLER.name, AS_GIVEN) or name in FORMS


def outputs() -> tuple[str, ...]:
    return (CALLER.name, *FORMS, AS_GIVEN)


def get_form(output: str) -> RequestForm:
    """The form ``output`` writes: the caller's own for ``"messages"``, and for ``"request"`` until a request
    settles it."""
    return FORMS.get(output, CALLER)


def form_of(request: Any) -> RequestForm:
    """The provider form ``request`` is in (a whole request or a list of items): the first registered form that
    claims it, else chat completions (message objects, tuples and anything else included)."""
    return next((form for form in FORMS.values() if form.claims(request)), CHAT)


def limit_keys() -> list[str]:
    """The reply limit's name in each form (``max_completion_tokens``, ``max_output_tokens``, ``max_tokens``)."""
    return [form.limit_key for form in FORMS.values() if form.limit_key is not None]


def required_limit_keys() -> set[str]:
    """The reply limits a request of their form must carry (Anthropic's ``max_tokens``)."""
    return {form.limit_key for form in FORMS.values() if form.limit_key is not None and form.requires_limit}


def request_limit(request: Mapping[str, Any]) -> int | None:
    """The reply limit a request sets (under any form's name), or None; ValueError for one that is not a positive
    int."""
    for key in limit_keys():
        value = request.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InvalidInputError(f"the request's {key!r} must be a positive int, got {value!r}")
        return value
    return None
