"""Model windows and prices from genai-prices (issue 51, item 1): ctxwin's table agrees with it on every model both
know, today's models resolve with its figures, a model only it knows gets its maker's counter as an estimate, each
figure says where it comes from, long-context tiers and peak prices are billed, and an opt-in refresh fetches newer
data from a local server (never the internet)."""

from __future__ import annotations

import datetime
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from genai_prices import data_snapshot
from genai_prices.types import ModelPrice, TieredPrices

import ctxwin
from ctxwin.counters import ModelDataError, PriceTier, get_counter, get_model, list_models, refresh_model_data
from ctxwin.counters._builtin_caching import BUILTIN_CACHING
from ctxwin.counters._builtin_models import BUILTIN_MODELS
from ctxwin.counters._caching import CachingRules
from ctxwin.counters._genai_prices import _prices
from ctxwin.counters._provider_rules import maker_of

# Released since June by the seven makers the issue names (genai-prices 0.2.5 lists each).
TODAYS = ["gpt-6-sol", "gpt-6.1-sol", "gpt-6.1-terra", "claude-opus-5-5", "claude-haiku-5-5", "gemini-4-argon",
          "gemini-3.8-flash", "mistral-large-4", "glm-5.2", "kimi-k3", "deepseek-v4-pro"]
MAKER_PROVIDERS = ("openai", "anthropic", "google", "mistral", "zhipuai", "moonshotai", "deepseek")


def genai(name: str, provider: str | None = None) -> Any:
    """The model genai-prices itself finds for ``name`` (its own lookup, not ctxwin's)."""
    return data_snapshot.get_snapshot().find_provider_model(name, None, provider, None)[1]


def price(value: Any) -> float | None:
    return None if value is None else float(value.base if isinstance(value, TieredPrices) else value)


def standard(model: Any) -> ModelPrice:
    """The model's highest prices of today as genai-prices gives them hour by hour (DeepSeek's change with the time
    of day, and ctxwin takes them at their peak)."""
    midnight = datetime.datetime.now(datetime.timezone.utc).replace(hour=0, minute=30, second=0, microsecond=0)
    hourly = [model.get_prices(midnight + datetime.timedelta(hours=hour)) for hour in range(24)]
    return max(hourly, key=lambda prices: price(prices.input_mtok) or 0.0)


def test_ctxwin_table_agrees_with_genai_prices_on_every_model_both_know() -> None:
    """ctxwin's own table keeps what genai-prices lacks: where genai-prices lists a model (under its maker), the
    window registered is genai-prices' figure, the output limit fits in it, and no price is restated."""
    both = 0
    for spec in BUILTIN_MODELS:
        provider = maker_of(spec.name).provider
        if provider is None:
            continue
        provider_data = data_snapshot.get_snapshot().find_provider(None, provider, None)
        theirs = provider_data.find_model(spec.name)
        if theirs is None:
            continue
        both += 1
        if theirs.context_window is not None:
            assert spec.context_window == theirs.context_window, spec.name
        assert spec.max_output_tokens <= get_model(spec.name).context_window, spec.name
        ours = BUILTIN_CACHING.get(spec.name)
        if ours is not None:
            given = {"input": "input_mtok", "cached_input": "cache_read_mtok", "output": "output_mtok"}
            restated = [field for field, key in given.items()
                        if getattr(ours, field) is not None and getattr(standard(theirs), key) is not None]
            assert not restated, f"{spec.name}: ctxwin's table restates genai-prices' {restated}"
    assert both > 70  # every OpenAI and Anthropic model, most of Gemini's, DeepSeek's and Mistral's


@pytest.mark.slow
@pytest.mark.parametrize("name", TODAYS)
def test_todays_models_resolve_with_genai_prices_window_and_prices(name: str) -> None:
    theirs = genai(name)
    spec = get_model(name)
    prices = standard(theirs)
    assert spec.context_window == theirs.context_window
    assert spec.caching is not None
    assert spec.caching.input == price(prices.input_mtok) and spec.caching.output == price(prices.output_mtok)
    assert spec.caching.cached_input == price(prices.cache_read_mtok)
    assert spec.source_of("context_window").source.startswith("genai-prices")  # type: ignore[union-attr]
    assert spec.source_of("prices").source.startswith("genai-prices")  # type: ignore[union-attr]
    plan = ctxwin.fit([("system", "Be brief."), ("user", "hello " * 50)], model=name)
    assert plan.fits and plan.budget.context_window == theirs.context_window
    assert get_counter(name).count_text("hello world") > 0


