"""SQL for seasons: the switch (archive, reset), archived leaderboards, and replay's scope.

The switch runs under the mode's exclusive lock (app.leaderboards.repository.lock_mode):
no match of the mode is being written, so `match_applied_seq`'s last value is the
boundary between the season that ends and the one that starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Season
from app.leaderboards.repository import Row

# The reset, one formula for the three kinds (docs/api.md, "Seasons"): hard is pull =
# widen = 1, none is 0 and 0. The ends are exact (the prior, or the rating unchanged),
# not the formula's rounding. `s` is the source of mu and sigma, `m` the modes row.
_MU = """CASE WHEN :pull = 0 THEN s.mu WHEN :pull = 1 THEN m.mu
         ELSE m.mu + (1 - :pull) * (s.mu - m.mu) END"""
_SIGMA = """CASE WHEN :widen = 0 THEN s.sigma WHEN :widen = 1 THEN m.sigma
            ELSE sqrt(s.sigma * s.sigma + :widen * (m.sigma * m.sigma - s.sigma * s.sigma)) END"""

_LIST = text("SELECT * FROM seasons WHERE mode = :mode ORDER BY ordinal DESC")

# Matches imported and not yet posted carry no applied_seq; numbered before the switch,
# they fall in the season that ends, as their played_at says they should.
_STAMP_UNNUMBERED = text("""
    UPDATE matches SET applied_seq = nextval('match_applied_seq')
    WHERE mode = :mode AND applied_seq IS NULL
""")

_HIGH_WATER = text(
    "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM match_applied_seq"
)

_FIRST = text("""
    INSERT INTO seasons (mode, name, ordinal, reset, pull, widen, started_at, start_seq)
    SELECT name, :name, 0, 'none', 0, 0, created_at, 0 FROM modes WHERE name = :mode
""")

# Every rated player, ranked as the live leaderboard ranks them (conservative descending,
# ties by player id) when they have the minimum of matches.
_ARCHIVE = text("""
    INSERT INTO season_standings
        (mode, season, player_id, rank, mu, sigma, conservative, matches, wins, losses, draws,
         last_played_at)
    SELECT r.mode, :season, r.player_id,
           CASE WHEN r.matches >= m.min_matches_for_leaderboard
                THEN row_number() OVER (PARTITION BY r.matches >= m.min_matches_for_leaderboard
                                        ORDER BY r.conservative DESC, r.player_id) END,
           r.mu, r.sigma, r.conservative, r.matches, r.wins, r.losses, r.draws, r.last_played_at
    FROM ratings r JOIN modes m ON m.name = r.mode
    WHERE r.mode = :mode
""")

_END = text("""
    UPDATE seasons s SET ended_at = now(), end_seq = :end_seq, min_matches = m.min_matches_for_leaderboard,
        players = (SELECT count(*) FROM season_standings a WHERE a.mode = :mode AND a.season = :season),
        ranked = (SELECT count(*) FROM season_standings a
                  WHERE a.mode = :mode AND a.season = :season AND a.rank IS NOT NULL)
    FROM modes m WHERE m.name = :mode AND s.mode = :mode AND s.name = :season
    RETURNING s.players, s.ranked
""")

_START = text("""
    INSERT INTO seasons (mode, name, ordinal, reset, pull, widen, started_at, start_seq)
    VALUES (:mode, :name, :ordinal, :reset, :pull, :widen, now(), :start_seq)
""")

_RESET = text(f"""
    UPDATE ratings AS s
    SET mu = {_MU}, sigma = {_SIGMA}, conservative = ({_MU}) - m.conservative_k * ({_SIGMA}),
        matches = 0, wins = 0, losses = 0, draws = 0, last_played_at = NULL, updated_at = now()
    FROM modes m WHERE m.name = :mode AND s.mode = :mode
""")

_STARTS = text(f"""
    SELECT s.player_id, {_MU} AS mu, {_SIGMA} AS sigma
    FROM season_standings s JOIN modes m ON m.name = s.mode
    WHERE s.mode = :mode AND s.season = :season
""")

_PAST_MATCHES = text("SELECT id FROM matches WHERE mode = :mode AND applied_seq <= :seq")

_PAGE = text("""
    SELECT player_id, mu, sigma, conservative, matches, rank FROM season_standings
    WHERE mode = :mode AND season = :season AND rank IS NOT NULL AND rank > :after
    ORDER BY rank LIMIT :limit
