"""SQL for seasons: the switch, the archive and reset of rows behind their mode's season,
archived leaderboards, and a replay's scope.

The switch runs under the mode's exclusive lock (app.leaderboards.repository.lock_mode):
no match of the mode is being written, so `match_applied_seq`'s last value is the
boundary between the season that ends and the one that starts. It only writes the season
rows and moves `modes.season` on; the ratings are archived and reset row by row by
`season_catch_up` (migration 0009): by the job in chunks, and by the trigger on ratings for
a player a match reaches first.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.bulk import driver
from app.db.models import Season
from app.leaderboards.repository import Row

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

_END = text("""
    UPDATE seasons s SET ended_at = now(), end_seq = :end_seq, min_matches = m.min_matches_for_leaderboard
    FROM modes m WHERE m.name = :mode AND s.mode = :mode AND s.name = :season
""")

_START = text("""
    INSERT INTO seasons (mode, name, ordinal, reset, pull, widen, started_at, start_seq)
    VALUES (:mode, :name, :ordinal, :reset, :pull, :widen, now(), :start_seq)
""")

_ADVANCE = text("UPDATE modes SET season = :ordinal WHERE name = :mode")

# The ended season's standings as they were at the switch, in one snapshot: rows archived
# already, and rows still behind (their values unchanged since). Best first, as the live
# leaderboard ranked at the switch: conservative descending, ties by player id, then the
# players below the minimum of matches the mode asked then.
_ORDER = """
    SELECT u.player_id, u.behind, u.matches >= s.min_matches AS eligible
    FROM (
        SELECT player_id, conservative, matches, true AS behind FROM ratings
        WHERE mode = %(mode)s AND season < %(ordinal)s
        UNION ALL
        SELECT player_id, conservative, matches, false FROM season_standings
        WHERE mode = %(mode)s AND season = %(season)s
    ) AS u, seasons s
    WHERE s.mode = %(mode)s AND s.name = %(season)s
    ORDER BY u.matches >= s.min_matches DESC, u.conservative DESC, u.player_id
"""
# Rows converted per step: the service's event loop answers requests between steps.
_BATCH = 20_000

_CATCH_UP = text("SELECT season_catch_up(:mode, CAST(:players AS varchar[]), CAST(:ranks AS bigint[]))")

_UNRANKED = text(
    "SELECT player_id FROM season_standings WHERE mode = :mode AND season = :season AND rank IS NULL"
)

_SET_RANKS = text("""
    UPDATE season_standings a SET rank = x.rank
    FROM unnest(CAST(:players AS varchar[]), CAST(:ranks AS bigint[])) AS x(player_id, rank)
    WHERE a.mode = :mode AND a.season = :season AND a.player_id = x.player_id
""")

_COUNT = text("""
    UPDATE seasons s
    SET players = (SELECT count(*) FROM season_standings a WHERE a.mode = :mode AND a.season = :season),
        ranked = (SELECT count(*) FROM season_standings a
                  WHERE a.mode = :mode AND a.season = :season AND a.rank IS NOT NULL)
    WHERE s.mode = :mode AND s.name = :season
    RETURNING s.players, s.ranked
""")

_STARTS = text("""
    SELECT a.player_id, season_mu(a.mu, m.mu, :pull), season_sigma(a.sigma, m.sigma, :widen)
    FROM season_standings a JOIN modes m ON m.name = a.mode
    WHERE a.mode = :mode AND a.season = :season
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


async def switch(
    session: AsyncSession,
    mode: str,
    ending: str,
    name: str,
    ordinal: int,
    reset: str,
    factors: tuple[float, float],
    boundary: int,
) -> None:
    """End season `ending` at `boundary` and start `name`; the caller holds the mode's lock."""
    await session.execute(_END, {"mode": mode, "season": ending, "end_seq": boundary})
    pull, widen = factors
    await session.execute(
        _START,
        {
            "mode": mode,
            "name": name,
            "ordinal": ordinal,
            "reset": reset,
            "pull": pull,
            "widen": widen,
            "start_seq": boundary,
        },
    )
    await session.execute(_ADVANCE, {"mode": mode, "ordinal": ordinal})


@dataclass(frozen=True, slots=True)
class Final:
    """An ended season's final order: each ranked player's rank, and the players whose rows
    still wait for their archive and reset, in code-point order (season_catch_up's)."""

    ranks: dict[str, int]
    behind: list[str]


async def final_order(session: AsyncSession, mode: str, season: str, ordinal: int) -> Final:
    """A million rows at a switch of a big mode: read and sorted in steps and off the event
    loop, which serves the match posts meanwhile."""
    conn = await driver(session)
    ranks: dict[str, int] = {}
    behind: list[str] = []
    async with conn.cursor() as cursor:
        await cursor.execute(_ORDER, {"mode": mode, "season": season, "ordinal": ordinal})
        while rows := await cursor.fetchmany(_BATCH):
            for player, is_behind, eligible in rows:
                if eligible:
                    ranks[player] = len(ranks) + 1
                if is_behind:
                    behind.append(player)
            await asyncio.sleep(0)
    return Final(ranks, await asyncio.to_thread(sorted, behind))


async def catch_up(
    session: AsyncSession, mode: str, players: list[str], ranks: list[int | None] | None = None
) -> int:
    """Archive (with `ranks`, when known) and reset those of `players` whose rows are behind
    the mode's season."""
    params = {"mode": mode, "players": players, "ranks": ranks}
    return int((await session.execute(_CATCH_UP, params)).scalar_one())


async def finish(session: AsyncSession, mode: str, season: str, ranks: dict[str, int]) -> tuple[int, int]:
    """Rank the rows archived without a rank (by match posts) and count the archive:
    (players, ranked)."""
    unranked = [row[0] for row in (await session.execute(_UNRANKED, {"mode": mode, "season": season})).all()]
    known = [player for player in unranked if player in ranks]
    if known:
        await session.execute(
            _SET_RANKS,
            {"mode": mode, "season": season, "players": known, "ranks": [ranks[p] for p in known]},
        )
    players, ranked = (await session.execute(_COUNT, {"mode": mode, "season": season})).one()
    return int(players), int(ranked)


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
