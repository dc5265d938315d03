"""Opaque keyset cursors: base64 of the last key seen, as a JSON list of its columns."""

from __future__ import annotations

import base64
import json
from typing import Any

from app.errors import ValidationFailed

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def encode_values(values: list[Any]) -> str:
    raw = json.dumps(values, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_values(cursor: str, types: tuple[type | tuple[type, ...], ...]) -> list[Any]:
    """The values of an encode_values cursor, each an instance of its entry in `types`."""
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise invalid() from None
    ok = isinstance(values, list) and len(values) == len(types)
    # bool is an int to isinstance; no cursor of ours holds one.
    if not ok or any(isinstance(v, bool) or not isinstance(v, t) for v, t in zip(values, types, strict=True)):
        raise invalid()
    return list(values)


def invalid() -> ValidationFailed:
    return ValidationFailed(
        "cursor is not one this service issued",
        errors=[{"loc": ["query", "cursor"], "msg": "invalid cursor"}],
    )
