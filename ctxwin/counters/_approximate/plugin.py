"""Default plugin: the ``approximate`` counter (loaded by module name by ``ctxwin._plugins.load_plugins``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctxwin.counters._approximate.counter import ApproximateCounter
from ctxwin.counters._image_tokens import ImagePricing, image_tokens, split_images_option
from ctxwin.hookspecs import hookimpl


class PricedApproximateCounter(ApproximateCounter):
    """The approximate counter charging images as one provider does (``approximate:safe,images=anthropic``)."""

    image_pricing: ImagePricing

    def count_block(self, block: dict[str, Any]) -> int:
        return image_tokens(block, upper_bound=self.safe, pricing=self.image_pricing)


def approximate_counter(arg: str | None) -> ApproximateCounter:
    """``approximate[:safe][:<encoding>][,images=<pricing>]``: without a pricing, images as gpt-4o charges them."""
    own, pricing = split_images_option("approximate[:safe]", arg or "")
    if pricing is None:
        return ApproximateCounter.from_spec(own)
    counter = PricedApproximateCounter.from_spec(own)
    assert isinstance(counter, PricedApproximateCounter)  # from_spec builds its own class
    counter.image_pricing = pricing
    counter.name += f",images={pricing.name}"
    return counter


@hookimpl
def register_counters(register: Callable[..., None]) -> None:
    register("approximate", approximate_counter, origin="no data: estimated from character classes")