@pytest.mark.parametrize("name", ["gpt-6.1-sol", "kimi-k3"])
def test_todays_models_resolve_on_a_few_examples(name: str) -> None:
    theirs, spec = genai(name), get_model(name)
    assert spec.context_window == theirs.context_window
    assert spec.caching is not None and spec.caching.input == price(standard(theirs).input_mtok)


@pytest.mark.slow
def test_every_model_of_the_seven_makers_resolves_or_says_what_is_missing() -> None:
    """Any model the makers' own provider lists in genai-prices, not only the eleven: never "unknown model"."""
    from ctxwin.counters._lookup import _find_model

    checked = 0
    for provider in data_snapshot.get_snapshot().providers:
        if provider.id not in MAKER_PROVIDERS:
            continue
        for model in provider.models:
            if _find_model(model.id) is not None or not model.is_match(model.id):  # ctxwin's table: the test above;
                continue  # an id its own match rules do not take is not a name to look up
            if model.context_window is None:
                with pytest.raises(ValueError, match="without a context window"):
                    get_model(model.id)
                continue
            spec = get_model(model.id)
            assert spec.context_window == model.context_window, model.id
            assert spec.counter.startswith(("estimate:", "approximate:safe")), model.id
            assert get_counter(model.id).estimating, model.id
            checked += 1
    assert checked > 100


def test_a_model_only_genai_prices_knows_counts_with_its_makers_tokenizer_as_an_estimate() -> None:
    openai = get_counter("gpt-6-sol")
    o200k = get_counter("tiktoken:o200k_base")
    text = "The quick brown fox: 42 jumps, 1.5 km, 東京 — naïve"
    assert openai.count_text(text) == o200k.count_text(text)
    assert openai.estimating and openai.max_relative_error == get_counter("approximate").max_relative_error > 0
    assert not get_model("gpt-6-sol").exact and get_model("gpt-4o").exact
    assert get_counter("openai/gpt-6.1-terra") is openai  # one counter for the maker's rule
    assert get_model("deepseek-v4.1-flash").counter == "estimate:deepseek:v4"
    claude = get_model("claude-haiku-5-5")
    assert claude.counter == "approximate:safe,images=anthropic" and claude.tokenizer == "claude-5"
    assert get_model("kimi-k3").counter == "approximate:safe"
    assert get_model("gpt-6-sol-2026-10-01").context_window == get_model("gpt-6-sol").context_window


def test_names_neither_knows_keep_the_error_with_suggestions() -> None:
    with pytest.raises(ValueError, match=r"unknown model 'gpt-6-sool'; did you mean: .*gpt-6-sol"):
        get_model("gpt-6-sool")
    with pytest.raises(ValueError, match="unknown counter or model 'no-such-model-anywhere'"):
        get_counter("no-such-model-anywhere")


def test_each_figure_says_where_it_comes_from() -> None:
    gpt = get_model("gpt-4o")
    assert [source.figure for source in gpt.sources] == ["context_window", "max_output_tokens", "prices", "caching",
                                                         "counter"]
    assert gpt.source_of("max_output_tokens").source == "ctxwin"  # type: ignore[union-attr]
    assert gpt.source_of("caching").date == gpt.caching.date  # type: ignore[union-attr]
    v4 = get_model("deepseek-v4-pro")
    assert v4.source_of("prices").date == "2026-08-17"  # type: ignore[union-attr]  # genai-prices' start date
    kept = get_model("gemini-3.1-pro")  # genai-prices lists no such model: ctxwin's own figures, with their date
    assert kept.source_of("prices").source.startswith("ctxwin: https://")  # type: ignore[union-attr]
    assert kept.source_of("context_window").source == "ctxwin"  # type: ignore[union-attr]
    assert all(spec.sources for spec in list_models())


def test_prices_that_change_with_the_time_of_day_are_taken_at_their_highest() -> None:
    chat = genai("deepseek-chat", "deepseek")
    today = datetime.date.today()
    prices = _prices(chat.prices, today)
    assert prices is not None and prices.peak
    highest = max(float(conditional.prices.input_mtok) for conditional in chat.prices)
    assert prices.input == highest
    assert "peak" in get_model("deepseek-v4-flash").caching.assumed  # type: ignore[union-attr]


def test_long_context_tiers_bill_the_whole_request() -> None:
    haiku = get_model("claude-haiku-5-5").caching
    assert haiku is not None and [tier.above for tier in haiku.tiers] == [100_000]
    below, above = haiku.cost(100_000), haiku.cost(100_001)
    assert below == pytest.approx(100_000 * 0.1 / 1e6) and above == pytest.approx(100_001 * 0.5 / 1e6)
    sol = get_model("gpt-6-sol").caching
    assert sol is not None and sol.at(300_000).input == 4.0 and sol.at(272_000).input == 2.0


