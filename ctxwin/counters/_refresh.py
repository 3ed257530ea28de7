"""``refresh_model_data``: genai-prices' newest model data, fetched by its own updater on request only (never at
import or lookup), within a time limit.
"""

from __future__ import annotations

import logging
import math

from ctxwin._errors import InvalidInputError
from ctxwin.counters._errors import ModelDataError
from ctxwin.counters._genai_prices import note_fetched, source_label

_QUIET = logging.NullHandler()


def refresh_model_data(url: str | None = None, *, timeout: float = 10.0) -> str:
    """Fetch genai-prices' data (from ``url``, genai-prices' own address by default) with its ``UpdatePrices`` and
    use it for every model lookup of this process; returns the label of the data now in use. ``timeout``: seconds for
    the whole fetch. ``ModelDataError`` when nothing usable came within it (the data in use is kept)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise InvalidInputError(f"refresh_model_data: timeout must be a positive number of seconds, got {timeout!r}")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise InvalidInputError(f"refresh_model_data: url must be an http:// or https:// address, got {url!r}")
    import httpx2
    from genai_prices import UpdatePrices, data_snapshot
    from genai_prices.update_prices import DEFAULT_UPDATE_URL

    address = url or DEFAULT_UPDATE_URL
    # The updater logs its failure as well as raising it; the raise is the report here. Without a handler of its own
    # (one an application configured still gets the record), Python's last-resort handler would print it to stderr.
    logging.getLogger("genai-prices").addHandler(_QUIET)
    # One fetch: the updater is stopped before its next one (``update_interval`` later).
    updater = UpdatePrices(url=address, request_timeout=httpx2.Timeout(timeout=timeout, connect=timeout))
    before = data_snapshot.get_snapshot()
    updater.start()
    try:
        fetched = updater.wait(timeout)
    except Exception as exc:  # whatever the fetch raised: no network, HTTP status, data genai-prices refused
        raise ModelDataError(f"model data not refreshed from {address}: {type(exc).__name__}: {exc}") from exc
    finally:
        updater.stop()  # type: ignore[no-untyped-call]  # genai-prices leaves it unannotated
    snapshot = data_snapshot.get_snapshot()
    if not fetched or snapshot is before:
        raise ModelDataError(f"model data not refreshed from {address}: no answer within {timeout:g} s")
    note_fetched(snapshot, address)
    return source_label()[0]
