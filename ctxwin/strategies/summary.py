"""The summary message: how it is recognised, and what it records about the messages it replaced."""

from __future__ import annotations

from ctxwin.messages import BaseMessage, SystemMessage

SUMMARY_KEY = "ctxwin_summary"
SUMMARY_HEADER = "Summary of the earlier conversation:"


def is_summary(message: BaseMessage) -> bool:
    return isinstance(message, SystemMessage) and SUMMARY_KEY in message.response_metadata


def summarized_ids(message: BaseMessage) -> list[str]:
    """Ids of every message a summary stands for, across all the summaries it extended."""
    record = message.response_metadata.get(SUMMARY_KEY) if is_summary(message) else None
    return list(record.get("summarized_ids", [])) if isinstance(record, dict) else []


def summary_message(text: str, replaced: list[BaseMessage], count: int) -> SystemMessage:
    """A system message holding the summary; ``response_metadata`` (never sent to providers) names what it replaced.

    ``count`` is how many original messages the summary covers in all, earlier summaries included.
    """
    ids: list[str] = []
    for message in replaced:
        ids.extend(summarized_ids(message) if is_summary(message) else [message.id] if message.id else [])
    return SystemMessage(
        f"{SUMMARY_HEADER}\n{text}",
        id="ctxwin-summary",
        response_metadata={SUMMARY_KEY: {"summarized_ids": ids, "summarized_count": count}},
    )