def test_price_tiers_are_validated() -> None:
    with pytest.raises(ValueError, match="above"):
        PriceTier(-1)
    with pytest.raises(ValueError, match="input"):
        PriceTier(10, input=-1.0)
    with pytest.raises(ValueError, match="tuple of PriceTier"):
        CachingRules("automatic", 0, 1, 1.0, 0.1, 1.0, 2.0, "https://x.test", "2026-12-07",
                     tiers=({"above": 5},))  # type: ignore[arg-type]


# --- the opt-in refresh, against a server on 127.0.0.1 ----------------------------------------------------------

SERVED = [{"id": "openai", "name": "OpenAI", "api_pattern": r"https://api\.openai\.com",
           "model_match": {"starts_with": "gpt-"},
           "models": [{"id": "gpt-7-test", "match": {"equals": "gpt-7-test"}, "context_window": 2_000_000,
                       "prices": {"input_mtok": 3, "output_mtok": 12, "cache_read_mtok": 0.3}}]}]


class _Handler(BaseHTTPRequestHandler):
    body = b""
    delay = 0.0

    def do_GET(self) -> None:
        time.sleep(self.delay)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


def _serve(body: bytes, delay: float = 0.0) -> tuple[ThreadingHTTPServer, str]:
    handler = type("Handler", (_Handler,), {"body": body, "delay": delay})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/data.json"


@pytest.fixture
def bundled() -> Iterator[None]:
    """Whatever a test fetched, the package's own data again afterwards."""
    yield
    data_snapshot.set_custom_snapshot(None)


def test_lookups_never_fetch() -> None:
    get_model("gpt-6-sol")
    list_models()
    assert not data_snapshot.get_snapshot().from_auto_update


@pytest.mark.slow
def test_refresh_fetches_newer_data_and_labels_it(bundled: None) -> None:
    server, url = _serve(json.dumps(SERVED).encode())
    try:
        with pytest.raises(ValueError, match="unknown model 'gpt-7-test'"):
            get_model("gpt-7-test")
        label = refresh_model_data(url, timeout=5)
    finally:
        server.shutdown()
    assert label.startswith("genai-prices, fetched ") and url in label
    spec = get_model("gpt-7-test")
    assert spec.context_window == 2_000_000 and spec.caching is not None and spec.caching.input == 3.0
    assert spec.source_of("context_window").source.startswith(label)  # type: ignore[union-attr]
    assert get_model("gpt-4o").source_of("context_window").source == "ctxwin"  # type: ignore[union-attr]


def test_refresh_fails_at_once_without_a_server(bundled: None) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ModelDataError, match=f"not refreshed from http://127.0.0.1:{port}/.*Connect"):
        refresh_model_data(f"http://127.0.0.1:{port}/data.json", timeout=5)
    assert time.monotonic() - started < 4
    assert not data_snapshot.get_snapshot().from_auto_update  # the data in use is kept


@pytest.mark.slow
def test_refresh_refuses_what_is_not_genai_prices_data(bundled: None) -> None:
    server, url = _serve(b'{"not": "a provider list"}')
    try:
        with pytest.raises(ModelDataError, match="provider array"):
            refresh_model_data(url, timeout=5)
    finally:
        server.shutdown()
    assert get_model("gpt-6-sol").context_window == 1_050_000


@pytest.mark.slow
def test_refresh_gives_up_after_its_timeout(bundled: None) -> None:
    server, url = _serve(json.dumps(SERVED).encode(), delay=3.0)
    started = time.monotonic()
    try:
        with pytest.raises(ModelDataError, match="not refreshed"):
            refresh_model_data(url, timeout=0.5)
    finally:
        server.shutdown()
    assert time.monotonic() - started < 2.5


def test_data_an_application_fetched_itself_is_used_and_labelled(bundled: None) -> None:
    """An application that runs genai-prices' own updater (Pydantic AI can) gets the same figures from ctxwin."""
    from genai_prices.types import _providers_from_raw

    data_snapshot.set_custom_snapshot(data_snapshot.DataSnapshot(_providers_from_raw(SERVED), from_auto_update=True))
    spec = get_model("gpt-7-test")
    assert spec.context_window == 2_000_000
    assert spec.source_of("prices").source.startswith("genai-prices, fetched ")  # type: ignore[union-attr]


@pytest.mark.parametrize(("url", "timeout", "match"), [
    ("ftp://example.test/data.json", 5, "http"), (None, 0, "timeout"), (None, float("nan"), "timeout"),
])
def test_refresh_arguments_are_checked(url: str | None, timeout: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        refresh_model_data(url, timeout=timeout)
