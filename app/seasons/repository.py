"""SQL for seasons: the switch, the archive and reset of rows behind their mode's season,
archived leaderboards, and a replay's scope.

The switch runs under the mode's exclusive lock (app.leaderboards.repository.lock_mode):
no match of the mode is being written, so `match_applied_seq`'s last value is the
boundary between the season that ends and the one that starts. It writes the season rows,
creates the ending season's archive (a plain table, the partition-to-be of `season_standings`,
migration 0010) and moves `modes.season` on; the ratings are archived (unranked) and reset row
by row by `season_catch_up`: by the job in chunks of id ranges, and by the trigger on ratings
for a player a match reaches first. The job then ranks the archive by a window function,
indexes it by sort and attaches it (`rank`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

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
    RETURNING s.id
""")

_START = text("""
    INSERT INTO seasons (mode, name, ordinal, reset, pull, widen, started_at, start_seq)
    VALUES (:mode, :name, :ordinal, :reset, :pull, :widen, now(), :start_seq)
""")

_ADVANCE = text("UPDATE modes SET season = :ordinal WHERE name = :mode")

_VALUES = "player_id, rank, mu, sigma, conservative, matches, wins, losses, draws, last_played_at, tier"


# An ended season's archive until it is ranked: a plain table, the partition-to-be of
# `season_standings` (migration 0010; its `season_catch_up` builds the same name).
def partition(season_id: int) -> str:
    return f"season_standings_{int(season_id)}"


# A season's archive as a plain table: no index or foreign key while it is filled (each would
# cost per row, in random order); the CHECK lets ATTACH PARTITION skip its scan.
def _table_sql(table: str, season_id: int) -> str:
    return (
        f"CREATE TABLE {table} (LIKE season_standings INCLUDING DEFAULTS,"
        f" CONSTRAINT ck_{partition(season_id)}_season CHECK (season_id = {int(season_id)}))"
    )


# The job's chunks: every CHUNK-th id, in the ids' index order, of the players behind.
_BOUNDS = text("""
    SELECT player_id FROM (
        SELECT player_id, row_number() OVER (ORDER BY player_id) AS n
        FROM ratings WHERE mode = :mode AND season < :ordinal
    ) AS behind WHERE n % :chunk = 1 ORDER BY player_id
""")

_CATCH_UP = text("SELECT season_catch_up(:mode, CAST(:players AS varchar[]))")
_CATCH_UP_RANGE = text("SELECT season_catch_up(:mode, NULL, CAST(:first AS varchar), CAST(:last AS varchar))")


# The ended season's leaderboard as it stood at the switch: the live board's order
# (conservative descending, ties by player id) over the players with the minimum of matches
# the mode asked then; the others are kept unranked.
def _ranked_sql(season_id: int, min_matches: int) -> list[str]:
    filling, ranked = partition(season_id), f"{partition(season_id)}_ranked"
    eligible = f"matches >= {int(min_matches)}"
    return [
        _table_sql(ranked, season_id),
        f"""INSERT INTO {ranked} (season_id, {_VALUES})
            SELECT season_id, player_id,
                   CASE WHEN {eligible}
                        THEN row_number() OVER (PARTITION BY {eligible} ORDER BY conservative DESC, player_id)
                   END,
                   mu, sigma, conservative, matches, wins, losses, draws, last_played_at, tier
            FROM {filling}""",
        f"ALTER TABLE {ranked} ADD CONSTRAINT pk_{filling} PRIMARY KEY (season_id, player_id)",
        f"CREATE INDEX ix_{filling}_rank ON {ranked} (season_id, rank) WHERE rank IS NOT NULL",
        f"DROP TABLE {filling}",
        f"ALTER TABLE {ranked} RENAME TO {filling}",
        f"ALTER TABLE season_standings ATTACH PARTITION {filling} FOR VALUES IN ({int(season_id)})",
    ]


_COUNT = text("""
    UPDATE seasons s SET players = a.players, ranked = a.ranked
    FROM (SELECT count(*) AS players, count(rank) AS ranked FROM season_standings
          WHERE season_id = :season_id) AS a
    WHERE s.id = :season_id
    RETURNING s.players, s.ranked
""")

_COUNTED = text("SELECT players, ranked FROM seasons WHERE id = :season_id FOR UPDATE")

# Seasons ended and not yet ranked: their partitions are filling, not attached.
_FILLING = text("SELECT id FROM seasons WHERE ended_at IS NOT NULL AND ranked IS NULL ORDER BY id")

_STARTS = text("""
    SELECT a.player_id, season_mu(a.mu, m.mu, :pull), season_sigma(a.sigma, m.sigma, :widen)
    FROM season_standings a JOIN modes m ON m.name = :mode
    WHERE a.season_id = :season_id
""")

_PAST_MATCHES = text("SELECT id FROM matches WHERE mode = :mode AND applied_seq <= :seq")

_PAGE = text("""
    SELECT player_id, mu, sigma, conservative, matches, rank, tier FROM season_standings
    WHERE season_id = :season_id AND rank IS NOT NULL AND rank > :after
    ORDER BY rank LIMIT :limit
""")

