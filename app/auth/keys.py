"""API keys: generation, hashing and timing-safe checking.

A key reads `ssk_<id>_<secret>`. The id is public and finds the row; only SHA-256 of
the whole key is stored, and the hashes are compared with hmac.compare_digest so the
time taken does not depend on how much of a guess was right.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from enum import StrEnum

from app.ids import MODE_PATTERN

PREFIX = "ssk"


class Scope(StrEnum):
    results_write = "results:write"
    matchmaking = "matchmaking"
    read = "read"
    admin = "admin"


def parse_scopes(text: str) -> list[Scope]:
    """'a,b' -> [Scope.a, Scope.b]; unknown names raise ValueError naming them."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    known = {s.value for s in Scope}
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(
            f"unknown scopes {unknown}; choose from {sorted(known)}" if unknown else "give at least one scope"
        )
    return [Scope(n) for n in names]


def parse_modes(text: str) -> list[str]:
    """'fps-*,chess' -> ['fps-*', 'chess']: mode names, or prefixes ending in `*`. ValueError
    names what is not one."""
    patterns = [part.strip() for part in text.split(",") if part.strip()]
    wrong = [p for p in patterns if not re.fullmatch(MODE_PATTERN, p)]
    if wrong or not patterns:
        raise ValueError(
            f"not mode names or prefixes ending in '*': {wrong}" if wrong else "give at least one mode"
        )
    return patterns


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> tuple[str, str]:
    """A fresh (id, key)."""
    key_id = secrets.token_hex(8)
    return key_id, f"{PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"


def key_id_of(key: str) -> str | None:
    """The id part of a well-formed key, else None."""
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != PREFIX or not parts[1]:
        return None
    return parts[1]


def matches(stored_hash: str, presented: str) -> bool:
    return hmac.compare_digest(stored_hash.encode(), hash_key(presented).encode())


def bootstrap_id(key: str) -> str:
    """A stable id for an operator-chosen ADMIN_API_KEY, which has no id of its own."""
    return "boot" + hashlib.sha256(b"bootstrap:" + key.encode()).hexdigest()[:12]
