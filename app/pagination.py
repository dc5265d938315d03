"""Opaque keyset cursors: base64 of the last key seen."""

from __future__ import annotations

import base64

from app.errors import ValidationFailed

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def encode(key: int) -> str:
    return base64.urlsafe_b64encode(f"k{key}".encode()).decode().rstrip("=")


def decode(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if not raw.startswith("k"):
            raise ValueError
        return int(raw[1:])
    except (ValueError, UnicodeDecodeError):
        raise ValidationFailed(
            "cursor is not one this service issued",
            errors=[{"loc": ["query", "cursor"], "msg": "invalid cursor"}],
        ) from None
