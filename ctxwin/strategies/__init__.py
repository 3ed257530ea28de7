"""Strategies that shrink a conversation to fit a budget (filter, trim, truncate tool output, summarize)."""
