"""A history's identity: a random salt made when the history is created and mixed into every record's checksum, so
that a record, row or page copied from another history fails its check instead of reading as this one's."""

from __future__ import annotations

import re
import secrets
import zlib
from typing import TypeGuard

_IDENTITY = re.compile("[0-9a-f]{32}")


def new_identity() -> str:
    """128 random bits as 32 hex digits; the first 32 bits are never all zero (SQLite keeps them in its file header,
    where zero means "none")."""
    while True:
        identity = secrets.token_hex(16)
        if int(identity[:8], 16):
            return identity


def is_identity(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _IDENTITY.fullmatch(value) is not None


def seed(identity: str | None) -> int:
    """The CRC-32 every record checksum of this history starts from, so it is the CRC of the identity followed by
    the record (0, the plain CRC, for a history written before identities existed)."""
    return 0 if identity is None else zlib.crc32(identity.encode("ascii"))
