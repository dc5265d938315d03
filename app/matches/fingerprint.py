"""What a posted match means, as one hash: tells a retry from a different match under a used id.

The hash covers what the match says about ratings, in a form PostgreSQL can rebuild from the
stored rows (migration 0007 does, in SQL, and a test checks the two agree):

- the mode;
- per player, sorted by (team, player id): team, player id, the team's rank (a score counts as
  its negation, as the rating reads it), weight, and coefficient (absent counts as 1, which is
  what a weighted mode uses for it).

Floats enter as their 8 IEEE bytes (PostgreSQL's float8send), so no decimal formatting has to
agree; -0.0 is folded into 0.0 first (a score of 0 negates to -0.0). `played_at` is not in the
hash: it is compared as an instant against the stored column, and a retry may omit it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from struct import Struct

_DOUBLE = Struct(">d")  # float8send's byte order

# (player id, weight, coefficient or None), per team.
Teams = Sequence[Sequence[tuple[str, float, float | None]]]


def _bytes(value: float) -> str:
    return _DOUBLE.pack(value + 0.0).hex()


def match_fingerprint(mode: str, teams: Teams, ranks: Sequence[float]) -> str:
    """sha256 of the canonical text: the mode, then one line per player, sorted."""
    lines = sorted(
        (team, player, _bytes(rank), _bytes(weight), _bytes(1.0 if coefficient is None else coefficient))
        for team, (members, rank) in enumerate(zip(teams, ranks, strict=True))
        for player, weight, coefficient in members
    )
    text = mode + "".join(f"\n{team}\t{player}\t{r}\t{w}\t{c}" for team, player, r, w, c in lines)
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint_sql(player: str) -> str:
    """The same hash in PostgreSQL, as an aggregate over one match's rows: `m` is the matches
    row (grouped by m.id, m.mode) and `p` its match_players rows; `player` is the SQL giving a
    row's player id (p.player_id, or that id renamed). COLLATE "C" sorts ids by code point, as
    sorted() does; adding 0.0 folds -0.0 into 0.0. Migration 0007 holds a frozen copy."""
    return f"""encode(sha256(convert_to(
        m.mode || string_agg(
            E'\\n' || p.team || E'\\t' || ({player})
            || E'\\t' || encode(float8send(p.rank + 0.0::float8), 'hex')
            || E'\\t' || encode(float8send(p.weight + 0.0::float8), 'hex')
            || E'\\t' || encode(float8send(coalesce(p.coefficient, 1.0::float8) + 0.0::float8), 'hex'),
            '' ORDER BY p.team, ({player}) COLLATE "C"),
        'UTF8')), 'hex')"""