_STANDING = text("""
    WITH me AS (
        SELECT rank FROM season_standings WHERE season_id = :season_id AND player_id = :player_id
    )
    SELECT a.player_id, a.mu, a.sigma, a.conservative, a.matches, a.rank, a.tier
    FROM season_standings a, me
    WHERE a.season_id = :season_id AND a.player_id = :player_id
    UNION ALL
    SELECT a.player_id, a.mu, a.sigma, a.conservative, a.matches, a.rank, a.tier
    FROM season_standings a, me
    WHERE a.season_id = :season_id AND me.rank IS NOT NULL
      AND a.rank BETWEEN me.rank - :around AND me.rank + :around AND a.rank <> me.rank
    ORDER BY 6 NULLS FIRST
""")


@dataclass(frozen=True, slots=True)
class Ranked:
    rank: int
    row: Row


def _ranked(r: Any) -> Ranked:
    return Ranked(int(r.rank), Row(r.player_id, r.mu, r.sigma, r.conservative, r.matches, r.tier))


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
    """End season `ending` at `boundary` (its archive's partition created, to be filled) and
    start `name`; the caller holds the mode's lock."""
    ended = int(
        (await session.execute(_END, {"mode": mode, "season": ending, "end_seq": boundary})).scalar_one()
    )
    await session.execute(text(_table_sql(partition(ended), ended)))
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


async def rated_count(session: AsyncSession, mode: str) -> int:
    """How many players the mode rates (what a switch archives and resets)."""
    found = await session.execute(text("SELECT count(*) FROM ratings WHERE mode = :mode"), {"mode": mode})
    return int(found.scalar_one())


async def chunks(
    session: AsyncSession, mode: str, ordinal: int, size: int
) -> list[tuple[str | None, str | None]]:
    """The players behind season `ordinal`, as ranges of ids [first, last) of about `size`
    each, covering every id (the first open below, the last above)."""
    params = {"mode": mode, "ordinal": ordinal, "chunk": size}
    bounds: list[str | None] = [row[0] for row in (await session.execute(_BOUNDS, params)).all()]
    bounds[:1] = [None]
    return list(zip(bounds, [*bounds[1:], None], strict=True))


async def catch_up(session: AsyncSession, mode: str, players: list[str]) -> int:
    """Archive and reset those of `players` whose rows are behind the mode's season."""
    return int((await session.execute(_CATCH_UP, {"mode": mode, "players": players})).scalar_one())


async def catch_up_range(session: AsyncSession, mode: str, first: str | None, last: str | None) -> int:
    """Archive and reset the rows behind the mode's season with ids in [first, last)."""
    params = {"mode": mode, "first": first, "last": last}
    return int((await session.execute(_CATCH_UP_RANGE, params)).scalar_one())


async def filling(session: AsyncSession) -> list[int]:
    """The seasons (of every mode) whose archives are being filled, not yet attached."""
    return [int(row[0]) for row in (await session.execute(_FILLING)).all()]


async def hold_filling(session: AsyncSession, season_id: int) -> None:
    """Keep the rows of a filling archive from being ranked until commit (an erasure renames
    in them); waits for a ranking under way."""
    await session.execute(text(f"LOCK TABLE {partition(season_id)} IN ROW EXCLUSIVE MODE"))


async def rank(session: AsyncSession, season_id: int, min_matches: int) -> tuple[int, int]:
    """Rank the season's filled archive, index it by sort and attach it: (players, ranked).
    No row of the mode may be behind. The archive is held exclusively throughout: an erasure
    renaming in it waits (before it takes the modes' locks: app.erasure)."""
    await session.execute(text(f"LOCK TABLE {partition(season_id)} IN EXCLUSIVE MODE"))
    counted = (await session.execute(_COUNTED, {"season_id": season_id})).one()
    if counted.ranked is not None:  # another process's job ranked it while this one waited
        return int(counted.players), int(counted.ranked)
    for statement in _ranked_sql(season_id, min_matches):
        await session.execute(text(statement))
    players, ranked = (await session.execute(_COUNT, {"season_id": season_id})).one()
    return int(players), int(ranked)


async def starts(
    session: AsyncSession, mode: str, season_id: int, pull: float, widen: float
) -> dict[str, tuple[float, float]]:
    """Each archived player's rating after the reset that followed the season."""
    params = {"mode": mode, "season_id": season_id, "pull": pull, "widen": widen}
    rows = await session.execute(_STARTS, params)
    return {player: (mu, sigma) for player, mu, sigma in rows.all()}


async def past_matches(session: AsyncSession, mode: str, seq: int) -> set[int]:
    """Keys of the mode's matches applied up to `seq` (those of ended seasons)."""
    return {row[0] for row in (await session.execute(_PAST_MATCHES, {"mode": mode, "seq": seq})).all()}


async def page(session: AsyncSession, season_id: int, after: int, limit: int) -> list[Ranked]:
    rows = await session.execute(_PAGE, {"season_id": season_id, "after": after, "limit": limit})
    return [_ranked(r) for r in rows.all()]


async def standing(
    session: AsyncSession, season_id: int, player_id: str, around: int
) -> tuple[Row, int | None, list[Ranked]] | None:
    """The player's archived row and rank (None when unranked) and the ranked rows around
    them, best first; None when the player was not rated in that season."""
    rows = (
        await session.execute(_STANDING, {"season_id": season_id, "player_id": player_id, "around": around})
    ).all()
    mine = [r for r in rows if r.player_id == player_id]
    if not mine:
        return None
    me = mine[0]
    around_rows = [_ranked(r) for r in rows if r.rank is not None]
    return (
        Row(me.player_id, me.mu, me.sigma, me.conservative, me.matches, me.tier),
        None if me.rank is None else int(me.rank),
        around_rows,
    )