""")

_STANDING = text("""
    WITH me AS (
        SELECT rank FROM season_standings WHERE mode = :mode AND season = :season AND player_id = :player_id
    )
    SELECT a.player_id, a.mu, a.sigma, a.conservative, a.matches, a.rank
    FROM season_standings a, me
    WHERE a.mode = :mode AND a.season = :season AND a.player_id = :player_id
    UNION ALL
    SELECT a.player_id, a.mu, a.sigma, a.conservative, a.matches, a.rank
    FROM season_standings a, me
    WHERE a.mode = :mode AND a.season = :season AND me.rank IS NOT NULL
      AND a.rank BETWEEN me.rank - :around AND me.rank + :around AND a.rank <> me.rank
    ORDER BY 6 NULLS FIRST
""")


@dataclass(frozen=True, slots=True)
class Ranked:
    rank: int
    row: Row


def _ranked(r: Any) -> Ranked:
    return Ranked(int(r.rank), Row(r.player_id, r.mu, r.sigma, r.conservative, r.matches))


async def seasons(session: AsyncSession, mode: str) -> list[Season]:
    """The mode's seasons, latest first (the current one, if any, leads)."""
    rows = (await session.execute(_LIST, {"mode": mode})).mappings().all()
    return [Season(**row) for row in rows]


async def stamp_unnumbered(session: AsyncSession, mode: str) -> None:
    await session.execute(_STAMP_UNNUMBERED, {"mode": mode})


async def high_water(session: AsyncSession) -> int:
    """The last applied_seq drawn; the caller holds the mode's exclusive lock."""
    return int((await session.execute(_HIGH_WATER)).scalar_one())


async def first_season(session: AsyncSession, mode: str, name: str) -> None:
    """The season a mode was in before its first switch, begun when the mode was created."""
    await session.execute(_FIRST, {"mode": mode, "name": name})


async def archive(session: AsyncSession, mode: str, season: str, end_seq: int) -> tuple[int, int]:
    """Copy the mode's ratings as they stand into the season's standings and end it:
    (players archived, players ranked)."""
    await session.execute(_ARCHIVE, {"mode": mode, "season": season})
    players, ranked = (
        await session.execute(_END, {"mode": mode, "season": season, "end_seq": end_seq})
    ).one()
    return int(players), int(ranked)


async def start(
    session: AsyncSession, mode: str, name: str, ordinal: int, reset: str, pull: float, widen: float, seq: int
) -> None:
    await session.execute(
        _START,
        {
            "mode": mode,
            "name": name,
            "ordinal": ordinal,
            "reset": reset,
            "pull": pull,
            "widen": widen,
            "start_seq": seq,
        },
    )


async def reset(session: AsyncSession, mode: str, pull: float, widen: float) -> None:
    """Every rating of the mode reset by the formula, its counts to zero (counting is the
    caller's: it holds the lock and recounts the leaderboard after)."""
    await session.execute(_RESET, {"mode": mode, "pull": pull, "widen": widen})


async def starts(
    session: AsyncSession, mode: str, season: str, pull: float, widen: float
) -> dict[str, tuple[float, float]]:
    """Each archived player's rating after the reset that followed `season`."""
    rows = await session.execute(_STARTS, {"mode": mode, "season": season, "pull": pull, "widen": widen})
    return {player: (mu, sigma) for player, mu, sigma in rows.all()}


async def past_matches(session: AsyncSession, mode: str, seq: int) -> set[int]:
    """Keys of the mode's matches applied up to `seq` (those of ended seasons)."""
    return {row[0] for row in (await session.execute(_PAST_MATCHES, {"mode": mode, "seq": seq})).all()}


async def page(session: AsyncSession, mode: str, season: str, after: int, limit: int) -> list[Ranked]:
    rows = await session.execute(_PAGE, {"mode": mode, "season": season, "after": after, "limit": limit})
    return [_ranked(r) for r in rows.all()]


async def standing(
    session: AsyncSession, mode: str, season: str, player_id: str, around: int
) -> tuple[Row, int | None, list[Ranked]] | None:
    """The player's archived row and rank (None when unranked) and the ranked rows around
    them, best first; None when the player was not rated in that season."""
    rows = (
        await session.execute(
            _STANDING, {"mode": mode, "season": season, "player_id": player_id, "around": around}
        )
    ).all()
    mine = [r for r in rows if r.player_id == player_id]
    if not mine:
        return None
    me = mine[0]
    around_rows = [_ranked(r) for r in rows if r.rank is not None]
    return (
        Row(me.player_id, me.mu, me.sigma, me.conservative, me.matches),
        None if me.rank is None else int(me.rank),
        around_rows,
    )
