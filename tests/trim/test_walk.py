"""The walk of a cold trim tokenizes what it keeps and little more: chunks are sized by text, so a message far
larger than the average does not drag a chunk of others past the cut with it."""

from __future__ import annotations

from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxwin.messages import BaseMessage, HumanMessage
from ctxwin.trim import trim_messages


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(40, 200) | st.integers(2_000, 40_000), min_size=1, max_size=200),
    share=st.floats(0.05, 0.95),
    strategy=st.sampled_from(["last", "first"]),
)
def test_a_cold_trim_tokenizes_at_most_two_messages_it_does_not_keep(
    sizes: list[int], share: float, strategy: Literal["first", "last"]
) -> None:
    messages = [HumanMessage(f"{i:05d}" + "x" * size) for i, size in enumerate(sizes)]  # heavy-tailed, all distinct
    counted: list[BaseMessage] = []

    def by_text(message: BaseMessage) -> int:  # about proportional to the text, as real tokenizers are
        counted.append(message)
        return -(-len(message.text) // 4)

    limit = int(sum(-(-len(m.text) // 4) for m in messages) * share)
    kept = trim_messages(messages, max_tokens=limit, token_counter=by_text, strategy=strategy)
    kept_ids = {id(m) for m in kept}
    assert len(counted) == len({id(m) for m in counted})  # each message counted once
    assert len([m for m in counted if id(m) not in kept_ids]) <= 2
