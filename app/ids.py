"""Client-chosen identifiers: player ids, mode names and match ids (API.md conventions)."""

from __future__ import annotations

from collections.abc import Sequence
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


# A key's mode limit (app.auth): a mode's name, or a prefix of names written with a trailing `*`.
MODE_PATTERN = r"^[A-Za-z0-9._:@-]{1,128}\*?$"
ModePattern = Annotated[str, StringConstraints(pattern=MODE_PATTERN, min_length=1, max_length=129)]


class ModeScope:
    """The modes something may act on: every mode, or those `patterns` name (`chess` is that
    mode; `fps-*` is every mode whose name starts with `fps-`)."""

    __slots__ = ("_names", "_prefixes", "patterns")

    def __init__(self, patterns: Sequence[str] | None = None) -> None:
        self.patterns = None if patterns is None else tuple(patterns)
        self._names = frozenset(p for p in self.patterns or () if not p.endswith("*"))
        self._prefixes = tuple(p[:-1] for p in self.patterns or () if p.endswith("*"))

    @property
    def limited(self) -> bool:
        return self.patterns is not None

    def allows(self, mode: str) -> bool:
        return self.patterns is None or mode in self._names or mode.startswith(self._prefixes)

    def covers(self, other: ModeScope) -> bool:
        """Whether every mode `other` allows is allowed here."""
        if self.patterns is None:
            return True
        if other.patterns is None:
            return False
        return all(name in self._names or name.startswith(self._prefixes) for name in other._names) and all(
            prefix.startswith(self._prefixes) for prefix in other._prefixes
        )

    def like_patterns(self) -> list[str] | None:
        """The patterns for SQL's `LIKE ANY` (backslash escapes), None for every mode."""
        if self.patterns is None:
            return None
        # `_` is a LIKE wildcard and may be in a mode's name; `%` and `\` may not (ID_PATTERN).
        escaped = [p.replace("_", "\\_") for p in self.patterns]
        return [p[:-1] + "%" if p.endswith("*") else p for p in escaped]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModeScope) and self.patterns == other.patterns

    def __hash__(self) -> int:
        return hash(self.patterns)

    def __repr__(self) -> str:
        return f"ModeScope({list(self.patterns) if self.patterns is not None else None})"


EVERY_MODE = ModeScope()
