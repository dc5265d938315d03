"""Client-chosen identifiers: player ids, mode names and match ids (API.md conventions)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, StringConstraints

ID_PATTERN = r"^[A-Za-z0-9._:@-]{1,128}$"

Identifier = Annotated[str, StringConstraints(pattern=ID_PATTERN, min_length=1, max_length=128)]

# An erased player's id is replaced everywhere by "erased:<random>" (app.erasure).
# Clients may not name a player so: a pseudonym must never be given a rating again, and a
# client's player must never be mistaken for an erased one.
PSEUDONYM_PREFIX = "erased:"


def is_pseudonym(player_id: str) -> bool:
    """True for the pseudonym of an erased player."""
    return player_id.startswith(PSEUDONYM_PREFIX)


def _not_pseudonym(player_id: str) -> str:
    if is_pseudonym(player_id):
        raise ValueError(f"player ids starting with {PSEUDONYM_PREFIX!r} are reserved for erased players")
    return player_id


PlayerId = Annotated[Identifier, AfterValidator(_not_pseudonym)]
"""A player id a client writes with (matches, tickets, rating overrides): no pseudonym."""
