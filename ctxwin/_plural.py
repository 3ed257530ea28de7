"""How a count is written in reports and messages: thousands separators and the right plural."""


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 conversation``, ``2 conversations``, ``12,000 messages``."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"
